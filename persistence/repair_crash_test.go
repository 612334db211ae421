package persistence

import (
	"bytes"
	"context"
	"fmt"
	"log/slog"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
)

// repairChildEnv runs the test binary as a repairer of session s1 in the
// named directory that SIGKILLs itself at storage step
// $PERSISTENCE_TEST_REPAIR_KILL_AT (0: never; it prints the step count).
const repairChildEnv = "PERSISTENCE_TEST_REPAIR_DIR"

func repairChild(dir string) int {
	at, _ := strconv.Atoi(os.Getenv("PERSISTENCE_TEST_REPAIR_KILL_AT"))
	steps := 0
	ps, err := Open(dir, Options{Logger: slog.New(slog.DiscardHandler), Fault: func(FaultPoint) {
		if steps++; steps == at {
			syscall.Kill(os.Getpid(), syscall.SIGKILL)
			select {}
		}
	}})
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 4
	}
	defer ps.Close()
	plan, err := ps.PlanRepair(context.Background(), "s1")
	if err == nil {
		_, err = ps.Repair(context.Background(), "s1", plan)
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 4
	}
	fmt.Printf("steps %d\n", steps)
	return 0
}

// TestRepairCrashSafe kills the repairing process at every storage step
// of a repair: each outcome is the old log or the new one, every file
// under a backup's real name holds the whole damaged log, and a repair
// run afterwards finishes the job.
func TestRepairCrashSafe(t *testing.T) {
	base := t.TempDir()
	path, lines, _ := longSession(t, base)
	lines[40] = bytes.Repeat([]byte("x"), len(lines[40]))
	damaged := append(bytes.Join(lines, []byte("\n")), '\n')
	writeBytes(t, path, damaged)

	run := func(dir string, at int) (string, bool) {
		cmd := exec.Command(os.Args[0], "-test.run=^$")
		cmd.Env = append(os.Environ(), repairChildEnv+"="+dir, "PERSISTENCE_TEST_REPAIR_KILL_AT="+strconv.Itoa(at))
		out, err := cmd.Output()
		ws, _ := cmd.ProcessState.Sys().(syscall.WaitStatus)
		if err != nil && !ws.Signaled() {
			t.Fatalf("repairer at %d: %v", at, err)
		}
		return string(out), ws.Signaled()
	}
	copyTo := func(name string) (string, string) {
		dir := filepath.Join(t.TempDir(), name)
		if err := os.MkdirAll(filepath.Join(dir, "sessions"), 0o700); err != nil {
			t.Fatal(err)
		}
		p := filepath.Join(dir, "sessions", "s1.jsonl")
		writeBytes(t, p, damaged)
		return dir, p
	}
	// Calibration: the whole repair, its steps and its result.
	calib, p := copyTo("calibration")
	out, killed := run(calib, 0)
	var steps int
	if _, err := fmt.Sscanf(out, "steps %d", &steps); err != nil || killed || steps < 5 {
		t.Fatalf("calibration: %q killed %v", out, killed)
	}
	repaired := readBytes(t, p)
	if bytes.Equal(repaired, damaged) {
		t.Fatal("calibration repair changed nothing")
	}
	sawOld, sawNew := 0, 0
	for at := 1; at <= steps; at++ {
		dir, p := copyTo(fmt.Sprintf("kill-%d", at))
		// The summary names the backup, whose path holds the directory.
		repaired := bytes.ReplaceAll(repaired, []byte(calib), []byte(dir))
		if _, killed := run(dir, at); !killed {
			t.Errorf("step %d: the repairer was not killed", at)
		}
		switch got := readBytes(t, p); {
		case bytes.Equal(got, damaged):
			sawOld++
		case bytes.Equal(got, repaired):
			sawNew++
		default:
			t.Errorf("step %d: the log is neither the old one nor the repaired one (%d bytes)", at, len(got))
		}
		checkBackups(t, filepath.Dir(p), damaged, at)
		// Whatever the kill left, a new repair finishes the job.
		if got := readBytes(t, p); bytes.Equal(got, damaged) {
			if out, killed := run(dir, 0); killed || !strings.HasPrefix(out, "steps") {
				t.Errorf("step %d: the repair after the kill failed: %q", at, out)
			}
			checkBackups(t, filepath.Dir(p), damaged, at)
			if got := readBytes(t, p); !bytes.Contains(got, []byte(`"type":"session/repaired"`)) {
				t.Errorf("step %d: the repair after the kill did not repair", at)
			}
		}
	}
	t.Logf("%d storage steps; killed with the old log at %d, with the new one at %d", steps, sawOld, sawNew)
	if sawOld == 0 || sawNew == 0 {
		t.Errorf("the kill points did not cover both sides of the rename")
	}
}

// checkBackups: every file under a backup's real name is the whole
// damaged log.
func checkBackups(t *testing.T, dir string, damaged []byte, at int) {
	t.Helper()
	names, _ := filepath.Glob(filepath.Join(dir, "s1.jsonl.broken*"))
	for _, n := range names {
		if strings.Contains(n, ".tmp-") {
			continue // a temp a kill left: not a backup's name
		}
		if got := readBytes(t, n); !bytes.Equal(got, damaged) {
			t.Errorf("step %d: backup %s is not whole (%d of %d bytes)", at, filepath.Base(n), len(got), len(damaged))
		}
	}
}
