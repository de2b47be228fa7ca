package bench

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"agentd/internal/agent"
)

// A soak: agentd serve under a steady load for a long time, its memory
// read as it goes: does it stay flat?

// SoakOptions say how Soak runs.
type SoakOptions struct {
	// Duration is how long the load runs. Required.
	Duration time.Duration
	// Rate is the turns a second sent. Default 10.
	Rate float64
	// Every is how often memory is read. Default Duration/20, at least
	// 1 s and at most a minute.
	Every time.Duration
	// Warmup is the part of the run after which memory should stay flat:
	// the summary compares the last sample with the first after it.
	// Default 5 minutes, at most Duration/5.
	Warmup time.Duration
	// JSON prints each sample, and the summary, as a JSON line instead of
	// a table row.
	JSON bool
	// Synchronous and Executable are as in Options.
	Synchronous, Executable string
}

// SoakSample is the daemon's memory at one moment of a soak.
type SoakSample struct {
	ElapsedS float64 `json:"elapsed_s"`
	Turns    int64   `json:"turns"`
	Errors   int64   `json:"errors"`
	RSSMB    float64 `json:"rss_mb"`
	AnonMB   float64 `json:"anon_mb"` // RssAnon: what is not pages of the binary or of files
	GoHeapMB float64 `json:"go_heap_mb"`
	SQLiteMB float64 `json:"sqlite_mb"` // sqlite3_memory_used
}

// SoakSummary is how the daemon's memory moved after the warm-up.
type SoakSummary struct {
	Turns         int64   `json:"turns"`
	Errors        int64   `json:"errors"`
	TurnsPerS     float64 `json:"turns_per_s"`
	WarmupS       float64 `json:"warmup_s"`
	RSSStartMB    float64 `json:"rss_start_mb"` // the first sample after the warm-up
	RSSEndMB      float64 `json:"rss_end_mb"`
	RSSGrowthPct  float64 `json:"rss_growth_pct"`
	HeapGrowthPct float64 `json:"go_heap_growth_pct"`
}

func (o *SoakOptions) withDefaults() (SoakOptions, error) {
	d := *o
	if d.Duration <= 0 {
		return d, errors.New("bench: soak: a duration is needed")
	}
	if d.Rate <= 0 {
		d.Rate = 10
	}
	if d.Every <= 0 {
		d.Every = min(max(d.Duration/20, time.Second), time.Minute)
	}
	if d.Warmup <= 0 {
		d.Warmup = min(5*time.Minute, d.Duration/5)
	}
	err := daemonDefaults(&d.Synchronous, &d.Executable)
	return d, err
}

// Soak runs agentd serve (agentd init's agent, its model the fake, SQLite
// counting its memory) under o.Rate turns a second over TCP, each session
// 20 turns long, for o.Duration, and writes its memory to w every o.Every:
// RSS, the anonymous part of it, the Go heap and SQLite's own (from
// /metrics); then a summary of how RSS moved after the warm-up.
func Soak(ctx context.Context, o *SoakOptions, w io.Writer) error {
	so, err := o.withDefaults()
	if err != nil {
		return err
	}
	base, stopFake, err := startFake(ctx, "bench", fakeScript)
	if err != nil {
		return err
	}
	defer stopFake()
	root, err := os.MkdirTemp("", "agentd-soak-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(root)
	dir := filepath.Join(root, "data")
	if err := writeAPIData(dir, base, so.Synchronous); err != nil {
		return err
	}
	srv, err := startServe(ctx, so.Executable, dir, "--sqlite-memory-status")
	if err != nil {
		return err
	}
	defer srv.stop()
	tok, err := gatewayToken(dir)
	if err != nil {
		return err
	}
	auth := http.Header{"Authorization": {"Bearer " + tok}}
	hc := &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: 64}}
	post := newPoster(srv.base(), auth, hc)

	lctx, stopLoad := context.WithTimeout(ctx, so.Duration)
	defer stopLoad()
	var turns, errs atomic.Int64
	var wg sync.WaitGroup
	load(lctx, &wg, so.Rate, func(ctx context.Context, i int64) {
		if err := post(ctx, fmt.Sprintf("%s/soak-%d", agent.BuiltinAgentID, i/20), "hello"); err != nil {
			if ctx.Err() == nil {
				errs.Add(1)
			}
			return
		}
		turns.Add(1)
	})

	out := newSoakWriter(w, so.JSON)
	var samples []SoakSample
	t0 := time.Now()
	tick := time.NewTicker(so.Every)
	defer tick.Stop()
	for done := false; !done; {
		select {
		case <-tick.C:
		case <-lctx.Done():
			done = true
			wg.Wait()
			if n := len(samples); n > 0 && time.Since(t0).Seconds()-samples[n-1].ElapsedS < so.Every.Seconds()/2 {
				continue // the last sample was taken just now
			}
		}
		s := SoakSample{ElapsedS: time.Since(t0).Seconds(), Turns: turns.Load(), Errors: errs.Load(),
			RSSMB: rssMB(srv.pid()), AnonMB: statusMB(srv.pid(), "RssAnon")}
		s.GoHeapMB, s.SQLiteMB = scrapeMemory(ctx, hc, srv.base(), auth)
		samples = append(samples, s)
		if err := out.sample(s); err != nil {
			return err
		}
	}
	if ctx.Err() != nil {
		return ctx.Err()
	}
	return out.summary(summarize(samples, so.Warmup))
}

// load calls f at rate times a second, the i-th call with i, until ctx
// ends; calls that the ones before have not left room for are skipped, so
// that a daemon that cannot keep up gets the rate it can take.
func load(ctx context.Context, wg *sync.WaitGroup, rate float64, f func(ctx context.Context, i int64)) {
	const workers = 64
	ticks := make(chan int64, workers)
	for range workers {
		wg.Go(func() {
			for i := range ticks {
				f(ctx, i)
			}
		})
	}
	wg.Go(func() {
		defer close(ticks)
		t := time.NewTicker(time.Duration(float64(time.Second) / rate))
		defer t.Stop()
		for i := int64(0); ; {
			select {
			case <-ctx.Done():
				return
			case <-t.C:
				select {
				case ticks <- i:
					i++
				default:
				}
			}
		}
	})
}

// scrapeMemory reads the Go heap and SQLite's memory, in MiB, from the
// /metrics of the API at base; 0 for what it cannot read.
func scrapeMemory(ctx context.Context, hc *http.Client, base string, auth http.Header) (goHeap, sqlite float64) {
	req, err := http.NewRequestWithContext(ctx, "GET", base+"/metrics", nil)
	if err != nil {
		return 0, 0
	}
	req.Header = auth.Clone()
	resp, err := hc.Do(req)
	if err != nil {
		return 0, 0
	}
	defer resp.Body.Close()
	sc := bufio.NewScanner(resp.Body)
	for sc.Scan() {
		name, v, ok := strings.Cut(sc.Text(), " ")
		if !ok {
			continue
		}
		f, err := strconv.ParseFloat(v, 64)
		if err != nil {
			continue
		}
		switch name {
		case "go_memstats_heap_alloc_bytes":
			goHeap = f / (1 << 20)
		case "agentd_sqlite_memory_bytes":
			sqlite = f / (1 << 20)
		}
	}
	return goHeap, sqlite
}

// summarize compares the last sample with the first one taken after the
// warm-up (the first one if none was).
func summarize(samples []SoakSample, warmup time.Duration) SoakSummary {
	first, last := samples[0], samples[len(samples)-1]
	for _, s := range samples {
		if s.ElapsedS >= warmup.Seconds() {
			first = s
			break
		}
	}
	growth := func(a, b float64) float64 {
		if a <= 0 {
			return 0
		}
		return (b - a) / a * 100
	}
	sum := SoakSummary{Turns: last.Turns, Errors: last.Errors, WarmupS: first.ElapsedS, RSSStartMB: first.RSSMB, RSSEndMB: last.RSSMB,
		RSSGrowthPct: growth(first.RSSMB, last.RSSMB), HeapGrowthPct: growth(first.GoHeapMB, last.GoHeapMB)}
	if last.ElapsedS > 0 {
		sum.TurnsPerS = float64(last.Turns) / last.ElapsedS
	}
	return sum
}

// soakWriter writes a soak's samples as they come, as table rows or JSON
// lines.
type soakWriter struct {
	w      io.Writer
	enc    *json.Encoder
	header bool
}

func newSoakWriter(w io.Writer, asJSON bool) *soakWriter {
	if asJSON {
		return &soakWriter{w: w, enc: json.NewEncoder(w)}
	}
	return &soakWriter{w: w}
}

// sample writes a row as soon as it is measured, in columns of a fixed
// width (a table writer would wait for the last row).
func (s *soakWriter) sample(x SoakSample) error {
	if s.enc != nil {
		return s.enc.Encode(x)
	}
	if !s.header {
		fmt.Fprintf(s.w, "%9s %9s %7s %8s %8s %10s %10s\n", "ELAPSED_S", "TURNS", "ERRORS", "RSS_MB", "ANON_MB", "GO_HEAP_MB", "SQLITE_MB")
		s.header = true
	}
	_, err := fmt.Fprintf(s.w, "%9.0f %9d %7d %8.1f %8.1f %10.1f %10.1f\n", x.ElapsedS, x.Turns, x.Errors, x.RSSMB, x.AnonMB, x.GoHeapMB, x.SQLiteMB)
	return err
}

func (s *soakWriter) summary(x SoakSummary) error {
	if s.enc != nil {
		return s.enc.Encode(map[string]SoakSummary{"summary": x})
	}
	_, err := fmt.Fprintf(s.w, "%d turns (%.1f/s), %d errors; after the warm-up (%.0f s) RSS %.1f → %.1f MB (%+.1f %%), Go heap %+.1f %%\n",
		x.Turns, x.TurnsPerS, x.Errors, x.WarmupS, x.RSSStartMB, x.RSSEndMB, x.RSSGrowthPct, x.HeapGrowthPct)
	return err
}
