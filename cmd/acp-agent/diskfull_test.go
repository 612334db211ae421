package main

// The disk-full test: a long answer streams onto a disk that fills (an
// ENOSPC injected at persistence's write seam, always; a real full tmpfs
// where the test may mount one); the prompt must end with the write error,
// cancel and close must still work, SIGTERM must say what was not saved,
// and after space is freed a new process must replay every chunk the
// client saw.

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/acp-agent/acp-agent/agent/model"
	"github.com/acp-agent/acp-agent/app"
	"github.com/acp-agent/acp-agent/app/cli"
	"github.com/acp-agent/acp-agent/internal/testhooks"
	"github.com/acp-agent/acp-agent/persistence"
)

// diskFullEnv names a file: while it exists, diskfull-serve's storage
// writes fail with ENOSPC (the disk is "full"); removing it frees space.
const diskFullEnv = "ACP_AGENT_TEST_DISK_FULL_FLAG"

// diskFullServeCommand is "acp-agent diskfull-serve": the ACP server with
// ENOSPC injected at the write seam while $ACP_AGENT_TEST_DISK_FULL_FLAG
// exists, and chunks paced like a real provider. Only the test binary has
// it.
func diskFullServeCommand() cli.Command {
	return cli.Command{
		Name:    "diskfull-serve",
		Usage:   "diskfull-serve",
		Summary: "serve ACP with writes failing (ENOSPC) while $" + diskFullEnv + " exists (tests only)",
		Run: func(ctx context.Context, env *cli.Env, args []string) error {
			flag := env.Getenv(diskFullEnv)
			a, err := app.New(app.Config{
				DataDir: env.Flags.DataDir,
				Model:   env.Flags.Model,
				Version: "diskfull-test",
				Logger:  env.Logger,
				Getenv:  env.Getenv,
				Testing: &testhooks.Hooks{
					WrapModel: func(m model.Model) model.Model { return pacedModel{m, 2 * time.Millisecond} },
					StorageFaultErr: func(p persistence.FaultPoint) error {
						if p != persistence.FaultWrite || flag == "" {
							return nil
						}
						if _, err := os.Stat(flag); err == nil {
							return syscall.ENOSPC
						}
						return nil
					},
				},
			})
			if err != nil {
				return err
			}
			return errors.Join(a.Run(ctx, env.Stdin, env.Stdout), a.Close())
		},
	}
}

// longAnswerScript is one reply of n distinct words.
func longAnswerScript(n int) string {
	var text strings.Builder
	for i := range n {
		fmt.Fprintf(&text, "word%d ", i)
	}
	return fmt.Sprintf("model:\n  main:\n    - text: %q\n", text.String())
}

// diskFull fills and frees the disk of one run.
type diskFull struct {
	fill, free func(t *testing.T)
}

// runOntoFullDisk streams the long answer, fills the disk once some of it
// was shown, and then does what end says (close or SIGTERM). It returns
// the session id and the text the client was shown.
func runOntoFullDisk(t *testing.T, p *proc, data string, d diskFull, end string) (string, string) {
	t.Helper()
	var init map[string]any
	p.call(t, "initialize", map[string]any{"protocolVersion": 1}, &init)
	id := p.newSession(t, data)
	out := p.promptAsync(id, "Explain at length.")
	p.awaitUpdate(t, func(u update) bool { return u.Kind == "agent_message_chunk" && strings.Contains(u.Text(), "word20 ") })
	d.fill(t)
	var o promptOutcome
	select {
	case o = <-out:
	case <-time.After(20 * time.Second):
		t.Fatalf("the prompt did not end after the disk filled\nstderr:\n%s", p.stderr)
	}
	if o.err == nil || !strings.Contains(o.err.Error(), "no space left on device") || !strings.Contains(o.err.Error(), filepath.Join(data, "sessions", id+".jsonl")) {
		t.Fatalf("prompt on a full disk: stop %q, error %v; want an error naming ENOSPC and the log's path", o.StopReason, o.err)
	}
	p.cancel(t, id) // must not hang or break anything
	p.mu.Lock()
	shown, _ := streamedOf(p.updates, id)
	p.mu.Unlock()
	if strings.Contains(shown, "word2999 ") {
		t.Fatalf("the whole answer was shown onto a full disk")
	}
	switch end {
	case "close":
		var res map[string]any
		p.call(t, "session/close", map[string]any{"sessionId": id}, &res)
		p.stdin.Close()
		p.waitExit(t, 20*time.Second)
	case "sigterm":
		p.cmd.Process.Signal(syscall.SIGTERM)
		p.waitExit(t, 20*time.Second)
		if !strings.Contains(p.stderr.String(), "events not saved") || !strings.Contains(p.stderr.String(), id) {
			t.Errorf("SIGTERM on a full disk does not say what was not saved:\n%s", p.stderr)
		}
	}
	d.free(t)
	return id, shown
}

// requireReplayed loads id in a fresh process and checks shown is a prefix
// of the replayed text.
func requireReplayed(t *testing.T, data, script, id, shown string) {
	t.Helper()
	p := startProc(t, "--data-dir", data, "--model", "script:"+script)
	var init, loaded map[string]any
	p.call(t, "initialize", map[string]any{"protocolVersion": 1}, &init)
	p.call(t, "session/load", map[string]any{"sessionId": id, "cwd": data, "mcpServers": []any{}}, &loaded)
	p.mu.Lock()
	text, _ := streamedOf(p.updates, id)
	p.mu.Unlock()
	if !strings.HasPrefix(text, shown) || shown == "" {
		t.Errorf("shown text (%d bytes, ends %q) is not in the replay (%d bytes, ends %q)", len(shown), tail(shown), len(text), tail(text))
	}
	t.Logf("shown %d bytes, replayed %d", len(shown), len(text))
	if code, verdict := p.finish(t); code != 0 || verdict != nil {
		t.Errorf("exit %d (%v)\nstderr:\n%s", code, verdict, p.stderr)
	}
}

// TestDiskFullInjected: ENOSPC at the write seam, then close or SIGTERM.
func TestDiskFullInjected(t *testing.T) {
	dir := t.TempDir()
	script := filepath.Join(dir, "script.yaml")
	if err := os.WriteFile(script, []byte(longAnswerScript(3000)), 0o600); err != nil {
		t.Fatal(err)
	}
	for _, end := range []string{"close", "sigterm"} {
		t.Run(end, func(t *testing.T) {
			data := filepath.Join(dir, end)
			flag := filepath.Join(dir, end+".full")
			d := diskFull{
				fill: func(t *testing.T) { writeBytesFile(t, flag) },
				free: func(t *testing.T) { os.Remove(flag) },
			}
			p := startProcEnv(t, []string{diskFullEnv + "=" + flag}, "--data-dir", data, "--model", "script:"+script, "diskfull-serve")
			id, shown := runOntoFullDisk(t, p, data, d, end)
			requireReplayed(t, data, script, id, shown)
		})
	}
}

// TestDiskFullTmpfs: the data directory on a small tmpfs filled by a
// filler file; needs the right to mount (root).
func TestDiskFullTmpfs(t *testing.T) {
	if testing.Short() {
		t.Skip("mounts a tmpfs")
	}
	dir := t.TempDir()
	script := filepath.Join(dir, "script.yaml")
	if err := os.WriteFile(script, []byte(longAnswerScript(3000)), 0o600); err != nil {
		t.Fatal(err)
	}
	for _, end := range []string{"close", "sigterm"} {
		t.Run(end, func(t *testing.T) {
			mnt := filepath.Join(dir, "mnt-"+end)
			if err := os.Mkdir(mnt, 0o700); err != nil {
				t.Fatal(err)
			}
			if out, err := exec.Command("mount", "-t", "tmpfs", "-o", "size=4m", "tmpfs", mnt).CombinedOutput(); err != nil {
				t.Skipf("cannot mount a tmpfs here (needs root): %v %s", err, out)
			}
			t.Cleanup(func() { exec.Command("umount", "-l", mnt).Run() })
			data := filepath.Join(mnt, "data")
			filler := filepath.Join(mnt, "filler")
			d := diskFull{
				fill: func(t *testing.T) { fillDisk(t, filler) },
				free: func(t *testing.T) {
					if err := os.Remove(filler); err != nil {
						t.Fatal(err)
					}
				},
			}
			p := startProc(t, "--data-dir", data, "--model", "script:"+script, "diskfull-serve")
			id, shown := runOntoFullDisk(t, p, data, d, end)
			requireReplayed(t, data, script, id, shown)
		})
	}
}

func writeBytesFile(t *testing.T, path string) {
	t.Helper()
	if err := os.WriteFile(path, nil, 0o600); err != nil {
		t.Fatal(err)
	}
}

// fillDisk writes path until its filesystem has no space left.
func fillDisk(t *testing.T, path string) {
	t.Helper()
	f, err := os.Create(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	buf := make([]byte, 4096)
	for {
		if _, err := f.Write(buf); err != nil {
			if !errors.Is(err, syscall.ENOSPC) {
				t.Fatal(err)
			}
			return
		}
	}
}
