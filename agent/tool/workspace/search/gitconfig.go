package search

import (
	"bufio"
	"bytes"
	"errors"
	"io"
	"os"
	"path/filepath"
	"strings"
)

// globalExcludesFile returns the file git's core.excludesFile names for
// the repository whose git directory is gitDir, read from git's config
// files directly (system, then global, then the repository's own; the
// last setting wins), or git's default ($XDG_CONFIG_HOME/git/ignore,
// else ~/.config/git/ignore) when none sets it. getenv reads the
// environment. "include" directives are not followed.
func globalExcludesFile(gitDir string, getenv func(string) string) string {
	home := getenv("HOME")
	xdg := getenv("XDG_CONFIG_HOME")
	if xdg == "" && home != "" {
		xdg = filepath.Join(home, ".config")
	}
	var files []string
	if getenv("GIT_CONFIG_NOSYSTEM") == "" {
		if sys := getenv("GIT_CONFIG_SYSTEM"); sys != "" {
			files = append(files, sys)
		} else {
			files = append(files, "/etc/gitconfig")
		}
	}
	if global := getenv("GIT_CONFIG_GLOBAL"); global != "" {
		files = append(files, global)
	} else {
		if xdg != "" {
			files = append(files, filepath.Join(xdg, "git", "config"))
		}
		if home != "" {
			files = append(files, filepath.Join(home, ".gitconfig"))
		}
	}
	if gitDir != "" {
		files = append(files, filepath.Join(gitDir, "config"))
	}
	value, set := "", false
	for _, f := range files {
		if v, ok := configValue(f, "core", "excludesfile"); ok {
			value, set = v, true
		}
	}
	if !set {
		if xdg == "" {
			return ""
		}
		return filepath.Join(xdg, "git", "ignore")
	}
	switch {
	case value == "":
		return ""
	case value == "~" || strings.HasPrefix(value, "~/"):
		if home == "" {
			return ""
		}
		return filepath.Join(home, value[1:])
	case !filepath.IsAbs(value):
		return "" // relative to git's working directory: not knowable here
	}
	return value
}

// maxConfigFile bounds how much of one config file is read.
const maxConfigFile = 1 << 20

// configValue returns the last value of section.key (both matched
// without regard to case; subsections are other sections) in the git
// config file at path.
func configValue(path, section, key string) (string, bool) {
	data, err := readRegular(path, maxConfigFile, true)
	if err != nil {
		return "", false
	}
	value, found := "", false
	inSection := false
	sc := bufio.NewScanner(bytes.NewReader(data))
	sc.Buffer(nil, maxConfigFile)
	for sc.Scan() {
		line := strings.TrimSpace(sc.Text())
		if line == "" || line[0] == '#' || line[0] == ';' {
			continue
		}
		if line[0] == '[' {
			end := strings.IndexByte(line, ']')
			if end < 0 {
				inSection = false
				continue
			}
			inSection = strings.EqualFold(strings.TrimSpace(line[1:end]), section)
			line = strings.TrimSpace(line[end+1:])
			if line == "" {
				continue
			}
		}
		if !inSection {
			continue
		}
		name, rest, hasValue := strings.Cut(line, "=")
		if !strings.EqualFold(strings.TrimSpace(name), key) {
			continue
		}
		if !hasValue {
			value, found = "", true // a bare key is boolean true
			continue
		}
		value, found = configString(rest), true
	}
	return value, found
}

// configString decodes a config value: quotes removed, escapes
// resolved, an unquoted comment cut, surrounding spaces trimmed.
func configString(s string) string {
	var b strings.Builder
	quoted := false
	s = strings.TrimSpace(s)
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch {
		case c == '"':
			quoted = !quoted
		case c == '\\' && i+1 < len(s):
			i++
			switch s[i] {
			case 'n':
				b.WriteByte('\n')
			case 't':
				b.WriteByte('\t')
			default:
				b.WriteByte(s[i])
			}
		case (c == '#' || c == ';') && !quoted:
			return strings.TrimSpace(b.String())
		default:
			b.WriteByte(c)
		}
	}
	return strings.TrimSpace(b.String())
}

// readRegular reads at most limit bytes of the regular file at path
// without blocking on a FIFO; a final symlink is followed only when
// follow is set (git reads a symlinked config or global excludes file,
// but not a symlinked .gitignore).
func readRegular(path string, limit int64, follow bool) ([]byte, error) {
	flags := os.O_RDONLY | nonblock
	if !follow {
		flags |= nofollow
	}
	f, err := os.OpenFile(path, flags, 0)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	info, err := f.Stat()
	if err != nil {
		return nil, err
	}
	if !info.Mode().IsRegular() {
		return nil, os.ErrInvalid
	}
	buf := make([]byte, min(info.Size(), limit))
	n, err := io.ReadFull(f, buf)
	if errors.Is(err, io.ErrUnexpectedEOF) {
		err = nil // the file shrank
	}
	return buf[:n], err
}
