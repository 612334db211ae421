package acp_test

import (
	"context"
	"encoding/json"
	"io"
	"strings"
	"sync"
	"testing"

	acpsdk "github.com/coder/acp-go-sdk"

	"github.com/acp-agent/acp-agent/agent/model"
	"github.com/acp-agent/acp-agent/app"
	"github.com/acp-agent/acp-agent/internal/testhooks"
)

// fakeEnv is an environment the test changes while the agent runs.
type fakeEnv struct {
	mu sync.Mutex
	m  map[string]string
}

func (f *fakeEnv) get(k string) string {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.m[k]
}

func (f *fakeEnv) set(k, v string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.m[k] = v
}

// serveConfig serves the composition cfg (data dir, logger, version and
// test hooks filled in) like start does.
func serveConfig(t *testing.T, cfg app.Config) *env {
	t.Helper()
	cfg.DataDir = t.TempDir()
	cfg.Version = "test"
	cfg.Logger = testLogger(t)
	if cfg.Testing == nil {
		cfg.Testing = &testhooks.Hooks{NoSync: true, PanicOnBug: true}
	}
	a, err := app.New(cfg)
	if err != nil {
		t.Fatalf("app.New: %v", err)
	}
	c2aR, c2aW := io.Pipe()
	a2cR, a2cW := io.Pipe()
	e := &env{t: t, dir: cfg.DataDir, app: a, rec: newRecorder(), c2aW: c2aW, a2cW: a2cW, done: make(chan error, 1)}
	go func() { e.done <- a.Serve(context.Background(), c2aR, a2cW) }()
	e.cs = acpsdk.NewClientSideConnection(e.rec, c2aW, a2cR)
	t.Cleanup(e.stop)
	return e
}

// keyedProvider is a provider that needs KEY_VAR: without it, it fails as
// the real providers do (model.MissingKeyError); with it, it is the
// scripted model.
func keyedProvider(t *testing.T, getenv func(string) string, script string) app.ProviderFunc {
	m := loadScript(t, script)
	return func(mc app.ModelConfig) (model.Model, error) {
		if getenv("TEST_API_KEY") == "" {
			return nil, &model.MissingKeyError{Provider: "deepseek", EnvVar: "TEST_API_KEY"}
		}
		return m, nil
	}
}

func TestStartWithoutKeyAdvertisesEnvVarAuthAndAuthenticates(t *testing.T) {
	ctx := ctxFor(t)
	fe := &fakeEnv{m: map[string]string{}}
	e := serveConfig(t, app.Config{
		Model:    "deepseek/deepseek-chat",
		Getenv:   fe.get,
		Provider: keyedProvider(t, fe.get, "model:\n  main:\n    - text: \"hello back\"\n"),
	})
	r := e.initialize(ctx)
	raw, _ := json.Marshal(r.AuthMethods)
	want := `[{"description":"Set TEST_API_KEY in the agent's environment (in the editor's agent server settings) and restart the agent; authenticate reads the environment again.","id":"TEST_API_KEY","name":"deepseek API key","type":"env_var","vars":[{"label":"TEST_API_KEY","name":"TEST_API_KEY","secret":true}]}]`
	if string(raw) != want {
		t.Errorf("authMethods =\n%s\nwant\n%s", raw, want)
	}

	// Sessions work without the key; prompts are refused naming it.
	id := e.newSession(ctx, tempCwd(t))
	_, err := e.prompt(ctx, id, "hello")
	wantRPCError(t, err, -32000, "TEST_API_KEY")
	wantErrorCode(t, err, "AUTH_REQUIRED")

	// authenticate reads the environment again: still missing, then set.
	_, err = e.cs.Authenticate(ctx, acpsdk.AuthenticateRequest{MethodId: "TEST_API_KEY"})
	wantRPCError(t, err, -32000, "TEST_API_KEY")
	_, err = e.cs.Authenticate(ctx, acpsdk.AuthenticateRequest{MethodId: "NOPE"})
	wantRPCError(t, err, -32602, "unknown auth method")
	fe.set("TEST_API_KEY", "sk-test")
	if _, err := e.cs.Authenticate(ctx, acpsdk.AuthenticateRequest{MethodId: "TEST_API_KEY"}); err != nil {
		t.Fatalf("authenticate with the key set: %v", err)
	}
	resp, err := e.prompt(ctx, id, "hello")
	if err != nil || resp.StopReason != acpsdk.StopReasonEndTurn {
		t.Fatalf("prompt after authenticate = %+v, %v", resp, err)
	}
	if got := strings.Join(transcript(e.rec.snapshot(id)), "\n"); !strings.Contains(got, "hello back") {
		t.Errorf("updates after authenticate:\n%s", got)
	}
}

func TestAuthenticateWithoutAuthMethodsIsMethodNotFound(t *testing.T) {
	ctx := ctxFor(t)
	e := start(t, t.TempDir(), loadScript(t, echoScript))
	if r := e.initialize(ctx); r.AuthMethods == nil || len(r.AuthMethods) != 0 {
		t.Errorf("authMethods = %#v, want []", r.AuthMethods)
	}
	_, err := e.cs.Authenticate(ctx, acpsdk.AuthenticateRequest{MethodId: "x"})
	wantRPCError(t, err, -32601, "")
}

// wantErrorCode checks the data.code of a JSON-RPC error.
func wantErrorCode(t *testing.T, err error, code string) {
	t.Helper()
	re, ok := err.(*acpsdk.RequestError)
	if !ok {
		t.Fatalf("error %T, want *acpsdk.RequestError", err)
	}
	raw, _ := json.Marshal(re.Data)
	var d struct{ Code string }
	_ = json.Unmarshal(raw, &d)
	if d.Code != code {
		t.Errorf("error data = %s, want code %s", raw, code)
	}
}
