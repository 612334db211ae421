package benchtree

import (
	"bytes"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
)

// Marker words the tree contains on a few lines each (about one file in
// 200 for Needle, one in 50 for Handler lines), for searches whose
// results are small enough to compare in full.
const (
	Needle        = "ACP_NEEDLE_7f3a"
	HandlerSuffix = "Handler("
)

// Options shape a tree.
type Options struct {
	// Files is about how many files to write (ignored ones included).
	Files int
	// Bytes is about how many bytes of content to write in all.
	Bytes int64
	// Seed makes the tree; the same seed gives the same tree.
	Seed uint64
}

// Large is the shape of the side-by-side comparison: about 50,000
// files and 500 MB.
var Large = Options{Files: 50_000, Bytes: 500 << 20, Seed: 1}

// Stats tell what was written.
type Stats struct {
	Files, Dirs, Binaries, IgnoreFiles int
	Bytes                              int64
}

// rootIgnore is the top-level .gitignore.
const rootIgnore = `# dependencies and outputs
node_modules/
/build/
dist/
*.o
*.a
*.log
!keep.log
coverage/
.cache/
*.tmp
/generated/**/*.pb.go
**/testdata/large/
*.min.js
tmp-*
`

// nestedIgnores are the rules of the nested .gitignore files.
var nestedIgnores = []string{
	"*.gen.go\n!keep.gen.go\n",
	"/out/\n*.snap\n",
	"local/\n*.bak\n",
	"fixtures/*.bin\n",
	"*.txt\n!README.txt\n",
}

var (
	dirWords  = []string{"api", "core", "internal", "pkg", "server", "client", "util", "model", "store", "auth", "http", "grpc", "cache", "queue", "config", "cmd", "tools", "web", "ui", "db", "testdata", "local", "out", "fixtures", "generated", "docs", "scripts", "node_modules", "build", "dist", "coverage"}
	fileExts  = []string{".go", ".go", ".go", ".ts", ".js", ".py", ".md", ".txt", ".json", ".yaml", ".c", ".h", ".rs", ".log", ".tmp", ".gen.go", ".snap", ".bak", ".min.js", ".o"}
	lineWords = []string{"func", "return", "if", "err", "nil", "ctx", "context.Context", "string", "int", "for", "range", "var", "const", "type", "struct", "map", "value", "result", "request", "response", "server", "client", "config", "options", "buffer", "index", "count", "name", "path", "error", "fmt.Errorf", "(", ")", "{", "}", ":=", "=", "//", "the", "of", "a"}
)

// Generate writes a tree into dir (created; it should be empty).
func Generate(dir string, opt Options) (Stats, error) {
	g := &gen{rng: rand.New(rand.NewPCG(opt.Seed, 0x5eed)), root: dir}
	g.corpus = g.makeCorpus(4 << 20)
	// The size distribution averages about 0.8 of its mean argument.
	meanSize := int(max(opt.Bytes*5/4/int64(max(opt.Files, 1)), 64))
	if err := os.MkdirAll(filepath.Join(dir, ".git", "info"), 0o755); err != nil {
		return g.st, err
	}
	if err := os.WriteFile(filepath.Join(dir, ".git", "HEAD"), []byte("ref: refs/heads/main\n"), 0o644); err != nil {
		return g.st, err
	}
	if err := os.WriteFile(filepath.Join(dir, ".git", "info", "exclude"), []byte("*.secret\n"), 0o644); err != nil {
		return g.st, err
	}
	if err := g.write(".gitignore", []byte(rootIgnore)); err != nil {
		return g.st, err
	}
	g.st.IgnoreFiles++
	// Directories of about 20 files, nested up to 5 deep.
	dirs := []string{""}
	for len(dirs)*20 < opt.Files {
		parent := dirs[g.rng.IntN(len(dirs))]
		if strings.Count(parent, "/") >= 4 {
			continue
		}
		name := dirWords[g.rng.IntN(len(dirWords))]
		if g.rng.IntN(3) > 0 {
			name += fmt.Sprint(g.rng.IntN(100))
		}
		d := strings.TrimPrefix(parent+"/"+name, "/")
		if err := os.MkdirAll(filepath.Join(dir, d), 0o755); err != nil {
			return g.st, err
		}
		dirs = append(dirs, d)
		g.st.Dirs++
		if g.rng.IntN(10) == 0 {
			if err := g.write(d+"/.gitignore", []byte(nestedIgnores[g.rng.IntN(len(nestedIgnores))])); err != nil {
				return g.st, err
			}
			g.st.IgnoreFiles++
		}
	}
	for i := range opt.Files {
		d := dirs[g.rng.IntN(len(dirs))]
		ext := fileExts[g.rng.IntN(len(fileExts))]
		name := fmt.Sprintf("%s%d%s", lineWords[g.rng.IntN(12)], i, ext)
		switch g.rng.IntN(200) {
		case 0:
			name = "keep.log"
		case 1:
			name = fmt.Sprintf("tmp-%d.go", i)
		case 2:
			name = fmt.Sprintf("x%d.secret", i)
		}
		var data []byte
		if g.rng.IntN(20) == 0 || ext == ".o" {
			data = g.binary(meanSize)
			g.st.Binaries++
		} else {
			data = g.text(meanSize)
		}
		if err := g.write(strings.TrimPrefix(d+"/"+name, "/"), data); err != nil {
			return g.st, err
		}
	}
	return g.st, nil
}

type gen struct {
	rng    *rand.Rand
	root   string
	corpus []byte
	st     Stats
}

func (g *gen) write(rel string, data []byte) error {
	g.st.Files++
	g.st.Bytes += int64(len(data))
	return os.WriteFile(filepath.Join(g.root, rel), data, 0o644)
}

// makeCorpus builds n bytes of source-like lines to cut files from.
func (g *gen) makeCorpus(n int) []byte {
	var b bytes.Buffer
	for b.Len() < n {
		b.WriteString(strings.Repeat("\t", g.rng.IntN(4)))
		for range 2 + g.rng.IntN(10) {
			b.WriteString(lineWords[g.rng.IntN(len(lineWords))])
			b.WriteByte(' ')
		}
		b.WriteByte('\n')
	}
	return b.Bytes()
}

// size draws a file size around mean: mostly smaller, a few much larger.
func (g *gen) size(mean int) int {
	switch r := g.rng.IntN(100); {
	case r < 60:
		return 1 + g.rng.IntN(mean/2+1)
	case r < 95:
		return mean/2 + g.rng.IntN(mean+1)
	default:
		return mean*3 + g.rng.IntN(mean*6+1)
	}
}

// text cuts a file from the corpus at line boundaries, with marker
// lines here and there.
func (g *gen) text(mean int) []byte {
	n := min(g.size(mean), len(g.corpus)/2)
	start := g.rng.IntN(len(g.corpus) - n)
	start = bytes.IndexByte(g.corpus[start:], '\n') + start + 1
	end := min(start+n, len(g.corpus))
	if i := bytes.LastIndexByte(g.corpus[start:end], '\n'); i >= 0 {
		end = start + i + 1
	}
	data := append([]byte(nil), g.corpus[start:end]...)
	if g.rng.IntN(200) == 0 {
		data = append(data, fmt.Sprintf("\t// %s marks this file %d\n", Needle, g.rng.IntN(1000))...)
	}
	if g.rng.IntN(50) == 0 {
		data = append(data, fmt.Sprintf("func serve%dHandler(ctx context.Context) error {\n", g.rng.IntN(1000))...)
	}
	return data
}

// binary makes a file that starts like an image or object file.
func (g *gen) binary(mean int) []byte {
	data := make([]byte, g.size(mean))
	for i := range data {
		data[i] = byte(g.rng.Uint32())
	}
	copy(data, "\x89PNG\r\n\x1a\n\x00\x00")
	return data
}
