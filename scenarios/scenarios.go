package scenarios

import (
	"context"
	"embed"
	"fmt"
	"io"
	"io/fs"
	"log/slog"
	"os"
	"path"
	"slices"
	"strings"
	"sync"
)

// files holds every scenario, so the CLI works from any directory.
//
//go:embed */scenario.yaml
var files embed.FS

var (
	loadOnce sync.Once
	loaded   map[string]*Scenario
	loadErr  error
)

func loadAll() (map[string]*Scenario, error) {
	loadOnce.Do(func() {
		loaded = map[string]*Scenario{}
		paths, err := fs.Glob(files, "*/scenario.yaml")
		if err != nil {
			loadErr = err
			return
		}
		for _, p := range paths {
			data, err := files.ReadFile(p)
			if err != nil {
				loadErr = err
				return
			}
			name := path.Dir(p)
			sc, err := Parse("scenarios/"+p, name, data)
			if err != nil {
				loadErr = err
				return
			}
			loaded[name] = sc
		}
	})
	return loaded, loadErr
}

// Names returns the names of the embedded scenarios, sorted.
func Names() []string {
	all, _ := loadAll()
	names := make([]string, 0, len(all))
	for n := range all {
		names = append(names, n)
	}
	slices.Sort(names)
	return names
}

// Load returns the parsed embedded scenario name.
func Load(name string) (*Scenario, error) {
	all, err := loadAll()
	if err != nil {
		return nil, err
	}
	sc, ok := all[name]
	if !ok {
		return nil, fmt.Errorf("%w %q (known: %s)", errUnknown, name, strings.Join(Names(), ", "))
	}
	return sc, nil
}

// Run runs the embedded scenario name against the real composition, in a
// fresh temporary directory that is removed afterwards, and writes its
// human-readable transcript (conversation, subagent tree, list_agents
// output) to out. Logs go to the default slog logger's destination only
// when logger is configured there; by default they are discarded.
func Run(ctx context.Context, name string, out io.Writer) error {
	sc, err := Load(name)
	if err != nil {
		return err
	}
	root, err := os.MkdirTemp("", "acp-agent-scenario-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(root)
	rec, err := execute(ctx, sc, Composition, root, slog.New(slog.DiscardHandler))
	if err != nil {
		return err
	}
	_, err = out.Write(rec.Transcript)
	return err
}

// Record runs a scenario with factory in root and returns its recordings.
// Tests use it with the real composition; root must be an empty directory.
func Record(ctx context.Context, sc *Scenario, factory Factory, root string, logger *slog.Logger) (*Recording, error) {
	return execute(ctx, sc, factory, root, logger)
}
