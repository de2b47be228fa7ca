package runtime

import (
	"context"
	"sync"
	"time"
)

// turnGate keeps the turns not yet started from starting while anyone holds
// it (Runtime.Hold): a burst of inputs is accepted before its first turns
// take the CPU its later inputs need. ch is nil while nobody holds it,
// and is closed, to let the waiting turns start, when the last holder
// lets go.
type turnGate struct {
	mu sync.Mutex
	n  int
	ch chan struct{}
}

// Hold keeps the turns that have not started yet (of every session) from
// starting until release is called or max has passed, whichever comes
// first; turns under way go on, and inputs are accepted as ever. Holds
// nest: the turns start once every holder has let go. release may be
// called more than once. The Scheduler holds the turns while it accepts
// a burst of job fires.
func (r *Runtime) Hold(max time.Duration) (release func()) {
	h := &r.gate
	h.mu.Lock()
	if h.n == 0 {
		h.ch = make(chan struct{})
	}
	h.n++
	h.mu.Unlock()
	release = sync.OnceFunc(func() {
		h.mu.Lock()
		defer h.mu.Unlock()
		if h.n--; h.n == 0 {
			close(h.ch)
			h.ch = nil
		}
	})
	time.AfterFunc(max, release) // a no-op once let go
	return release
}

// wait returns once the turns are not held (at once if they are not),
// false if ctx ended first.
func (h *turnGate) wait(ctx context.Context) bool {
	h.mu.Lock()
	ch := h.ch
	h.mu.Unlock()
	if ch == nil {
		return true
	}
	select {
	case <-ch:
		return true
	case <-ctx.Done():
		return false
	}
}
