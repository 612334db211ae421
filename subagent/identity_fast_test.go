package subagent

import (
	"encoding/json"
	"reflect"
	"testing"
)

// FuzzCanonicalIdentity checks that the fast path, whenever it answers,
// answers as encoding/json does.
//
// Run: go test ./subagent -run '^$' -fuzz FuzzCanonicalIdentity -fuzztime 30s
func FuzzCanonicalIdentity(f *testing.F) {
	for _, id := range []Identity{
		{Mode: ModeContinuable, Label: "alpha", Seq: 0},
		{Mode: ModeContinuable, Label: "", Seq: 12},
		{Mode: ModeOneShot, Seq: 3},
		{Mode: ModeOneShot, Label: "héllo <b> & \"q\"", Seq: 123456789},
	} {
		b, _ := json.Marshal(id)
		f.Add(b)
	}
	for _, s := range []string{
		`{"mode":"continuable","seq":1}`, `{"mode":"continuable","label":"a","seq":01}`,
		`{"mode":"continuable","label":"a","seq":1} `, `{"mode":"continuable","label":"a\x01","seq":1}`,
		`{"mode":"continuable","label":"` + "\xff" + `","seq":1}`, `{"mode":"one-shot","seq":9999999999999999999}`,
		`{"mode":"one-shot","seq":-1}`, `{"mode":"one-shot","seq":}`,
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, raw []byte) {
		fast := decodeCanonicalIdentity(raw)
		if fast == nil {
			return
		}
		slow, err := decodeIdentityJSON(raw)
		if err != nil || !reflect.DeepEqual(fast, slow) {
			t.Fatalf("%q: fast %+v, encoding/json %+v, %v", raw, fast, slow, err)
		}
	})
}

func TestCanonicalIdentityCoversMarshalJSON(t *testing.T) {
	for _, id := range []Identity{{Mode: ModeContinuable, Label: "plain label", Seq: 7}, {Mode: ModeOneShot, Seq: 0}} {
		b, _ := json.Marshal(id)
		if got := decodeCanonicalIdentity(b); got == nil || *got != id {
			t.Fatalf("%s: fast path gave %+v", b, got)
		}
	}
}
