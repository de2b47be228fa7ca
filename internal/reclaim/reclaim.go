// Package reclaim gives memory back to the operating system once a burst
// of work is over. The Go runtime keeps the heap a burst grew to until
// allocation resumes (it collects only then, or every two minutes) and
// returns free pages only slowly, so a daemon that answers a burst and
// then waits would go on holding the burst's memory. Run notices the
// quiet that follows and collects and returns what the burst left at
// once; under steady work it does nothing.
//
// It leaves the pages of agentd's own executable alone: they are counted
// in its resident memory once touched, but they are clean pages of the
// page cache, shared and reclaimable by the kernel; unmapping them would
// make the figure smaller without freeing anything, and cost page faults
// at the next request.
package reclaim

import (
	"context"
	"runtime/debug"
	"runtime/metrics"
	"time"
)

// Options configure Run. nil gives the defaults.
type Options struct {
	// Every is how often Run looks; default DefaultEvery.
	Every time.Duration
	// Quiet is how much the program may allocate between two looks and
	// still count as quiet; default DefaultQuiet.
	Quiet uint64
	// Min is how much memory the heap must hold beyond its live objects
	// (dead objects not yet collected, and free pages not yet returned) to
	// be worth collecting and returning; default DefaultMin.
	Min uint64
	// Free collects and returns memory to the system; nil:
	// debug.FreeOSMemory. Tests count calls with it.
	Free func()
}

// Defaults.
const (
	DefaultEvery        = 250 * time.Millisecond
	DefaultQuiet uint64 = 64 << 10
	DefaultMin   uint64 = 4 << 20
)

// Run looks every o.Every until ctx is done, and returns nil then. When
// the program allocated less than o.Quiet since the last look and the
// heap holds o.Min or more beyond its live objects, it collects and
// returns the free memory to the system (a full collection: a few
// milliseconds of CPU for a heap of ten megabytes).
func Run(ctx context.Context, o *Options) error {
	var opt Options
	if o != nil {
		opt = *o
	}
	if opt.Every <= 0 {
		opt.Every = DefaultEvery
	}
	if opt.Quiet == 0 {
		opt.Quiet = DefaultQuiet
	}
	if opt.Min == 0 {
		opt.Min = DefaultMin
	}
	if opt.Free == nil {
		opt.Free = debug.FreeOSMemory
	}
	t := time.NewTicker(opt.Every)
	defer t.Stop()
	var h heap
	h.read()
	last := h.allocs
	for {
		select {
		case <-ctx.Done():
			return nil
		case <-t.C:
		}
		h.read()
		quiet := h.allocs-last < opt.Quiet
		last = h.allocs
		if quiet && h.spare() >= opt.Min {
			opt.Free()
			h.read()
			last = h.allocs
		}
	}
}

// heap is what Run reads of the Go heap.
type heap struct {
	samples [4]metrics.Sample
	allocs  uint64
}

func (h *heap) read() {
	if h.samples[0].Name == "" {
		for i, name := range []string{"/gc/heap/allocs:bytes", "/memory/classes/heap/objects:bytes",
			"/memory/classes/heap/free:bytes", "/gc/heap/live:bytes"} {
			h.samples[i].Name = name
		}
	}
	metrics.Read(h.samples[:])
	h.allocs = h.value(0)
}

func (h *heap) value(i int) uint64 {
	if v := h.samples[i].Value; v.Kind() == metrics.KindUint64 {
		return v.Uint64()
	}
	return 0
}

// spare is the memory the heap holds beyond its live objects: dead objects
// not yet collected and free pages not yet returned.
func (h *heap) spare() uint64 {
	objects, free, live := h.value(1), h.value(2), h.value(3)
	if objects < live {
		return free
	}
	return objects - live + free
}
