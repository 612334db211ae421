package openai

import (
	"context"
	"time"

	"github.com/acp-agent/acp-agent/agent/model/idle"
)

// DefaultIdleTimeout is the idle timeout when Config.IdleTimeout is 0.
const DefaultIdleTimeout = idle.Default

// newWatchdog starts the idle watchdog of one attempt (package idle).
func newWatchdog(ctx context.Context, d time.Duration) *idle.Watchdog { return idle.New(ctx, d) }
