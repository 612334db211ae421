package recording_test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/acp-agent/acp-agent/agent/model/recording"
)

func TestSecretFile(t *testing.T) {
	for _, tc := range []struct {
		rel  string
		want bool
	}{
		{".env", true}, {"app/.env.production", true}, {"prod.env", true},
		{"certs/server.pem", true}, {"tls.KEY", true}, {"store.p12", true},
		{".ssh/id_rsa", true}, {"id_ed25519.pub", true}, {"id_map.go", false},
		{"credentials", true}, {"gcp/credentials.json", true}, {"service-credentials.json", true},
		{".netrc", true}, {".npmrc", true}, {".git-credentials", true},
		{"main.go", false}, {"environment.md", false}, {"keys.go", false}, {"README", false},
	} {
		if got := recording.SecretFile(tc.rel); got != tc.want {
			t.Errorf("SecretFile(%q) = %v, want %v", tc.rel, got, tc.want)
		}
	}
}

// A secret-looking file and one the deny rules cover get a placeholder
// when a tool touched them; an absent one gets nothing.
func TestWithheldFilesGetAPlaceholder(t *testing.T) {
	cwd := t.TempDir()
	for name, text := range map[string]string{".env": "A=secret-env\n", "private.txt": "denied text\n", "ok.txt": "fine\n"} {
		if err := os.WriteFile(filepath.Join(cwd, name), []byte(text), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	rec := recording.New(recording.Options{Cwd: cwd})
	rec.SetDenied(func(rel string) bool { return rel == "private.txt" })
	for _, n := range []string{".env", "private.txt", "ok.txt", "missing.env"} {
		rec.Touched("s", filepath.Join(cwd, n))
	}
	files := rec.Files()
	if files[".env"] != recording.Placeholder || files["private.txt"] != recording.Placeholder || files["ok.txt"] != "fine\n" {
		t.Fatalf("files = %q", files)
	}
	if _, ok := files["missing.env"]; ok {
		t.Errorf("an absent file got a placeholder")
	}
	notes := strings.Join(rec.Notes(), "\n")
	if !strings.Contains(notes, ".env: a secret-looking file") || !strings.Contains(notes, "private.txt: a deny rule") {
		t.Errorf("notes = %s", notes)
	}
}

func TestRedactorRules(t *testing.T) {
	r := recording.NewRedactor("sk-provider-key-1")
	for in, leak := range map[string]string{
		"key sk-provider-key-1 here":              "sk-provider-key-1",
		"Authorization: token ghp_abc123":         "ghp_abc123",
		"Authorization: Bearer eyJhbGciOi":        "eyJhbGciOi",
		`{"authorization": "Basic dXNlcjpwdw=="}`: "dXNlcjpwdw",
		`{"token": "tok-123456"}`:                 "tok-123456",
		"access_token=abcdef123":                  "abcdef123",
		"gh auth --with-token tok-98765":          "tok-98765",
	} {
		if got := r.Redact(in); strings.Contains(got, leak) || !strings.Contains(got, recording.Redacted) {
			t.Errorf("Redact(%q) = %q", in, got)
		}
	}
	for _, keep := range []string{"the token budget is 100", "max_tokens: 4096", "input_tokens: 12"} {
		if got := r.Redact(keep); got != keep {
			t.Errorf("Redact(%q) = %q, want it unchanged", keep, got)
		}
	}
}
