package scenarios

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"testing"

	"github.com/sebdah/goldie/v2"

	"github.com/acp-agent/acp-agent/agent/session"
	"github.com/acp-agent/acp-agent/app/cli"
)

// processSystem runs the real acp-agent binary as the agent: the runner's
// pipes become its stdin and stdout. It has no in-process store, so
// scenarios with waits or fences cannot run through it.
type processSystem struct {
	bin    string
	cfg    Config
	stderr bytes.Buffer
}

func binaryFactory(bin string) Factory {
	return func(_ context.Context, cfg Config) (System, error) {
		return &processSystem{bin: bin, cfg: cfg}, nil
	}
}

func (p *processSystem) Store() *session.Store { return nil }

func (p *processSystem) Serve(ctx context.Context, in io.Reader, out io.Writer) error {
	args := []string{"--data-dir", p.cfg.DataDir, "--log-level", "debug"}
	if p.cfg.Script != nil {
		script := filepath.Join(filepath.Dir(p.cfg.DataDir), "script.yaml")
		if err := os.WriteFile(script, p.cfg.Script, 0o600); err != nil {
			return err
		}
		args = append(args, "--model", "script:"+script)
		if len(p.cfg.Models) > 1 {
			// One file per model, named so that its route is script/NAME.
			args = args[:len(args)-2]
			for _, name := range p.cfg.Models {
				script := filepath.Join(filepath.Dir(p.cfg.DataDir), name+".yaml")
				if err := os.WriteFile(script, p.cfg.Script, 0o600); err != nil {
					return err
				}
				args = append(args, "--model", "script:"+script)
			}
		}
	}
	cmd := exec.CommandContext(ctx, p.bin, args...)
	cmd.Dir = p.cfg.Cwd
	cmd.Env = append(os.Environ(), "XDG_STATE_HOME="+filepath.Dir(p.cfg.DataDir), cli.DeterministicEnv+"=1")
	cmd.Stdin, cmd.Stdout, cmd.Stderr = in, out, &p.stderr
	if err := cmd.Run(); err != nil {
		return fmt.Errorf("acp-agent exited: %w; stderr:\n%s", err, p.stderr.String())
	}
	if p.stderr.Len() == 0 {
		return errors.New("acp-agent wrote no logs to stderr")
	}
	return nil
}

// TestScenarioThroughBinary drives the built acp-agent binary over real
// stdio with the jsonrpc2 client (every stdout line must be one JSON
// object, stderr must carry the logs, the exit code must be 0) and checks
// that it records byte for byte the same wire transcript and session logs
// as the in-process composition: its deterministic mode
// (ACP_AGENT_DETERMINISTIC=1) uses the same per-session sources.
func TestScenarioThroughBinary(t *testing.T) {
	if testing.Short() {
		t.Skip("builds the binary")
	}
	bin := filepath.Join(t.TempDir(), "acp-agent")
	build := exec.CommandContext(t.Context(), "go", "build", "-o", bin, "github.com/acp-agent/acp-agent/cmd/acp-agent")
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	// model-picker passes two --model flags (the model picker).
	for _, name := range []string{"subagent-fork", "model-picker"} {
		sc, err := Load(name)
		if err != nil {
			t.Fatal(err)
		}
		viaBinary, err := Record(t.Context(), sc, binaryFactory(bin), t.TempDir(), nil)
		if err != nil {
			t.Fatal(err)
		}
		inProcess, err := Record(t.Context(), sc, Composition, t.TempDir(), testLogger(t))
		if err != nil {
			t.Fatal(err)
		}
		for _, c := range []struct {
			what      string
			got, want []byte
		}{
			{"wire", viaBinary.Wire, inProcess.Wire},
			{"sessions", viaBinary.Sessions, inProcess.Sessions},
		} {
			if !bytes.Equal(c.got, c.want) {
				t.Errorf("%s: %s through the binary differs from the in-process run:\n%s", name, c.what, goldie.Diff(goldie.ClassicDiff, string(c.got), string(c.want)))
			}
		}
	}
}
