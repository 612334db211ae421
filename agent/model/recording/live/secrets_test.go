package live

import (
	"bytes"
	"io"
	"slices"
	"strings"
	"testing"
)

// SecretValues: which environment values a recording must never hold.
func TestSecretValues(t *testing.T) {
	long := "postgres://u:pw@db.internal:5432/app"
	for _, tc := range []struct {
		name      string
		keyEnv    string
		env       map[string]string
		want      []string // values that must be among the secrets
		wantNotIn []string // values that must not be
	}{
		{"the provider key variable", "MY_PROVIDER", map[string]string{"MY_PROVIDER": "k-123"}, []string{"k-123"}, nil},
		{"well-known key variables", "", map[string]string{"OPENAI_API_KEY": "sk-a", "ANTHROPIC_API_KEY": "sk-b"}, []string{"sk-a", "sk-b"}, nil},
		{"names like a secret", "", map[string]string{"GITHUB_TOKEN": "ghp_x", "DB_PASSWORD": "hunter2", "APP_SECRET": "s3"}, []string{"ghp_x", "hunter2", "s3"}, nil},
		{"long link values", "", map[string]string{"DATABASE_URL": long, "GH_PAT": "github_pat_0123456789", "SENTRY_DSN": "https://abc@o1.ingest/1", "SLACK_WEBHOOK": "https://hooks.example/T0/B0/x"},
			[]string{long, "github_pat_0123456789", "https://abc@o1.ingest/1", "https://hooks.example/T0/B0/x"}, nil},
		{"short link values are ordinary text", "", map[string]string{"HOME_URL": "http://x", "X_PAT": "short"}, nil, []string{"http://x", "short"}},
		{"plain variables stay", "", map[string]string{"PATH": "/usr/bin:/bin", "EDITOR": "vim"}, nil, []string{"/usr/bin:/bin", "vim"}},
		{"lower-case suffix", "", map[string]string{"database_url": long}, []string{long}, nil},
		{"empty values are not secrets", "EMPTY_KEY", map[string]string{"EMPTY_KEY": ""}, nil, []string{""}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var environ []string
			for k, v := range tc.env {
				environ = append(environ, k+"="+v)
			}
			got := SecretValues(tc.keyEnv, func(n string) string { return tc.env[n] }, environ)
			for _, w := range tc.want {
				if !slices.Contains(got, w) {
					t.Errorf("SecretValues = %q: %q missing", got, w)
				}
			}
			for _, w := range tc.wantNotIn {
				if slices.Contains(got, w) {
					t.Errorf("SecretValues = %q: holds %q", got, w)
				}
			}
		})
	}
}

// lineTap hands every complete line to its callback once, whatever the
// read and write boundaries, passes the bytes through unchanged, and
// drops a line longer than its bound instead of holding it.
func TestLineTap(t *testing.T) {
	for _, tc := range []struct {
		name   string
		chunks []string
		want   []string
	}{
		{"one line per chunk", []string{"a\n", "b\n"}, []string{"a", "b"}},
		{"a line split across chunks", []string{"ab", "c\nd", "e\n"}, []string{"abc", "de"}},
		{"several lines in one chunk", []string{"a\nb\nc\n"}, []string{"a", "b", "c"}},
		{"an unfinished last line is not a line", []string{"a\nb"}, []string{"a"}},
		{"empty lines", []string{"\n\n"}, []string{"", ""}},
	} {
		for _, dir := range []string{"read", "write"} {
			t.Run(tc.name+"/"+dir, func(t *testing.T) {
				var got []string
				note := func(l []byte) { got = append(got, string(l)) }
				var passed bytes.Buffer
				if dir == "write" {
					tap := &lineTap{w: &passed, line: note}
					for _, c := range tc.chunks {
						if _, err := tap.Write([]byte(c)); err != nil {
							t.Fatal(err)
						}
					}
				} else {
					tap := &lineTap{r: &chunkReader{chunks: slices.Clone(tc.chunks)}, line: note}
					if _, err := io.Copy(&passed, tap); err != nil {
						t.Fatal(err)
					}
				}
				if !slices.Equal(got, tc.want) {
					t.Errorf("lines %q, want %q", got, tc.want)
				}
				if passed.String() != strings.Join(tc.chunks, "") {
					t.Errorf("passed %q, want the bytes unchanged", passed.String())
				}
			})
		}
	}
	for _, tc := range []struct {
		name   string
		chunks [][]byte
	}{
		{"one chunk over the bound, its tail after", [][]byte{bytes.Repeat([]byte("x"), maxTapLine+1), []byte("yy\nnext\n")}},
		{"held to the bound, then finished past it", [][]byte{bytes.Repeat([]byte("x"), maxTapLine), []byte("yy\nnext\n")}},
		{"past the bound in its finishing chunk", [][]byte{[]byte("x"), append(bytes.Repeat([]byte("y"), maxTapLine), []byte("\nnext\n")...)}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var got []string
			tap := &lineTap{w: io.Discard, line: func(l []byte) { got = append(got, string(l)) }}
			for _, c := range tc.chunks {
				tap.Write(c)
			}
			if !slices.Equal(got, []string{"next"}) {
				t.Errorf("got %d lines (%.20q), want only the next line: an overlong line or its tail was passed on", len(got), got)
			}
		})
	}
}

// chunkReader returns its chunks one Read at a time.
type chunkReader struct{ chunks []string }

func (c *chunkReader) Read(p []byte) (int, error) {
	if len(c.chunks) == 0 {
		return 0, io.EOF
	}
	n := copy(p, c.chunks[0])
	c.chunks[0] = c.chunks[0][n:]
	if c.chunks[0] == "" {
		c.chunks = c.chunks[1:]
	}
	return n, nil
}
