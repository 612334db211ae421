package acp

import (
	"bytes"
	"encoding/json"
	"io"
	"strings"
	"testing"
)

// FuzzAliasReader feeds arbitrary client bytes through the reader in front
// of the SDK: it never panics; a line it does not route comes out byte for
// byte; a routed line keeps its id and params and gets the private name of
// its method; a response to none of our raw calls is passed on.
func FuzzAliasReader(f *testing.F) {
	for _, s := range []string{
		`{"jsonrpc":"2.0","id":1,"method":"session/delete","params":{"sessionId":"a"}}` + "\n",
		`{"jsonrpc":"2.0","id":"x","method":"initialize","params":{"protocolVersion":1}}` + "\n" + `{"jsonrpc":"2.0","method":"session/cancel","params":{}}`,
		`{"jsonrpc":"2.0","id":"acp-agent-call-1","result":{"action":"cancel"}}` + "\n",
		"not json\n\n{}\n",
		`{"jsonrpc":"2.0","id":1.0,"method":"session/new","params":{"cwd":"/","mcpServers":[]}}`,
	} {
		f.Add([]byte(s), uint8(7))
	}
	f.Fuzz(func(t *testing.T, data []byte, chunk uint8) {
		r := newAliasReader(&chunked{data: data, n: int(chunk)%13 + 1}, &rawCalls{})
		out, err := io.ReadAll(r)
		if err != nil {
			t.Fatal(err)
		}
		in := bytes.Split(data, []byte("\n"))
		got := bytes.Split(out, []byte("\n"))
		if len(got) != len(in) {
			t.Fatalf("%d lines in, %d out:\n%q\n%q", len(in), len(got), data, out)
		}
		for i := range in {
			if bytes.Equal(in[i], got[i]) {
				continue
			}
			var a, b struct {
				ID     json.RawMessage `json:"id"`
				Method string          `json:"method"`
				Params json.RawMessage `json:"params"`
			}
			if json.Unmarshal(in[i], &a) != nil || json.Unmarshal(got[i], &b) != nil {
				t.Fatalf("line %d changed: %q -> %q", i, in[i], got[i])
			}
			if !routedMethods[a.Method] || b.Method != aliasPrefix+a.Method || !jsonEqual(a.ID, b.ID) || !jsonEqual(a.Params, b.Params) {
				t.Fatalf("line %d rewritten wrongly: %q -> %q", i, in[i], got[i])
			}
		}
	})
}

func jsonEqual(a, b json.RawMessage) bool {
	var x, y bytes.Buffer
	if len(a) == 0 || len(b) == 0 {
		return len(a) == len(b)
	}
	return json.Compact(&x, a) == nil && json.Compact(&y, b) == nil && x.String() == y.String()
}

// chunked reads data n bytes at a time.
type chunked struct {
	data []byte
	n    int
}

func (c *chunked) Read(p []byte) (int, error) {
	if len(c.data) == 0 {
		return 0, io.EOF
	}
	n := min(c.n, len(p), len(c.data))
	copy(p, c.data[:n])
	c.data = c.data[n:]
	return n, nil
}

// FuzzElicitationRequest: any ask_user arguments either give a request
// whose form names only known property types, or a tool error; never a
// panic.
func FuzzElicitationRequest(f *testing.F) {
	f.Add(`{"question":"q","choices":["a","b"]}`)
	f.Add(`{"question":"q","fields":[{"name":"x","type":"integer","optional":true}]}`)
	f.Add(`{"question":""}`)
	f.Fuzz(func(t *testing.T, raw string) {
		var a askUserArgs
		if json.Unmarshal([]byte(raw), &a) != nil {
			return
		}
		req, err := elicitationRequest(a)
		if err != nil {
			return
		}
		if req.Mode != "form" || strings.TrimSpace(req.Message) == "" || len(req.RequestedSchema.Properties) == 0 {
			t.Fatalf("request %+v from %s", req, raw)
		}
		for _, p := range req.RequestedSchema.Properties {
			switch p.Type {
			case "string", "number", "integer", "boolean":
			default:
				t.Fatalf("property type %q from %s", p.Type, raw)
			}
		}
	})
}
