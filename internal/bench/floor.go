package bench

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"sync"
	"sync/atomic"
	"time"
)

// Floors: what the machine allows, measured in the same run as agentd's
// figures so that each figure can be given as a ratio to its floor. They
// are bare Go programs doing the least a figure's work needs: a round trip
// to the fake model, one fsync, an HTTP relay in front of the fake model
// (floorserver.go), a WebSocket broadcast.

// bareRequest is a chat completion with nothing but one message: what the
// floors send to the fake model.
var bareRequest = []byte(`{"model":"fake","stream":true,"messages":[{"role":"user","content":"hello"}]}`)

// completer posts bareRequest to base (…/v1) and reads the stream to its end.
func completer(base string) func(ctx context.Context) error {
	hc := &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: 512}}
	url := base + "/chat/completions"
	return func(ctx context.Context) error {
		req, err := http.NewRequestWithContext(ctx, "POST", url, bytes.NewReader(bareRequest))
		if err != nil {
			return err
		}
		req.Header.Set("Content-Type", "application/json")
		resp, err := hc.Do(req)
		if err != nil {
			return err
		}
		defer resp.Body.Close()
		if _, err := io.Copy(io.Discard, resp.Body); err != nil {
			return err
		}
		if resp.StatusCode != 200 {
			return fmt.Errorf("%s", resp.Status)
		}
		return nil
	}
}

// timeEach runs f n times, one after the other, and returns each time.
func timeEach(ctx context.Context, n int, f func(ctx context.Context, i int) error) ([]time.Duration, error) {
	lat := make([]time.Duration, 0, n)
	for i := 0; i < n; i++ {
		t0 := time.Now()
		if err := f(ctx, i); err != nil {
			return nil, err
		}
		lat = append(lat, time.Since(t0))
	}
	return lat, nil
}

// perSecond runs f n times from workers goroutines at once and returns
// how many it ran a second.
func perSecond(ctx context.Context, n, workers int, f func(ctx context.Context, worker, i int) error) (float64, error) {
	var next atomic.Int64
	var first atomic.Value
	var wg sync.WaitGroup
	t0 := time.Now()
	for w := 0; w < workers; w++ {
		wg.Go(func() {
			for k := 0; ; k++ {
				i := next.Add(1) - 1
				if i >= int64(n) {
					return
				}
				if err := f(ctx, w, k); err != nil {
					first.CompareAndSwap(nil, err)
					return
				}
			}
		})
	}
	wg.Wait()
	if err, _ := first.Load().(error); err != nil {
		return 0, err
	}
	return float64(n) / time.Since(t0).Seconds(), nil
}

// runFloors measures the floors of the bench's own process: a bare round
// trip to the fake model at base, the fake model's rate at 100 requests at
// once, and an fsync on the disk of dir.
func runFloors(ctx context.Context, dir, base string, res *Result, c config) error {
	post := completer(base)
	lat, err := timeEach(ctx, c.rtts, func(ctx context.Context, _ int) error { return post(ctx) })
	if err != nil {
		return fmt.Errorf("bench: floor: round trip: %w", err)
	}
	res.FloorRTTms = pct(lat, 50)
	if res.FloorModelPerS, err = perSecond(ctx, c.throughputTurns, c.concurrency,
		func(ctx context.Context, _, _ int) error { return post(ctx) }); err != nil {
		return fmt.Errorf("bench: floor: model rate: %w", err)
	}
	if res.FloorFsyncMS, err = fsyncP50(dir, c.fsyncs); err != nil {
		return err
	}
	return nil
}

// fsyncP50 appends 4 KiB to a file in dir and syncs it, n times, as a
// write-ahead log's commit does, and returns the median time of one.
func fsyncP50(dir string, n int) (float64, error) {
	f, err := os.OpenFile(filepath.Join(dir, "fsync.floor"), os.O_WRONLY|os.O_CREATE|os.O_APPEND, 0o600)
	if err != nil {
		return 0, fmt.Errorf("bench: floor: fsync: %w", err)
	}
	defer os.Remove(f.Name())
	defer f.Close()
	page := make([]byte, 4096)
	var lat []time.Duration
	for i := 0; i < n; i++ {
		t0 := time.Now()
		if _, err := f.Write(page); err != nil {
			return 0, fmt.Errorf("bench: floor: fsync: %w", err)
		}
		if err := f.Sync(); err != nil {
			return 0, fmt.Errorf("bench: floor: fsync: %w", err)
		}
		lat = append(lat, time.Since(t0))
	}
	return pct(lat, 50), nil
}

// runRelayFloor measures the relay floor: a bare Go HTTP relay
// (floorserver.go) in a process of its own in front of the fake model at
// base: its start, a round trip through it, requests a second through it
// at 1, 16 and 100 at once, its CPU per request and its memory after.
func runRelayFloor(ctx context.Context, base string, res *Result, c config) (*floorServer, error) {
	var starts []time.Duration
	var fs *floorServer
	for range 5 {
		if fs != nil {
			fs.stop()
		}
		var err error
		if fs, err = startFloorServer(ctx, c.exe, base); err != nil {
			return nil, err
		}
		starts = append(starts, fs.h.started)
	}
	res.FloorStartMS = pct(starts, 50)
	time.Sleep(c.settle)
	res.FloorIdleRSSMB = rssMB(fs.h.pid())
	post := completer(fs.base + "/v1")
	lat, err := timeEach(ctx, c.rtts, func(ctx context.Context, _ int) error { return post(ctx) })
	if err != nil {
		fs.stop()
		return nil, fmt.Errorf("bench: floor: relay: %w", err)
	}
	res.FloorRelayMS = pct(lat, 50)
	rate := func(n, workers int) (float64, error) {
		return perSecond(ctx, n, workers, func(ctx context.Context, _, _ int) error { return post(ctx) })
	}
	if res.FloorRelayPerS1, err = rate(c.api1, 1); err == nil {
		if res.FloorRelayPerS16, err = rate(c.api16, 16); err == nil {
			cpu0 := cpuTime(fs.h.pid())
			res.FloorRelayPerS, err = rate(c.api100, c.concurrency)
			res.FloorRelayCPUms = ms(cpuTime(fs.h.pid())-cpu0) / float64(c.api100)
		}
	}
	if err != nil {
		fs.stop()
		return nil, fmt.Errorf("bench: floor: relay rate: %w", err)
	}
	res.FloorRelayRSSMB = rssMB(fs.h.pid())
	return fs, nil
}
