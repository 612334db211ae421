package cli_test

// Tests of what exec --record copies into the scenario it writes, and
// what it never copies: the snapshot is taken at the tool layer (a file
// the gate let a tool read or change, by its resolved path, inside the
// working directory), secret-looking and deny-rule files get a
// placeholder, and secret values are redacted in every file written.

import (
	"encoding/json"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/acp-agent/acp-agent/app/cli"
)

// recordedText is the content of every file under dir, joined.
func recordedText(t *testing.T, dir string) string {
	t.Helper()
	var b strings.Builder
	err := filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		data, err := os.ReadFile(p)
		b.Write(data)
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	return b.String()
}

func readArgs(path string) string {
	b, _ := json.Marshal(map[string]string{"path": path})
	return string(b)
}

// A deny rule's file (read refused), a refused question about a secret
// file (write refused by --ask deny) and a secret-looking file read with
// no rule against it: no .env content reaches the recording; the one
// read gets a placeholder, said on stderr.
func TestExecRecordNeverCopiesDeniedOrSecretFiles(t *testing.T) {
	e := newExecEnv(t)
	e.userSettings(`{"permissions": {"deny": ["read(.env)"]}}`)
	putFile(t, filepath.Join(e.cwd, ".env"), "DB_PASSWORD=hunter2-env-content\n")
	putFile(t, filepath.Join(e.cwd, "config", ".env.local"), "LOCAL=local-env-content\n")
	putFile(t, filepath.Join(e.cwd, "notes.txt"), "plain notes\n")
	dir := filepath.Join(t.TempDir(), "rec")
	p := newFakeProvider(t,
		reply{toolName: "read", toolArgs: readArgs(".env")},
		reply{toolName: "edit", toolArgs: `{"path":".env","old_string":"hunter2","new_string":"x"}`},
		reply{toolName: "read", toolArgs: readArgs("config/.env.local")},
		reply{toolName: "read", toolArgs: readArgs("notes.txt")},
		reply{text: "Done."},
	)
	code, out, errOut := e.run(p, "", "--record", dir, "Look around")
	if code != cli.ExitRefused {
		t.Fatalf("exit %d, want 3 (the edit's question was refused)\nstdout: %s\nstderr: %s", code, out, errOut)
	}
	text := recordedText(t, dir)
	for _, leak := range []string{"hunter2-env-content", "local-env-content"} {
		if strings.Contains(text, leak) {
			t.Errorf("the recording holds %q:\n%s", leak, text)
		}
	}
	if !strings.Contains(text, "plain notes") {
		t.Errorf("an ordinary file the read tool read was not snapshotted:\n%s", text)
	}
	if !strings.Contains(text, "config/.env.local: |\n") && !strings.Contains(text, "config/.env.local:") {
		t.Errorf("the secret-looking file has no placeholder:\n%s", text)
	}
	if !strings.Contains(errOut, "config/.env.local: a secret-looking file, never copied") {
		t.Errorf("stderr does not say the file was withheld:\n%s", errOut)
	}
}

// A file reached through a folder symlinked out of the working directory
// and a hard link to an outside file are read (--ask allow lets a read
// outside go on) but never copied.
func TestExecRecordKeepsOutsideFilesOut(t *testing.T) {
	e := newExecEnv(t)
	outside := filepath.Join(t.TempDir(), "outside")
	putFile(t, filepath.Join(outside, "secret.txt"), "outside-file-content\n")
	if err := os.Symlink(outside, filepath.Join(e.cwd, "linked")); err != nil {
		t.Fatal(err)
	}
	if err := os.Link(filepath.Join(outside, "secret.txt"), filepath.Join(e.cwd, "hard.txt")); err != nil {
		t.Fatal(err)
	}
	dir := filepath.Join(t.TempDir(), "rec")
	p := newFakeProvider(t,
		reply{toolName: "read", toolArgs: readArgs("linked/secret.txt")},
		reply{toolName: "read", toolArgs: readArgs("hard.txt")},
		reply{text: "Read both."},
	)
	code, out, errOut := e.run(p, "", "--ask", "allow", "--record", dir, "Read them")
	if code != cli.ExitOK {
		t.Fatalf("exit %d\nstdout: %s\nstderr: %s", code, out, errOut)
	}
	if strings.Contains(recordedText(t, dir), "outside-file-content") {
		t.Fatalf("an outside file was copied into the recording:\n%s", recordedText(t, dir))
	}
	for _, name := range []string{"linked/secret.txt", "hard.txt"} {
		if !strings.Contains(errOut, name+": resolves outside the working directory") {
			t.Errorf("stderr does not say %s was left out:\n%s", name, errOut)
		}
	}
}

// Each redaction rule: the provider key, a secret-named variable's
// value, a long _URL value and an Authorization: token value are absent
// from every recorded file, wherever they appeared (prompt, reply text,
// tool arguments, file snapshot).
func TestExecRecordRedactsEverywhere(t *testing.T) {
	e := newExecEnv(t)
	vars := map[string]string{
		"MY_SERVICE_SECRET": "named-secret-value-42",
		"DATABASE_URL":      "postgres://app:pw-in-url@db.internal:5432/app",
		"SHORT_URL":         "http://a.b",
	}
	for k, v := range vars {
		t.Setenv(k, v)
		e.vars[k] = v
	}
	key := e.vars["FAKE_KEY"]
	auth := "Authorization: token ghtok-abc-123"
	all := strings.Join([]string{key, vars["MY_SERVICE_SECRET"], vars["DATABASE_URL"], auth}, " ")
	putFile(t, filepath.Join(e.cwd, "config.txt"), "settings: "+all+"\n")
	writeArgs, _ := json.Marshal(map[string]string{"path": "out.txt", "content": all})
	dir := filepath.Join(t.TempDir(), "rec")
	p := newFakeProvider(t,
		reply{toolName: "read", toolArgs: readArgs("config.txt")},
		reply{toolName: "write", toolArgs: string(writeArgs)},
		reply{text: "I saw " + all},
	)
	code, out, errOut := e.run(p, "", "--ask", "allow", "--record", dir, "Use "+all+" and "+vars["SHORT_URL"])
	if code != cli.ExitOK {
		t.Fatalf("exit %d\nstdout: %s\nstderr: %s", code, out, errOut)
	}
	text := recordedText(t, dir)
	for _, secret := range []string{key, vars["MY_SERVICE_SECRET"], vars["DATABASE_URL"], "pw-in-url", "ghtok-abc-123"} {
		if strings.Contains(text, secret) {
			t.Errorf("the recording holds %q", secret)
		}
	}
	if !strings.Contains(text, "http://a.b") {
		t.Errorf("a short _URL value was redacted (it carries no credential)")
	}
	if !strings.Contains(text, "[REDACTED]") || !strings.Contains(text, "settings: ") {
		t.Errorf("the recording lacks the redacted snapshot:\n%s", text)
	}
}

// A run that fails before its first model reply (the provider rejects
// the key, or there is no key) leaves an earlier recording as it was.
func TestExecRecordFailedRunLeavesTheOldRecording(t *testing.T) {
	e := newExecEnv(t)
	dir := filepath.Join(t.TempDir(), "rec")
	p := newFakeProvider(t, reply{text: "First answer."})
	if code, _, errOut := e.run(p, "", "--record", dir, "Hello"); code != cli.ExitOK {
		t.Fatalf("first recording: exit %d\n%s", code, errOut)
	}
	good, err := os.ReadFile(filepath.Join(dir, "scenario.yaml"))
	if err != nil || !strings.Contains(string(good), "First answer.") {
		t.Fatalf("first recording: %v\n%s", err, good)
	}
	failing := newFakeProvider(t, reply{status: 401})
	code, _, errOut := e.run(failing, "", "--record", dir, "Hello again")
	if code != cli.ExitError {
		t.Fatalf("rejected key: exit %d, want 1\n%s", code, errOut)
	}
	if !strings.Contains(errOut, "not written") {
		t.Errorf("stderr does not say the recording was not written:\n%s", errOut)
	}
	delete(e.vars, "FAKE_KEY")
	if code, _, errOut := e.run(failing, "", "--record", dir, "Keyless"); code == cli.ExitOK {
		t.Fatalf("keyless run: exit 0\n%s", errOut)
	}
	now, err := os.ReadFile(filepath.Join(dir, "scenario.yaml"))
	if err != nil || string(now) != string(good) {
		t.Fatalf("the recording changed after failed runs: %v\n%s", err, now)
	}
}

func putFile(t *testing.T, path, text string) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, []byte(text), 0o644); err != nil {
		t.Fatal(err)
	}
}
