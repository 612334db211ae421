package local

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/acp-agent/acp-agent/internal/proctest"
)

// zombieChildren lists this process's children that have exited and wait
// to be reaped.
func zombieChildren() []int {
	entries, _ := os.ReadDir("/proc")
	self := strconv.Itoa(os.Getpid())
	var out []int
	for _, e := range entries {
		if f, ok := procStat(e.Name()); ok && len(f) > 1 && f[1] == self && f[0] == "Z" {
			pid, _ := strconv.Atoi(e.Name())
			out = append(out, pid)
		}
	}
	return out
}

// While this process adopts orphans, os/exec still gets the status of its
// own children (none is reaped under it), orphans that exit are reaped,
// and those still alive when it stops adopting are killed, with what they
// started.
func TestAdoptOrphans(t *testing.T) {
	stop, err := AdoptOrphans()
	if err != nil {
		t.Skip(err)
	}
	stopped := false
	defer func() {
		if !stopped {
			stop()
		}
	}()
	dir := t.TempDir()
	var wg sync.WaitGroup
	errs := make(chan error, 100)
	for i := range 20 {
		wg.Add(2)
		go func() {
			defer wg.Done()
			// An orphan that exits at once: reaped here.
			errs <- exec.Command("sh", "-c", "sleep 0.01 & exit 0").Run()
		}()
		go func() {
			defer wg.Done()
			err := exec.Command("sh", "-c", "exit "+strconv.Itoa(i%3)).Run()
			if code := 0; err != nil {
				ee, ok := err.(*exec.ExitError)
				if !ok {
					errs <- err // ECHILD: its status was stolen
					return
				}
				code = ee.ExitCode()
				if code != i%3 {
					errs <- ee
				}
			} else if i%3 != 0 {
				errs <- exec.ErrNotFound
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		if err != nil {
			t.Errorf("a child of os/exec: %v", err)
		}
	}
	for deadline := time.Now().Add(10 * time.Second); len(zombieChildren()) > 0; time.Sleep(5 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("zombies left: %v", zombieChildren())
		}
	}

	// A child of os/exec that exited before anyone waits for it is not
	// reaped by a pass over the zombies.
	late := exec.Command("sh", "-c", "exit 5")
	if err := late.Start(); err != nil {
		t.Fatal(err)
	}
	for deadline := time.Now().Add(10 * time.Second); !slices.Contains(zombieChildren(), late.Process.Pid); time.Sleep(time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatal("the child never exited")
		}
	}
	reapOrphans()
	if err := late.Wait(); err == nil || late.ProcessState == nil || late.ProcessState.ExitCode() != 5 {
		t.Errorf("Wait of a child that exited first: %v, want exit status 5", err)
	}

	// An orphan alive, with a child of its own, when adopting stops.
	pidFile := filepath.Join(dir, "pids")
	if err := exec.Command("sh", "-c", "setsid env -i sh -c 'sleep 60 & echo $$ $! > "+pidFile+".tmp; wait' & "+
		"while [ ! -s "+pidFile+".tmp ]; do sleep 0.01; done; mv "+pidFile+".tmp "+pidFile).Run(); err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(pidFile)
	if err != nil {
		t.Fatal(err)
	}
	var orphan, child int
	if _, err := fmt.Sscan(string(b), &orphan, &child); err != nil {
		t.Fatal(err)
	}
	if proctest.Gone(orphan) || proctest.Gone(child) {
		t.Fatal("the orphan is not running")
	}
	stop()
	stopped = true
	for _, pid := range []int{orphan, child} {
		if !proctest.Gone(pid) {
			_ = syscall.Kill(pid, syscall.SIGKILL)
			t.Errorf("adopted process %d outlived the end of adopting", pid)
		}
	}
	if z := zombieChildren(); len(z) > 0 {
		t.Errorf("zombies left: %v", z)
	}
}
