package subagent

import (
	"encoding/json"
	"reflect"
	"testing"
)

// decodeIdentitySlow is DecodeIdentity without its canonical fast path.
func decodeIdentitySlow(raw []byte) (*Identity, error) {
	var w struct {
		Mode  *string `json:"mode"`
		Label *string `json:"label"`
		Seq   *int64  `json:"seq"`
	}
	if err := json.Unmarshal(raw, &w); err != nil {
		return nil, errBadIdentity
	}
	if w.Mode == nil || w.Seq == nil || (Mode(*w.Mode) != ModeOneShot && Mode(*w.Mode) != ModeContinuable) {
		return nil, errBadIdentity
	}
	if Mode(*w.Mode) == ModeContinuable && w.Label == nil {
		return nil, errBadIdentity
	}
	id := &Identity{Mode: Mode(*w.Mode), Seq: *w.Seq}
	if w.Label != nil {
		id.Label = *w.Label
	}
	return id, nil
}

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
		slow, err := decodeIdentitySlow(raw)
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
