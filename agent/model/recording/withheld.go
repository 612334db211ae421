package recording

// This file defines the files a recording never copies: secret-looking
// names (a documented list, docs/exec.md "What recording never copies")
// and the files the settings' deny rules keep from the tools.

import (
	"path"
	"strings"
)

// Placeholder is the content a replay gets for a file the recording
// withheld.
const Placeholder = "[acp-agent --record: this file was withheld from the recording]\n"

// SecretFilePatterns are the base names (path.Match patterns, matched
// case-insensitively) of files a recording never copies, whatever the
// rules say: environment files, private keys and certificates, and
// credential stores.
var SecretFilePatterns = []string{
	".env", ".env.*", "*.env",
	"*.pem", "*.key", "*.p12", "*.pfx", "*.jks", "*.keystore",
	"id_*", // ssh keys (id_rsa, id_ed25519, ...); SecretFile spares id_*.go and the like
	"credentials", "credentials.*", "*credentials.json",
	".netrc", "_netrc", ".pgpass", ".npmrc", ".pypirc", ".git-credentials", ".htpasswd",
}

// SecretFile reports whether rel (slash-separated) has a secret-looking
// name (SecretFilePatterns).
func SecretFile(rel string) bool {
	base := strings.ToLower(path.Base(rel))
	for _, p := range SecretFilePatterns {
		if ok, _ := path.Match(p, base); !ok {
			continue
		}
		if p == "id_*" {
			// A key file has no extension but .pub: id_map.go is source.
			if ext := path.Ext(base); ext != "" && ext != ".pub" {
				continue
			}
		}
		return true
	}
	return false
}

// withheldLocked says why rel is never copied ("" when it may be).
func (r *Recorder) withheldLocked(rel string) string {
	switch {
	case SecretFile(rel):
		return "a secret-looking file"
	case r.opts.Denied != nil && r.opts.Denied(rel):
		return "a deny rule of the settings covers it"
	}
	return ""
}
