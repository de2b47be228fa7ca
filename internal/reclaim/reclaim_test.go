package reclaim

import (
	"context"
	"runtime/debug"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"
)

var sink []byte

// burst allocates n MiB of garbage with the collector off, so that all of
// it is still held when it ends.
func burst(n int) {
	for range n * 16 {
		sink = make([]byte, 64<<10)
	}
	sink = nil
}

// After a burst of allocation, once the program is quiet, Run collects
// and returns the memory the burst left, once; while the program keeps
// allocating, it does not.
func TestRunAfterBurst(t *testing.T) {
	defer debug.SetGCPercent(debug.SetGCPercent(-1))
	synctest.Test(t, func(t *testing.T) {
		var frees atomic.Int32
		ctx, cancel := context.WithCancel(t.Context())
		done := make(chan struct{})
		go func() {
			Run(ctx, &Options{Free: func() { frees.Add(1); debug.FreeOSMemory() }})
			close(done)
		}()
		synctest.Wait() // Run has read the heap: what follows is since
		// Busy: more than Quiet allocated between every two looks.
		for range 5 {
			burst(4)
			time.Sleep(DefaultEvery)
			synctest.Wait()
		}
		if n := frees.Load(); n != 0 {
			t.Errorf("%d collections while allocating", n)
		}
		// Quiet: the burst's garbage is collected and returned, once.
		time.Sleep(5 * DefaultEvery)
		synctest.Wait()
		if n := frees.Load(); n != 1 {
			t.Errorf("%d collections once quiet, want 1", n)
		}
		cancel()
		<-done
	})
}

// Run returns the memory to the system: what the heap holds beyond its
// live objects falls from the burst's size below Min.
func TestRunReturnsMemory(t *testing.T) {
	defer debug.SetGCPercent(debug.SetGCPercent(-1))
	synctest.Test(t, func(t *testing.T) {
		burst(32)
		var h heap
		h.read()
		if h.spare() < 16<<20 {
			t.Fatalf("the burst left %d bytes beyond the live heap", h.spare())
		}
		ctx, cancel := context.WithCancel(t.Context())
		done := make(chan struct{})
		go func() { Run(ctx, nil); close(done) }()
		time.Sleep(3 * DefaultEvery)
		synctest.Wait()
		cancel()
		<-done
		h.read()
		if s := h.spare(); s >= DefaultMin {
			t.Errorf("%d bytes beyond the live heap after Run", s)
		}
	})
}
