package cli_test

// In the external test package, so it runs after the package's own tests
// (TestHostileDataDir sets time.Local, which the ACP SDK's goroutines of
// an ended connection may still read).

import (
	"bytes"
	"context"
	"fmt"
	"github.com/acp-agent/acp-agent/internal/syncbuf"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"go.uber.org/goleak"

	"github.com/acp-agent/acp-agent/app/cli"
)

// The first SIGINT cancels the turn (exit 3 through the cancelled stop
// reason); a second one before the run ends exits at once with 3.
func TestExecSecondSIGINTExitsAtOnce(t *testing.T) {
	defer goleak.VerifyNone(t) // runs last: no goroutine of the run outlives the test
	started := make(chan struct{}, 1)
	release := make(chan struct{})
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/event-stream")
		fmt.Fprint(w, "data: {\"id\":\"c1\",\"object\":\"chat.completion.chunk\",\"created\":1,\"model\":\"fake\",\"choices\":[{\"index\":0,\"delta\":{\"role\":\"assistant\",\"content\":\"Working\"},\"finish_reason\":null}]}\n\n")
		w.(http.Flusher).Flush()
		started <- struct{}{}
		select {
		case <-r.Context().Done():
		case <-release:
		}
	}))
	defer srv.Close()
	defer close(release)

	var mu sync.Mutex
	var sigc chan<- os.Signal
	subscribed := make(chan struct{})
	exits := make(chan int, 2)
	process := cli.Process{
		Notify: func(c chan<- os.Signal) { mu.Lock(); sigc = c; mu.Unlock(); close(subscribed) },
		Stop:   func(chan<- os.Signal) {},
		Exit:   func(code int) { exits <- code },
	}

	root := t.TempDir()
	cwd := filepath.Join(root, "work")
	if err := os.MkdirAll(cwd, 0o700); err != nil {
		t.Fatal(err)
	}
	vars := map[string]string{cli.EnvDataDir: filepath.Join(root, "data"), "HOME": root, "XDG_CONFIG_HOME": filepath.Join(root, "config"), "FAKE_KEY": "sk-fake"}
	// The signal goroutine writes stderr while Main does (a real exit
	// would not return): the buffer is locked.
	var out bytes.Buffer
	var errOut syncbuf.Buffer
	done := make(chan int, 1)
	go func() {
		done <- cli.Run(context.Background(), process, []string{"exec", "--cwd", cwd, "--model", "openai-compatible/fake", "--base-url", srv.URL, "--api-key-env", "FAKE_KEY", "Take your time"},
			strings.NewReader(""), &out, &errOut, func(k string) string { return vars[k] })
	}()
	<-subscribed
	<-started
	mu.Lock()
	c := sigc
	mu.Unlock()
	// Both signals are queued before the run can end: the second finds
	// the turn still being cancelled, or the shutdown under way.
	c <- os.Interrupt
	c <- os.Interrupt
	select {
	case code := <-exits:
		if code != cli.ExitRefused {
			t.Fatalf("second SIGINT exit code %d, want %d", code, cli.ExitRefused)
		}
	case code := <-done:
		t.Fatalf("the run ended (exit %d) without the second SIGINT exiting", code)
	case <-time.After(30 * time.Second):
		t.Fatal("the second SIGINT did not exit")
	}
	if code := <-done; code != cli.ExitRefused {
		t.Fatalf("exit %d after the cancel, want %d\n%s", code, cli.ExitRefused, errOut.String())
	}
	if !strings.Contains(errOut.String(), "interrupted again") {
		t.Fatalf("stderr %q does not say the second interrupt exits", errOut.String())
	}
}
