package runtime

import (
	"context"
	"fmt"
)

// Stop stops a session's agent for good: it cancels the running turn (as
// Cancel does, on another node too on a shared store), refuses every
// queued input with "the agent was stopped", logs a "stopped" marker and
// leaves the session closed. Stopping a stopped session changes nothing.
// A session that does not exist is store.ErrNotFound.
func (r *Runtime) Stop(ctx context.Context, addr, reason string) error {
	return fmt.Errorf("runtime: stop %s: not implemented", addr)
}
