package search

import (
	"bytes"
	"context"
	"io"
	"io/fs"
	"os"
	"regexp"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"

	"github.com/acp-agent/acp-agent/agent/tool/workspace"
)

// blockSize is how much of a file one searcher reads at a time: most
// files are searched in one read, larger ones are streamed in blocks.
const blockSize = 256 << 10

// grepRun is the search of one grep call. The walk hands candidate files
// out, in walk order, to up to GOMAXPROCS searchers; their results are
// merged back in that order, so the output and the cut at the limit are
// exactly a sequential search's. Once the limit is passed no further
// file is handed out.
type grepRun struct {
	re *regexp.Regexp
	// lit, when set, is a literal every match contains: searchers find
	// it with bytes.Index and run re only on the lines holding it.
	lit   []byte
	limit int
	// skipLinked: files with several hard links are not searched (a
	// search inside the cwd; see openCandidate).
	skipLinked bool
	// maxVisited cuts the walk (MaxVisited).
	maxVisited int

	mu   sync.Mutex
	cond *sync.Cond // signalled when next advances or the run stops
	// pending are the results that arrived ahead of next; the walk
	// hands out no file grepWindow or more ahead of next, which bounds
	// them.
	pending map[int]fileResult
	next    int
	out     strings.Builder
	matches int
	files   int
	paths   []string // the files with a match, as shown
	cut     bool
	stopped atomic.Bool
}

// fileResult is the matching lines of one file, formatted, and their
// number.
type fileResult struct {
	text []byte
	n    int
	name string // as shown
}

// grepWindow bounds how far ahead of the merge files are searched.
const grepWindow = 256

func newGrepRun(re *regexp.Regexp, limit int, skipLinked bool) *grepRun {
	g := &grepRun{re: re, lit: requiredLiteral(re.String()), limit: limit, skipLinked: skipLinked, maxVisited: MaxVisited, pending: map[int]fileResult{}}
	g.cond = sync.NewCond(&g.mu)
	return g
}

// stop ends the handing out of files.
func (g *grepRun) stop() {
	g.stopped.Store(true)
	g.cond.Broadcast()
}

type grepJob struct {
	idx        int
	path, name string
}

// walk searches the regular files below dir that keep admits (by path
// relative to dir), shown by show.
func (g *grepRun) walk(ctx context.Context, dir string, ig *ignores, keep func(rel string) bool, show func(path string) string) (limited bool, err error) {
	jobs := make(chan grepJob, runtime.GOMAXPROCS(0))
	var wg sync.WaitGroup
	var searchErr atomic.Pointer[error]
	for range runtime.GOMAXPROCS(0) {
		wg.Go(func() {
			s := newSearcher(g)
			for j := range jobs {
				var res fileResult
				if !g.stopped.Load() {
					var err error
					if res, err = s.file(ctx, j.path, j.name, g.limit+1); err != nil {
						searchErr.CompareAndSwap(nil, &err)
						g.stop()
					}
				}
				g.deliver(j.idx, res)
			}
		})
	}
	idx := 0
	limited, err = walkUpTo(ctx, dir, ig, g.maxVisited, func(path string, d fs.DirEntry) error {
		if g.stopped.Load() {
			return errStop
		}
		if !d.Type().IsRegular() {
			return nil // symlinks may lead anywhere; devices and FIFOs block
		}
		if !keep(relTo(dir, path)) {
			return nil
		}
		g.mu.Lock()
		for idx >= g.next+grepWindow && !g.stopped.Load() {
			g.cond.Wait()
		}
		g.mu.Unlock()
		if g.stopped.Load() {
			return errStop
		}
		select {
		case jobs <- grepJob{idx: idx, path: path, name: show(path)}:
		case <-ctx.Done():
			return ctx.Err()
		}
		idx++
		return nil
	})
	close(jobs)
	wg.Wait()
	if p := searchErr.Load(); p != nil && err == nil {
		err = *p
	}
	return limited, err
}

// single searches one file named as the path.
func (g *grepRun) single(ctx context.Context, path, name string) error {
	res, err := newSearcher(g).file(ctx, path, name, g.limit+1)
	if err != nil {
		return err
	}
	g.deliver(0, res)
	return nil
}

// deliver takes the result of file idx and merges every result now due.
func (g *grepRun) deliver(idx int, res fileResult) {
	g.mu.Lock()
	defer g.mu.Unlock()
	defer g.cond.Broadcast()
	g.pending[idx] = res
	for {
		r, ok := g.pending[g.next]
		if !ok {
			return
		}
		delete(g.pending, g.next)
		g.next++
		g.merge(r)
	}
}

// merge appends one file's lines up to the limit.
func (g *grepRun) merge(r fileResult) {
	if g.cut || r.n == 0 {
		return
	}
	text := r.text
	for i := range r.n {
		if g.matches == g.limit {
			g.cut = true
			g.stopped.Store(true) // deliver broadcasts
			return
		}
		g.matches++
		if i == 0 {
			g.files++
			g.paths = append(g.paths, r.name)
		}
		end := bytes.IndexByte(text, '\n') + 1
		g.out.Write(text[:end])
		text = text[end:]
	}
}

// searcher searches files one at a time, reusing its buffers.
type searcher struct {
	g   *grepRun
	buf []byte
}

func newSearcher(g *grepRun) *searcher { return &searcher{g: g, buf: make([]byte, blockSize)} }

// openCandidate opens a file for reading its contents: the one place a
// candidate file is admitted to a content search. It does not block on
// a FIFO swapped in after the walk and admits regular files only.
// With skipLinked it also refuses files with more than one hard link:
// they count as outside the cwd, and a search inside it never asked
// about them.
func openCandidate(path string, skipLinked bool) (*os.File, bool) {
	f, err := os.OpenFile(path, os.O_RDONLY|nonblock, 0)
	if err != nil {
		return nil, false
	}
	if info, err := f.Stat(); err != nil || !info.Mode().IsRegular() || skipLinked && workspace.MultiplyLinked(info) {
		f.Close()
		return nil, false
	}
	return f, true
}

// file searches one file for at most max matching lines. Unreadable and
// binary files have no matches; the error is only ctx's.
func (s *searcher) file(ctx context.Context, path, name string, max int) (fileResult, error) {
	if err := ctx.Err(); err != nil {
		return fileResult{}, err
	}
	f, ok := openCandidate(path, s.g.skipLinked)
	if !ok {
		return fileResult{}, nil
	}
	defer f.Close()
	buf := s.buf
	filled, eof := fill(f, buf, 0)
	if bytes.IndexByte(buf[:min(filled, sniffBytes)], 0) >= 0 {
		return fileResult{}, nil
	}
	m := matchState{s: s, name: name, max: max, lineNo: 1}
	start := 0    // the first unsearched byte in buf, at a line start
	skip := false // discarding the rest of an overlong line
	for {
		data := buf[start:filled]
		switch {
		case skip:
			if i := bytes.IndexByte(data, '\n'); i >= 0 {
				start += i + 1
				skip = false
				continue
			}
			start = filled
		case eof:
			m.block(data, false)
			start = filled
		default:
			end := bytes.LastIndexByte(data, '\n') + 1
			if end == 0 && start == 0 && filled == len(buf) {
				// A line longer than the buffer: its start is matched,
				// the rest skipped.
				m.block(data[:maxScanLine], false)
				m.lineNo++
				start, skip = filled, true
				break
			}
			m.block(data[:end], true)
			start += end
		}
		if m.full() || (eof && start == filled) {
			return m.result(), nil
		}
		if err := ctx.Err(); err != nil {
			return fileResult{}, err
		}
		copy(buf, buf[start:filled])
		filled -= start
		start = 0
		filled, eof = fill(f, buf, filled)
	}
}

// fill reads into buf[from:] until buf is full or the file ends (a read
// error ends it too).
func fill(r io.Reader, buf []byte, from int) (filled int, eof bool) {
	for from < len(buf) {
		n, err := r.Read(buf[from:])
		from += n
		if err != nil || n == 0 {
			return from, true
		}
	}
	return from, false
}

// matchState is the progress of a search through one file.
type matchState struct {
	s      *searcher
	name   string
	max    int
	lineNo int // the number of the line the next block starts with
	out    []byte
	n      int
}

func (m *matchState) full() bool { return m.n >= m.max }

func (m *matchState) result() fileResult { return fileResult{text: m.out, n: m.n, name: m.name} }

// block searches complete lines (the last one may be unterminated);
// count asks for lineNo to be advanced past the block, which a following
// block needs. Lines are counted only up to matches otherwise.
func (m *matchState) block(b []byte, count bool) {
	lit := m.s.g.lit
	if lit == nil {
		ln := m.lineNo
		for pos := 0; pos < len(b) && !m.full(); ln++ {
			end := bytes.IndexByte(b[pos:], '\n')
			if end < 0 {
				end = len(b)
			} else {
				end += pos
			}
			m.check(b[pos:end], ln)
			pos = end + 1
		}
		if count {
			m.lineNo = ln
		}
		return
	}
	ln, counted := m.lineNo, 0
	for pos := 0; pos < len(b) && !m.full(); {
		i := bytes.Index(b[pos:], lit)
		if i < 0 {
			break
		}
		hit := pos + i
		ls := pos + bytes.LastIndexByte(b[pos:hit], '\n') + 1
		le := bytes.IndexByte(b[hit:], '\n')
		if le < 0 {
			le = len(b)
		} else {
			le += hit
		}
		if m.matches(b[ls:le]) {
			ln += bytes.Count(b[counted:ls], []byte{'\n'})
			counted = ls
			m.emit(b[ls:le], ln)
		}
		pos = le + 1
	}
	if count {
		m.lineNo = ln + bytes.Count(b[counted:], []byte{'\n'})
	}
}

// check emits line as number ln when it matches.
func (m *matchState) check(line []byte, ln int) {
	if m.matches(line) {
		m.emit(line, ln)
	}
}

// matches runs the regexp on a line: its "\r" ending removed and at most
// maxScanLine bytes of it.
func (m *matchState) matches(line []byte) bool {
	line = bytes.TrimSuffix(line, []byte{'\r'})
	return m.s.g.re.Match(line[:min(len(line), maxScanLine)])
}

// emit formats one matching line as "name:line:text".
func (m *matchState) emit(line []byte, ln int) {
	line = bytes.TrimSuffix(line, []byte{'\r'})
	m.out = append(m.out, m.name...)
	m.out = append(m.out, ':')
	m.out = strconv.AppendInt(m.out, int64(ln), 10)
	m.out = append(m.out, ':')
	m.out = append(m.out, cutText(line[:min(len(line), maxScanLine)], MaxMatchChars)...)
	m.out = append(m.out, '\n')
	m.n++
}
