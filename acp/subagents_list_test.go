package acp

import (
	"context"
	"encoding/json"
	"errors"
	"testing"

	acpsdk "github.com/coder/acp-go-sdk"
)

// fakeCatalog records which view was asked for and answers fixed rows.
type fakeCatalog struct {
	asked string
	err   error
}

func (f *fakeCatalog) ChildRows(_ context.Context, id string) ([]any, error) {
	f.asked = "children:" + id
	return []any{map[string]any{"id": "c1"}}, f.err
}

func (f *fakeCatalog) DescendantRows(_ context.Context, id string) ([]any, error) {
	f.asked = "descendants:" + id
	return []any{map[string]any{"id": "c1", "depth": 1}, map[string]any{"id": "g1", "depth": 2}}, f.err
}

type codedFailure struct{}

func (codedFailure) Error() string     { return "listing was cancelled" }
func (codedFailure) ErrorCode() string { return "CANCELLED" }

func TestSubagentsListExtensionMapsScopesAndErrors(t *testing.T) {
	tests := []struct {
		name      string
		params    string
		catErr    error
		wantAsked string
		wantBody  string
		wantRPC   int
		wantCode  string
	}{
		{name: "default scope is children", params: `{"sessionId":"p"}`, wantAsked: "children:p", wantBody: `{"entries":[{"id":"c1"}]}`},
		{name: "descendants", params: `{"sessionId":"p","scope":"descendants"}`, wantAsked: "descendants:p", wantBody: `{"entries":[{"depth":1,"id":"c1"},{"depth":2,"id":"g1"}]}`},
		{name: "bad json", params: `[]`, wantRPC: -32602, wantCode: string(CodeInvalidParams)},
		{name: "hostile id", params: `{"sessionId":"../x"}`, wantRPC: -32602, wantCode: string(CodeInvalidParams)},
		{name: "unknown scope", params: `{"sessionId":"p","scope":"all"}`, wantRPC: -32602, wantCode: string(CodeInvalidParams)},
		{name: "catalog code kept", params: `{"sessionId":"p"}`, catErr: codedFailure{}, wantAsked: "children:p", wantRPC: -32603, wantCode: "CANCELLED"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			cat := &fakeCatalog{err: tt.catErr}
			res, err := SubagentsListExtension(cat)(t.Context(), json.RawMessage(tt.params))
			if cat.asked != tt.wantAsked {
				t.Errorf("catalog asked %q, want %q", cat.asked, tt.wantAsked)
			}
			if tt.wantRPC == 0 {
				if err != nil {
					t.Fatal(err)
				}
				b, _ := json.Marshal(res)
				if string(b) != tt.wantBody {
					t.Fatalf("result %s, want %s", b, tt.wantBody)
				}
				return
			}
			var re *acpsdk.RequestError
			if !errors.As(toRequestError(err), &re) {
				t.Fatalf("error %v is not mapped to a request error", err)
			}
			data, _ := re.Data.(map[string]any)
			if re.Code != tt.wantRPC || data["code"] != tt.wantCode {
				t.Fatalf("mapped to %d %v, want %d %s", re.Code, data["code"], tt.wantRPC, tt.wantCode)
			}
		})
	}
}
