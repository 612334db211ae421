package acp

// This file gives the model the content of the files a prompt links to: a
// resource_link to a file:// URI is read when the prompt arrives, through
// the session's Files (the client's fs when it offers it, local files
// otherwise, the same seam as the read tool), numbered by line and capped.
// The text is recorded with the link in the user message, so the log stays
// the authority: a replay or a reload never reads the file again.

import (
	"context"
	"fmt"
	"net/url"
	"path/filepath"
	"strings"

	"github.com/acp-agent/acp-agent/agent/session"
)

// Caps of a linked file: lines and bytes of numbered text.
const (
	DefaultMaxLinkedFileBytes = 64 << 10
	maxLinkedFileLines        = 2000
)

// expandLinks fills the Text of every file:// resource link with the
// file's numbered lines. A file that cannot be read keeps its link with a
// note saying so: the prompt still runs, and the model knows it has no
// content rather than guessing one.
func (s *Server) expandLinks(ctx context.Context, sessionID string, blocks []session.Block) []session.Block {
	var files interface {
		ReadTextFile(ctx context.Context, path string, line, limit int) (string, error)
	}
	for i, b := range blocks {
		if b.Type != session.BlockResourceLink {
			continue
		}
		path, ok := filePath(b.URI)
		if !ok {
			continue
		}
		if files == nil {
			env, err := s.Env(ctx, sessionID)
			if err != nil || env.Files == nil {
				blocks[i].Text = "[The agent could not read this file: no file access is configured.]"
				continue
			}
			files = env.Files
		}
		text, err := files.ReadTextFile(ctx, path, 0, maxLinkedFileLines+1)
		if err != nil {
			s.log.Info("linked file not read", "session_id", sessionID, "path", path, "err", err)
			blocks[i].Text = fmt.Sprintf("[The agent could not read this file: %v]", err)
			continue
		}
		limit := s.opts.MaxLinkedFileBytes
		if limit <= 0 {
			limit = DefaultMaxLinkedFileBytes
		}
		blocks[i].Text = numberLines(text, maxLinkedFileLines, limit)
	}
	return blocks
}

// filePath returns the absolute local path of a file:// URI (without the
// fragment of a selection).
func filePath(uri string) (string, bool) {
	u, err := url.Parse(uri)
	if err != nil || u.Scheme != "file" || (u.Host != "" && u.Host != "localhost") {
		return "", false
	}
	p := u.Path
	if p == "" || !filepath.IsAbs(p) {
		return "", false
	}
	return filepath.Clean(p), true
}

// numberLines renders text as "N<TAB>line" rows (the read tool's form), at
// most maxLines rows and maxBytes bytes, with a note where it stopped.
func numberLines(text string, maxLines, maxBytes int) string {
	if text == "" {
		return "(empty file)"
	}
	lines := strings.Split(strings.TrimSuffix(text, "\n"), "\n")
	var b strings.Builder
	for i, line := range lines {
		row := fmt.Sprintf("%6d\t%s\n", i+1, strings.TrimSuffix(line, "\r"))
		if i >= maxLines || b.Len()+len(row) > maxBytes {
			fmt.Fprintf(&b, "[Showing lines 1-%d; the file continues: use the read tool with offset=%d for more.]\n", i, i+1)
			break
		}
		b.WriteString(row)
	}
	return b.String()
}

// imageInput reports whether session id's current model takes images.
func (s *Server) imageInput(id string) bool {
	return s.opts.ImageInput != nil && s.opts.ImageInput(id)
}
