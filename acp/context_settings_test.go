package acp_test

import (
	"context"
	"io"
	"path/filepath"
	"testing"

	acpsdk "github.com/coder/acp-go-sdk"

	"github.com/acp-agent/acp-agent/app"
	"github.com/acp-agent/acp-agent/internal/testhooks"
)

// TestContextWindowFromSettingsFile: the user settings file's
// context.window is the size usage_update reports; --context-window wins
// over it.
func TestContextWindowFromSettingsFile(t *testing.T) {
	for _, tt := range []struct {
		name     string
		flag     int
		wantSize int
	}{{"settings file", 0, 16000}, {"flag wins", 9000, 9000}} {
		t.Run(tt.name, func(t *testing.T) {
			ctx := ctxFor(t)
			dir, cwd := t.TempDir(), tempCwd(t)
			user := filepath.Join(dir, "settings.json")
			writeFile(t, user, `{"context": {"window": 16000}}`)
			a, err := app.New(app.Config{
				DataDir: filepath.Join(dir, "data"), Version: "test", Logger: testLogger(t), SettingsFile: user, ContextWindow: tt.flag,
				Testing: &testhooks.Hooks{Model: loadScript(t, usageScript), NoSync: true, PanicOnBug: true},
			})
			if err != nil {
				t.Fatal(err)
			}
			c2aR, c2aW := io.Pipe()
			a2cR, a2cW := io.Pipe()
			e := &env{t: t, dir: dir, app: a, rec: newRecorder(), c2aW: c2aW, a2cW: a2cW, done: make(chan error, 1)}
			go func() { e.done <- a.Serve(context.Background(), c2aR, a2cW) }()
			e.cs = acpsdk.NewClientSideConnection(e.rec, c2aW, a2cR)
			t.Cleanup(e.stop)
			e.initialize(ctx)
			id := e.newSession(ctx, cwd)
			if _, err := e.prompt(ctx, id, "hello"); err != nil {
				t.Fatal(err)
			}
			if us := usages(e.rec.snapshot(id)); len(us) != 1 || us[0].Size != tt.wantSize || us[0].Used != 6020 {
				t.Fatalf("usage updates = %+v, want 6020 of %d", us, tt.wantSize)
			}
		})
	}
}
