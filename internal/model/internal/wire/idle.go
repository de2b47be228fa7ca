package wire

import (
	"fmt"
	"io"
	"time"
)

// stalled is the cause a response's context is cancelled with when nothing
// of it arrived for its idle timeout.
type stalled struct{ idle time.Duration }

func (s *stalled) Error() string {
	return fmt.Sprintf("the response stalled: nothing arrived for %s (idle timeout)", s.idle)
}

// idleReader reads a response body and cancels the response when a read
// waits longer than idle for data: each read that returns data restarts
// the clock. It is read and stopped by one goroutine.
type idleReader struct {
	r     io.Reader
	idle  time.Duration
	timer *time.Timer
}

// watch starts the clock on r; cancel ends the response with a *stalled
// cause. The caller must call stop when done reading.
func watch(r io.Reader, idle time.Duration, cancel func(error)) *idleReader {
	w := &idleReader{r: r, idle: idle}
	w.timer = time.AfterFunc(idle, func() { cancel(&stalled{idle}) })
	return w
}

func (w *idleReader) Read(p []byte) (int, error) {
	n, err := w.r.Read(p)
	if n > 0 {
		// A timer that already fired has cancelled the response; Reset
		// then only starts a clock that fires into a cancelled context.
		w.timer.Reset(w.idle)
	}
	return n, err
}

// stop stops the clock.
func (w *idleReader) stop() { w.timer.Stop() }
