package recording

import (
	"regexp"
	"sort"
	"strings"
)

// Redacted replaces every secret in recorded text.
const Redacted = "[REDACTED]"

// minSecret is the shortest value treated as a secret: shorter values
// (a variable set to "1") would blank out ordinary text.
const minSecret = 6

// headerValue matches the value of an Authorization header or field and a
// bearer token wherever they are written ("Authorization: Bearer x",
// "authorization": "x", "Bearer x").
var (
	authValue   = regexp.MustCompile(`(?i)(authorization["']?\s*[:=]\s*["']?)(?:(?:bearer|basic|token)\s+)?[^\s"',}]+`)
	bearerValue = regexp.MustCompile(`(?i)\b(bearer\s+)[A-Za-z0-9._~+/=-]{6,}`)
	// tokenValue and tokenFlag: a token given as a field or an option
	// ("token": "x", token=x, --token x; "Authorization: token x" is
	// authValue's).
	tokenValue = regexp.MustCompile(`(?i)\b((?:access_|auth_|api_|private_|refresh_)?token["']?\s*[:=]\s*["']?)[A-Za-z0-9._~+/=-]{6,}`)
	tokenFlag  = regexp.MustCompile(`(?i)(--[a-z-]*token[= ]+)[A-Za-z0-9._~+/=-]{6,}`)
)

// Redactor replaces secret values and Authorization / Bearer values.
type Redactor struct {
	secrets []string
}

// NewRedactor returns a redactor of secrets (values shorter than six bytes
// are ignored).
func NewRedactor(secrets ...string) *Redactor {
	seen := map[string]bool{}
	var list []string
	for _, s := range secrets {
		s = strings.TrimSpace(s)
		if len(s) >= minSecret && !seen[s] {
			seen[s] = true
			list = append(list, s)
		}
	}
	// Longest first, so a secret containing another is replaced whole.
	sort.Slice(list, func(i, j int) bool { return len(list[i]) > len(list[j]) })
	return &Redactor{secrets: list}
}

// Redact returns s with every secret value and header value replaced by
// Redacted.
func (r *Redactor) Redact(s string) string {
	if s == "" {
		return s
	}
	for _, sec := range r.secrets {
		s = strings.ReplaceAll(s, sec, Redacted)
	}
	s = authValue.ReplaceAllString(s, "${1}"+Redacted)
	s = bearerValue.ReplaceAllString(s, "${1}"+Redacted)
	s = tokenValue.ReplaceAllString(s, "${1}"+Redacted)
	return tokenFlag.ReplaceAllString(s, "${1}"+Redacted)
}
