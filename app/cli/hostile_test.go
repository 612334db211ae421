package cli

import (
	"bytes"
	"context"
	"github.com/acp-agent/acp-agent/app/storetest"
	"net"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/acp-agent/acp-agent/agent/session"
)

// writeLog writes a session file holding only the header of h.
func writeLog(t *testing.T, dir string, h session.Header) { storetest.WriteLog(t, dir, h) }

func writeRaw(t *testing.T, dir, name string, data []byte) { storetest.WriteRaw(t, dir, name, data) }

// TestHostileDataDir: every kind of junk in place of a session log is a
// row of `acp-agent sessions` saying what is wrong, nothing blocks on a
// special file, parent loops are shown as corrupt and never walked, and
// temp files left by a crash are removed when the store opens.
func TestHostileDataDir(t *testing.T) {
	local := time.Local
	time.Local = time.UTC // humanTime prints local time
	t.Cleanup(func() { time.Local = local })
	const when = "2026-01-02 03:04:05"
	mtime, _ := time.Parse(time.DateTime, when)
	good := session.Header{ID: "good", CreatedAt: mtime.UnixMilli(), Cwd: "/w"}

	tests := []struct {
		name  string
		setup func(t *testing.T, sdir string) // junk named "bad" unless said otherwise
		args  []string                        // extra command; default "sessions"
		want  string
		gone  []string // file names that must not exist afterwards
		kept  []string // file names that must still exist
	}{
		{name: "fifo", setup: func(t *testing.T, sdir string) {
			if err := syscall.Mkfifo(filepath.Join(sdir, "bad.jsonl"), 0o600); err != nil {
				t.Fatal(err)
			}
		}, want: "" +
			"ID    TITLE         CREATED              UPDATED              PARENT  PROBLEM\n" +
			"bad   (unreadable)  -                    2026-01-02 03:04:05  -       named pipe, not a session file\n" +
			"good                2026-01-02 03:04:05  2026-01-02 03:04:05  -\n" +
			"(for the whole reason: acp-agent sessions show ID; to repair a log: acp-agent sessions repair ID)\n"},
		{name: "socket", setup: func(t *testing.T, sdir string) {
			l, err := net.Listen("unix", filepath.Join(sdir, "bad.jsonl"))
			if err != nil {
				t.Skipf("no unix socket here: %v", err)
			}
			t.Cleanup(func() { l.Close() })
		}, want: "" +
			"ID    TITLE         CREATED              UPDATED              PARENT  PROBLEM\n" +
			"bad   (unreadable)  -                    2026-01-02 03:04:05  -       socket, not a session file\n" +
			"good                2026-01-02 03:04:05  2026-01-02 03:04:05  -\n" +
			"(for the whole reason: acp-agent sessions show ID; to repair a log: acp-agent sessions repair ID)\n"},
		{name: "device", setup: func(t *testing.T, sdir string) {
			if err := syscall.Mknod(filepath.Join(sdir, "bad.jsonl"), syscall.S_IFCHR|0o600, 1<<8|5); err != nil {
				t.Skipf("cannot make a device here: %v", err)
			}
		}, want: "" +
			"ID    TITLE         CREATED              UPDATED              PARENT  PROBLEM\n" +
			"bad   (unreadable)  -                    2026-01-02 03:04:05  -       device, not a session file\n" +
			"good                2026-01-02 03:04:05  2026-01-02 03:04:05  -\n" +
			"(for the whole reason: acp-agent sessions show ID; to repair a log: acp-agent sessions repair ID)\n"},
		{name: "symlink to a session outside", setup: func(t *testing.T, sdir string) {
			outside := t.TempDir()
			writeLog(t, outside, session.Header{ID: "bad", CreatedAt: mtime.UnixMilli(), Cwd: "/elsewhere"})
			if err := os.Symlink(filepath.Join(outside, "bad.jsonl"), filepath.Join(sdir, "bad.jsonl")); err != nil {
				t.Fatal(err)
			}
		}, want: "" +
			"ID    TITLE         CREATED              UPDATED              PARENT  PROBLEM\n" +
			"bad   (unreadable)  -                    LINKTIME  -       symlink\n" +
			"good                2026-01-02 03:04:05  2026-01-02 03:04:05  -\n" +
			"(for the whole reason: acp-agent sessions show ID; to repair a log: acp-agent sessions repair ID)\n"},
		{name: "directory", setup: func(t *testing.T, sdir string) {
			if err := os.Mkdir(filepath.Join(sdir, "bad.jsonl"), 0o700); err != nil {
				t.Fatal(err)
			}
		}, want: "" +
			"ID    TITLE         CREATED              UPDATED              PARENT  PROBLEM\n" +
			"bad   (unreadable)  -                    2026-01-02 03:04:05  -       directory, not a session file\n" +
			"good                2026-01-02 03:04:05  2026-01-02 03:04:05  -\n" +
			"(for the whole reason: acp-agent sessions show ID; to repair a log: acp-agent sessions repair ID)\n"},
		{name: "zero bytes", setup: func(t *testing.T, sdir string) {
			writeRaw(t, sdir, "bad.jsonl", nil)
		}, want: "" +
			"ID    TITLE         CREATED              UPDATED              PARENT  PROBLEM\n" +
			"bad   (unreadable)  -                    2026-01-02 03:04:05  -       empty file, no header\n" +
			"good                2026-01-02 03:04:05  2026-01-02 03:04:05  -\n" +
			"(for the whole reason: acp-agent sessions show ID; to repair a log: acp-agent sessions repair ID)\n"},
		{name: "bad header", setup: func(t *testing.T, sdir string) {
			writeRaw(t, sdir, "bad.jsonl", []byte(`{"type":"session","version":0,"id":"bad"}`+"\n"))
		}, want: "" +
			"ID    TITLE         CREATED              UPDATED              PARENT  PROBLEM\n" +
			"bad   (unreadable)  -                    2026-01-02 03:04:05  -       bad header: session header is missing \"…\n" +
			"good                2026-01-02 03:04:05  2026-01-02 03:04:05  -\n" +
			"(for the whole reason: acp-agent sessions show ID; to repair a log: acp-agent sessions repair ID)\n"},
		{name: "no header line", setup: func(t *testing.T, sdir string) {
			writeRaw(t, sdir, "bad.jsonl", []byte(`{"type":"session"`))
		}, want: "" +
			"ID    TITLE         CREATED              UPDATED              PARENT  PROBLEM\n" +
			"bad   (unreadable)  -                    2026-01-02 03:04:05  -       no complete header line\n" +
			"good                2026-01-02 03:04:05  2026-01-02 03:04:05  -\n" +
			"(for the whole reason: acp-agent sessions show ID; to repair a log: acp-agent sessions repair ID)\n"},
		{name: "self-parent", setup: func(t *testing.T, sdir string) {
			writeLog(t, sdir, session.Header{ID: "bad", CreatedAt: mtime.UnixMilli(), ParentSession: "bad", Origin: session.OriginSubagent, DelegationDepth: 1})
		}, want: "" +
			"ID    TITLE                                  CREATED              UPDATED              PARENT\n" +
			"bad   (corrupt: names itself as its parent)  2026-01-02 03:04:05  2026-01-02 03:04:05  bad\n" +
			"good                                         2026-01-02 03:04:05  2026-01-02 03:04:05  -\n"},
		{name: "self-parent agents", setup: func(t *testing.T, sdir string) {
			writeLog(t, sdir, session.Header{ID: "bad", CreatedAt: mtime.UnixMilli(), ParentSession: "bad", Origin: session.OriginSubagent, DelegationDepth: 1})
		}, args: []string{"agents", "--descendants", "bad"}, want: "bad\n  (no subagents)\n"},
		{name: "2-cycle", setup: func(t *testing.T, sdir string) {
			writeLog(t, sdir, session.Header{ID: "bad", CreatedAt: mtime.UnixMilli(), ParentSession: "cyc", Origin: session.OriginSubagent, DelegationDepth: 1})
			writeLog(t, sdir, session.Header{ID: "cyc", CreatedAt: mtime.UnixMilli(), ParentSession: "bad", Origin: session.OriginSubagent, DelegationDepth: 1})
		}, want: "" +
			"ID    TITLE                                    CREATED              UPDATED              PARENT\n" +
			"bad   (corrupt: parent cycle bad → cyc → bad)  2026-01-02 03:04:05  2026-01-02 03:04:05  cyc\n" +
			"cyc   (corrupt: parent cycle bad → cyc → bad)  2026-01-02 03:04:05  2026-01-02 03:04:05  bad\n" +
			"good                                           2026-01-02 03:04:05  2026-01-02 03:04:05  -\n"},
		{name: "2-cycle agents", setup: func(t *testing.T, sdir string) {
			writeLog(t, sdir, session.Header{ID: "bad", CreatedAt: mtime.UnixMilli(), ParentSession: "cyc", Origin: session.OriginSubagent, DelegationDepth: 1})
			writeLog(t, sdir, session.Header{ID: "cyc", CreatedAt: mtime.UnixMilli(), ParentSession: "bad", Origin: session.OriginSubagent, DelegationDepth: 1})
		}, args: []string{"agents", "--descendants", "bad"}, want: "bad\n  └─ cyc [diagnostic: corrupt]\n"},
		{name: "leftover tmp", setup: func(t *testing.T, sdir string) {
			writeRaw(t, sdir, ".good.0123456789abcdef.tmp", []byte("half a header"))
		}, want: "" +
			"ID    TITLE  CREATED              UPDATED              PARENT\n" +
			"good         2026-01-02 03:04:05  2026-01-02 03:04:05  -\n",
			gone: []string{".good.0123456789abcdef.tmp"}, kept: []string{"good.jsonl"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dir := t.TempDir()
			sdir := filepath.Join(dir, "sessions")
			if err := os.MkdirAll(sdir, 0o700); err != nil {
				t.Fatal(err)
			}
			writeLog(t, sdir, good)
			tt.setup(t, sdir)
			ents, err := os.ReadDir(sdir)
			if err != nil {
				t.Fatal(err)
			}
			for _, e := range ents {
				// Lchtimes is not portable; set the target's times (a
				// symlink to a device keeps the device's own).
				p := filepath.Join(sdir, e.Name())
				if e.Type()&os.ModeSymlink != 0 {
					continue
				}
				if err := os.Chtimes(p, mtime, mtime); err != nil {
					t.Fatal(err)
				}
			}
			args := tt.args
			if args == nil {
				args = []string{"sessions"}
			}
			ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
			defer cancel()
			var out, errOut bytes.Buffer
			done := make(chan int, 1)
			go func() {
				done <- Main(ctx, append([]string{"--data-dir", dir}, args...), strings.NewReader(""), &out, &errOut, noEnv)
			}()
			var code int
			select {
			case code = <-done:
			case <-time.After(10 * time.Second):
				t.Fatal("command blocked on the data directory") // leaks the goroutine, but the test fails
			}
			if code != ExitOK {
				t.Fatalf("exit %d: %s", code, errOut.String())
			}
			want := tt.want
			if st, err := os.Lstat(filepath.Join(sdir, "bad.jsonl")); err == nil {
				// A symlink keeps its own modification time.
				want = strings.ReplaceAll(want, "LINKTIME", humanTime(st.ModTime().UnixMilli()))
			}
			if got := out.String(); got != want {
				t.Errorf("output\n%s\nwant\n%s", got, want)
			}
			for _, name := range tt.gone {
				if _, err := os.Lstat(filepath.Join(sdir, name)); !os.IsNotExist(err) {
					t.Errorf("%s still exists (err %v)", name, err)
				}
			}
			for _, name := range tt.kept {
				if _, err := os.Lstat(filepath.Join(sdir, name)); err != nil {
					t.Errorf("%s: %v", name, err)
				}
			}
		})
	}
}
