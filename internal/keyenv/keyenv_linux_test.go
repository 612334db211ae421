package keyenv

import (
	"bufio"
	"bytes"
	"fmt"
	"io"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"testing"
)

// helperEnv makes the test binary the process under test (TestMain).
const helperEnv = "KEYENV_TEST_HELPER"

const secret = "sk-test-0123456789abcdef-not-a-real-key"

func TestMain(m *testing.M) {
	if os.Getenv(helperEnv) == "1" {
		helper()
		return
	}
	os.Exit(m.Run())
}

// helper hides TEST_PROVIDER_KEY, says what its readers see, and waits
// for stdin to close, so the test can read its /proc/PID/environ.
func helper() {
	getenv, err := Hide([]string{"TEST_PROVIDER_KEY", "UNSET_KEY", "OTHER_KEY"}, func(n string) string {
		if n == "OTHER_KEY" {
			return "the caller's own value"
		}
		return os.Getenv(n)
	})
	fmt.Printf("err=%v\nhidden=%s\nos=%s\nother=%s\nosother=%s\nplain=%s\n",
		err, getenv("TEST_PROVIDER_KEY"), os.Getenv("TEST_PROVIDER_KEY"), getenv("OTHER_KEY"), os.Getenv("OTHER_KEY"), getenv("PLAIN"))
	io.Copy(io.Discard, os.Stdin)
}

// The key is gone from /proc/PID/environ and from the process's own
// environment, and the getenv Hide returns still gives it; variables not
// named, and a name the caller's getenv answers itself, are untouched.
func TestHideTakesTheKeyOutOfProcEnviron(t *testing.T) {
	cmd := exec.Command(os.Args[0], "-test.run", "^$")
	cmd.Env = append(os.Environ(), helperEnv+"=1", "TEST_PROVIDER_KEY="+secret, "OTHER_KEY=other-secret-value", "PLAIN=plain value")
	stdin, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() { stdin.Close(); cmd.Wait() }()
	seen := map[string]string{}
	sc := bufio.NewScanner(out)
	for len(seen) < 6 && sc.Scan() {
		k, v, _ := strings.Cut(sc.Text(), "=")
		seen[k] = v
	}
	want := map[string]string{"err": "<nil>", "hidden": secret, "os": "", "other": "the caller's own value", "osother": "other-secret-value", "plain": "plain value"}
	for k, w := range want {
		if seen[k] != w {
			t.Errorf("%s = %q, want %q", k, seen[k], w)
		}
	}
	environ, err := os.ReadFile("/proc/" + strconv.Itoa(cmd.Process.Pid) + "/environ")
	if err != nil {
		t.Fatal(err)
	}
	if bytes.Contains(environ, []byte(secret)) || bytes.Contains(environ, []byte(secret[:12])) {
		t.Fatalf("/proc/PID/environ still holds the key")
	}
	for _, keep := range []string{"OTHER_KEY=other-secret-value", "PLAIN=plain value"} {
		if !bytes.Contains(environ, []byte(keep)) {
			t.Errorf("/proc/PID/environ lost %q", keep)
		}
	}
}

// The bounds name the block /proc/self/environ shows.
func TestEnvBounds(t *testing.T) {
	start, end, err := envBounds()
	if err != nil {
		t.Fatal(err)
	}
	mem, err := os.Open("/proc/self/mem")
	if err != nil {
		t.Fatal(err)
	}
	defer mem.Close()
	block := make([]byte, end-start)
	if _, err := mem.ReadAt(block, start); err != nil {
		t.Fatal(err)
	}
	environ, err := os.ReadFile("/proc/self/environ")
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(block, environ) {
		t.Fatalf("the block at %d..%d (%d bytes) is not /proc/self/environ (%d bytes)", start, end, len(block), len(environ))
	}
}
