package acp_test

import (
	"context"
	"iter"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"sync"
	"testing"

	acpsdk "github.com/coder/acp-go-sdk"

	"github.com/acp-agent/acp-agent/agent/model"
	"github.com/acp-agent/acp-agent/agent/session"
)

// seeingModel records each request and, when images is set, says it
// takes image input (a fake at the model boundary around the scripted
// model).
type seeingModel struct {
	inner  model.Model
	images bool
	mu     sync.Mutex
	reqs   []model.Request
}

func (m *seeingModel) Stream(ctx context.Context, req model.Request) iter.Seq2[session.Chunk, error] {
	m.mu.Lock()
	m.reqs = append(m.reqs, req)
	m.mu.Unlock()
	return m.inner.Stream(ctx, req)
}

func (m *seeingModel) AcceptsImages() bool { return m.images }

func (m *seeingModel) requests() []model.Request {
	m.mu.Lock()
	defer m.mu.Unlock()
	return append([]model.Request(nil), m.reqs...)
}

const okScript = "model:\n  main:\n    - text: seen\n    - text: seen again\n"

// TestPromptContentReachesModel: a resource link to a file arrives with
// the file's numbered lines (read through the session's Files), an
// embedded selection keeps its line range and an image arrives as an
// image part, when the model takes images; initialize says so.
func TestPromptContentReachesModel(t *testing.T) {
	ctx := ctxFor(t)
	m := &seeingModel{inner: loadScript(t, okScript), images: true}
	e := start(t, t.TempDir(), m)
	if r := e.initialize(ctx); !r.AgentCapabilities.PromptCapabilities.Image {
		t.Fatal("promptCapabilities.image is false for a model that takes images")
	}
	cwd := tempCwd(t)
	file := filepath.Join(cwd, "main.go")
	if err := os.WriteFile(file, []byte("package main\n\nfunc main() {}\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	id := e.newSession(ctx, cwd)
	sel := "file://" + file + "#L3-3"
	prompt := []acpsdk.ContentBlock{
		acpsdk.TextBlock("explain these"),
		acpsdk.ResourceLinkBlock("main.go", "file://"+file),
		acpsdk.ResourceBlock(acpsdk.EmbeddedResourceResource{TextResourceContents: &acpsdk.TextResourceContents{Uri: sel, Text: "func main() {}"}}),
		acpsdk.ImageBlock("iVBORw0KGgo=", "image/png"),
		acpsdk.ResourceLinkBlock("gone.go", "file://"+filepath.Join(cwd, "gone.go")),
	}
	if _, err := e.cs.Prompt(ctx, acpsdk.PromptRequest{SessionId: acpsdk.SessionId(id), Prompt: prompt}); err != nil {
		t.Fatalf("prompt: %v", err)
	}
	reqs := m.requests()
	if len(reqs) != 1 || len(reqs[0].Messages) != 1 {
		t.Fatalf("requests %+v", reqs)
	}
	got := reqs[0].Messages[0].Content
	want := []session.Block{
		session.Text("explain these"),
		{Type: session.BlockResourceLink, URI: "file://" + file, Name: "main.go", Text: "     1\tpackage main\n     2\t\n     3\tfunc main() {}\n"},
		{Type: session.BlockResource, URI: sel, Text: "func main() {}", StartLine: 3, EndLine: 3},
		{Type: session.BlockImage, MimeType: "image/png", Data: "iVBORw0KGgo="},
		{Type: session.BlockResourceLink, URI: "file://" + filepath.Join(cwd, "gone.go"), Name: "gone.go"},
	}
	last := got[len(got)-1]
	if last.Text == "" || !reflect.DeepEqual(got[:4], want[:4]) {
		t.Errorf("model saw:\n%+v\nwant:\n%+v", got, want)
	}
	if !strings.HasPrefix(last.Text, "[The agent could not read this file:") {
		t.Errorf("unreadable link note %q", last.Text)
	}
}

// TestImageRefusedWithoutImageInput: a model without image input gets no
// image: the prompt is refused with a clear error and initialize does not
// advertise images.
func TestImageRefusedWithoutImageInput(t *testing.T) {
	ctx := ctxFor(t)
	m := &seeingModel{inner: loadScript(t, okScript)}
	e := start(t, t.TempDir(), m)
	if r := e.initialize(ctx); r.AgentCapabilities.PromptCapabilities.Image {
		t.Fatal("promptCapabilities.image is true without a model that takes images")
	}
	id := e.newSession(ctx, tempCwd(t))
	_, err := e.cs.Prompt(ctx, acpsdk.PromptRequest{SessionId: acpsdk.SessionId(id), Prompt: []acpsdk.ContentBlock{acpsdk.TextBlock("look"), acpsdk.ImageBlock("AAAA", "image/png")}})
	wantRPCError(t, err, -32602, "the session's model does not take image input")
	_, err = e.cs.Prompt(ctx, acpsdk.PromptRequest{SessionId: acpsdk.SessionId(id), Prompt: []acpsdk.ContentBlock{acpsdk.AudioBlock("AAAA", "audio/wav")}})
	wantRPCError(t, err, -32602, "audio content is not supported")
	if n := len(m.requests()); n != 0 {
		t.Fatalf("the model was called %d times", n)
	}
}
