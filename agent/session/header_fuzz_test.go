package session

import (
	"testing"
)

// FuzzParseHeader: ParseHeaderLine never panics on arbitrary bytes, and a
// header it accepts survives a marshal/parse round trip unchanged.
//
// Run: go test ./agent/session -run '^$' -fuzz FuzzParseHeader -fuzztime 60s
func FuzzParseHeader(f *testing.F) {
	for _, h := range []Header{
		{ID: "s1", CreatedAt: 1_700_000_000_000},
		{ID: "c", CreatedAt: 1, Cwd: "/work", ParentSession: "p", SeedLength: 4, Origin: OriginSubagent, DelegationDepth: 2},
	} {
		b, err := MarshalHeaderLine(h)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(b)
	}
	f.Add([]byte(`{"type":"session","version":0,"id":"x","createdAt":1.0,"delegationDepth":0,"sandboxMode":"x"}`))
	f.Add([]byte(`{"type":"session","version":0,"id":"x","createdAt":1e3,"delegationDepth":0,"cwd":""}`))
	f.Add([]byte(`null`))
	f.Add([]byte(`{"type":"session"`))
	f.Fuzz(func(t *testing.T, line []byte) {
		h, err := ParseHeaderLine(line, "")
		if err != nil {
			if _, ok := err.(*HeaderError); !ok {
				t.Fatalf("untyped error %T: %v", err, err)
			}
			return
		}
		b, err := MarshalHeaderLine(h)
		if err != nil {
			t.Fatalf("marshal accepted header %+v: %v", h, err)
		}
		h2, err := ParseHeaderLine(b, h.ID)
		if err != nil {
			t.Fatalf("re-parse of %s: %v", b, err)
		}
		if h2 != h {
			t.Fatalf("round trip changed the header:\n%+v\n%+v", h, h2)
		}
	})
}
