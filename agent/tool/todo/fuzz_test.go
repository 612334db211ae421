package todo_test

import (
	"encoding/json"
	"testing"

	"github.com/acp-agent/acp-agent/agent/tool/todo"
)

// FuzzParse: Parse never panics, and what it accepts is normalized and
// parses again to the same list.
func FuzzParse(f *testing.F) {
	f.Add(`{"todos":[{"content":"a","status":"pending"}]}`)
	f.Add(`{"todos":[{"content":" b ","status":"completed","priority":"low"}]}`)
	f.Add(`{"todos":null}`)
	f.Add(`[]`)
	f.Fuzz(func(t *testing.T, raw string) {
		l, err := todo.Parse(json.RawMessage(raw))
		if err != nil {
			return
		}
		b, _ := json.Marshal(l)
		again, err := todo.Parse(b)
		if err != nil {
			t.Fatalf("normalized list %s does not parse: %v", b, err)
		}
		b2, _ := json.Marshal(again)
		if string(b) != string(b2) {
			t.Fatalf("not stable: %s vs %s", b, b2)
		}
	})
}
