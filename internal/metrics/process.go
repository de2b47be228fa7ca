package metrics

import (
	"bufio"
	"bytes"
	"math"
	"os"
	"runtime"
	"runtime/metrics"
	"strconv"
	"time"
)

// Go runtime figures read on each scrape (runtime/metrics: no stop of the
// world, unlike runtime.ReadMemStats).
const (
	heapObjects = "/memory/classes/heap/objects:bytes"
	totalMemory = "/memory/classes/total:bytes"
)

// writeProcess writes the Go and process figures: uptime, start time,
// resident memory (Linux: /proc/self/statm), goroutines, heap in use and
// memory obtained from the OS.
func writeProcess(w *bufio.Writer, start time.Time) {
	gauge := func(name, help string, v float64) {
		writeHeader(w, name, typeGauge, help)
		writeSample(w, name, nil, nil, "", v)
	}
	gauge("agentd_uptime_seconds", "Seconds since agentd started.", time.Since(start).Seconds())
	gauge("process_start_time_seconds", "Start time of the process since the Unix epoch, in seconds.", float64(start.UnixNano())/1e9)
	if rss, ok := residentBytes(); ok {
		gauge("process_resident_memory_bytes", "Resident memory size in bytes.", float64(rss))
	}
	gauge("go_goroutines", "Number of goroutines that currently exist.", float64(runtime.NumGoroutine()))
	samples := []metrics.Sample{{Name: heapObjects}, {Name: totalMemory}}
	metrics.Read(samples)
	if v := samples[0].Value; v.Kind() == metrics.KindUint64 {
		gauge("go_memstats_heap_alloc_bytes", "Heap bytes allocated and still in use.", float64(v.Uint64()))
	}
	if v := samples[1].Value; v.Kind() == metrics.KindUint64 {
		gauge("go_memstats_sys_bytes", "Bytes of memory obtained from the OS.", float64(v.Uint64()))
	}
}

// residentBytes reads the resident set size from /proc/self/statm (its
// second field, in pages).
func residentBytes() (int64, bool) {
	b, err := os.ReadFile("/proc/self/statm")
	if err != nil {
		return 0, false
	}
	return parseStatm(b, os.Getpagesize())
}

// parseStatm returns the resident bytes of a statm line: "size resident
// shared text lib data dt", in pages.
func parseStatm(b []byte, pageSize int) (int64, bool) {
	f := bytes.Fields(b)
	if len(f) < 2 {
		return 0, false
	}
	pages, err := strconv.ParseInt(string(f[1]), 10, 64)
	if err != nil || pages < 0 || pageSize <= 0 || pages > math.MaxInt64/int64(pageSize) {
		return 0, false
	}
	return pages * int64(pageSize), true
}
