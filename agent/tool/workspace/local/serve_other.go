//go:build !linux

package local

import (
	"context"
	"os"
	"os/exec"
	"time"
)

// serveCommand: there is no reaper server where there is no reaper.
func serveCommand(context.Context, *Running, *exec.Cmd, string, time.Duration, *os.File) (launched, bool, error) {
	return nil, false, nil
}
