// Package bench measures agentd end to end, as `agentd bench` reports it:
// what a client sees (turns through the HTTP API of an agentd serve child,
// over TCP and the local socket, its throughput, CPU and memory, a one-shot
// agentd send, WebSocket fan-out to clients in a process of their own), each
// beside its floor, a bare Go program doing the least the figure's work
// needs, measured in the same run; and the breakdown: turns in process
// against the fake model, the tool layer (MCP round trips, dispatch, the
// message lifecycle), history search, recall and context assembly, the
// gateway. Soak runs a steady load and follows the daemon's memory. The
// figures in docs/performance.md come from a full Run.
package bench

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"agentd/internal/app"
	"agentd/internal/model"
	"agentd/internal/model/openai"
	"agentd/internal/runtime"
)

// Options say how Run measures.
type Options struct {
	// Quick runs smaller counts, for CI. Default false: the full counts.
	Quick bool
	// InProcessOnly skips the figures that start agentd serve as a child
	// process. Default false.
	InProcessOnly bool
	// Synchronous is the store's synchronous mode: "full", durable on power
	// loss, or "normal", to see what durability costs. Default "full".
	Synchronous string
	// Executable is the agentd binary whose serve, version and mcp demo
	// commands are measured. Default: the running executable.
	Executable string
	// Version is agentd's version, as the Result and the MCP client give
	// it. Default "".
	Version string
}

// config is one run's counts and options.
type config struct {
	turns, concurrency, throughputTurns, sessions, growthTurns, rtts int
	subscribers, fanoutEvents, idleConns                             int
	// The API figures (api.go): turns of each latency run, warm-up turns
	// of each agent, turns of the runs at 1, 16 and 100 sessions (all of
	// them add up to 10,000 in a full run: rss_10k_turns_mb), one-shot
	// sends; fsyncs of the floor.
	apiTurns, apiWarm, api1, api16, api100, oneshots, fsyncs int
	// The extension figures (ext.go): rows of the data directory whose
	// start is measured, starts, action calls.
	extRows, extStarts, actionCalls int
	// settle is how long memory is left to settle before it is read.
	settle               time.Duration
	quick, inProcessOnly bool
	sync, exe, version   string
}

func newConfig(o *Options) (config, error) {
	if o == nil {
		o = new(Options)
	}
	c := config{turns: 2000, concurrency: 100, throughputTurns: 20000, sessions: 10000, growthTurns: 50000, rtts: 2000,
		subscribers: 1000, fanoutEvents: 400, idleConns: 10000,
		apiTurns: 1000, apiWarm: 10, api1: 480, api16: 500, api100: 5000, oneshots: 11, fsyncs: 200, settle: time.Second,
		extRows: 10000, extStarts: 5, actionCalls: 2000}
	if o.Quick {
		c = config{turns: 300, concurrency: 100, throughputTurns: 3000, sessions: 1000, growthTurns: 3000, rtts: 300, quick: true,
			subscribers: 100, fanoutEvents: 100, idleConns: 500,
			apiTurns: 100, apiWarm: 5, api1: 100, api16: 300, api100: 600, oneshots: 5, fsyncs: 50, settle: 250 * time.Millisecond,
			extRows: 1000, extStarts: 3, actionCalls: 300}
	}
	c.inProcessOnly, c.sync, c.exe, c.version = o.InProcessOnly, o.Synchronous, o.Executable, o.Version
	err := daemonDefaults(&c.sync, &c.exe)
	return c, err
}

// daemonDefaults fills in what a bench's daemons run with where its
// options leave it: SQLite's synchronous=full, and this binary.
func daemonDefaults(sync, exe *string) error {
	if *sync == "" {
		*sync = "full"
	}
	if *exe == "" {
		self, err := os.Executable()
		if err != nil {
			return fmt.Errorf("bench: the agentd binary: %w", err)
		}
		*exe = self
	}
	return nil
}

// fakeScript: turns whose message starts with "tool" call the clock tool
// once and then answer (two model calls); everything else is echoed (one).
const fakeScript = `match ^tool
call clock {}
---
say done

match ^User:
delay 200ms
say A summary of the earlier turns.

match ^fan
chunks 20
gap 10ms
say Streaming text arrives in pieces, about a hundred a second, as a fast model sends it to every watching client.
`

// Run measures agentd and returns the figures. It needs the agentd binary
// (Options.Executable) for the figures of agentd serve, agentd version and
// the MCP demo server, and loopback; what it writes goes into a temporary
// folder it removes.
func Run(ctx context.Context, o *Options) (*Result, error) {
	c, err := newConfig(o)
	if err != nil {
		return nil, err
	}
	res := &Result{Turns: c.turns, Concurrency: c.concurrency, Sessions: c.sessions, GrowthTurns: c.growthTurns,
		RunInfo: newRunInfo(c.quick, c.sync, c.version)}
	base, stopFake, err := startFake(ctx, "bench", fakeScript)
	if err != nil {
		return nil, err
	}
	defer stopFake()

	// The floor: a bare streamed round trip with agentd's own client.
	hc := &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: 512}}
	cl := openai.New(&openai.Options{BaseURL: base, HTTPClient: hc})
	var rtts []time.Duration
	req := &model.Request{Model: "fake", Messages: []model.Message{{Role: model.RoleUser, Content: "ping"}}}
	for i := 0; i < c.rtts; i++ {
		t0 := time.Now()
		if _, err := cl.Stream(ctx, req, nil); err != nil {
			return nil, fmt.Errorf("bench: model round trip: %w", err)
		}
		rtts = append(rtts, time.Since(t0))
	}
	res.ModelRTTP50ms = pct(rtts, 50)

	dir, err := os.MkdirTemp("", "agentd-bench-")
	if err != nil {
		return nil, err
	}
	defer os.RemoveAll(dir)
	if err := runFloors(ctx, dir, base, res, c); err != nil {
		return nil, err
	}
	var fs *floorServer
	if !c.inProcessOnly {
		if fs, err = runRelayFloor(ctx, base, res, c); err != nil {
			return nil, err
		}
		defer fs.stop()
	}
	if err := writeAgents(dir, base, c.sync); err != nil {
		return nil, err
	}
	if err := runInProcess(ctx, filepath.Join(dir, "inproc"), res, c); err != nil {
		return nil, err
	}
	if err := runMCP(ctx, dir, base, res, c); err != nil {
		return nil, err
	}
	if err := runMemory(ctx, dir, res, c); err != nil {
		return nil, err
	}
	if err := runActionOverhead(ctx, filepath.Join(dir, "action"), res, c); err != nil {
		return nil, err
	}
	if c.inProcessOnly {
		return res, nil
	}
	if err := runServe(ctx, filepath.Join(dir, "proc"), res, c); err != nil {
		return nil, err
	}
	if err := runExtStart(ctx, filepath.Join(dir, "ext"), res, c); err != nil {
		return nil, err
	}
	if err := runAPI(ctx, filepath.Join(dir, "api"), base, fs, res, c); err != nil {
		return nil, err
	}
	return res, nil
}

func writeAgents(root, base, sync string) error {
	for _, d := range []string{"inproc", "proc", "ext"} { // ext: proc's agents, and extension rows
		if err := os.MkdirAll(filepath.Join(root, d, "agents"), 0o700); err != nil {
			return err
		}
		if sync != "" {
			cfg := "store:\n  synchronous: " + sync + "\n"
			if err := os.WriteFile(filepath.Join(root, d, "agentd.yaml"), []byte(cfg), 0o600); err != nil {
				return err
			}
		}
		def := "name: Bench\nmodel:\n  provider: openai\n  name: fake\n  base_url: " + base + "\ntools:\n  allow: [clock]\n"
		if err := os.WriteFile(filepath.Join(root, d, "agents", "bench.yaml"), []byte(def), 0o600); err != nil {
			return err
		}
		// An agent whose tiny window makes every turn compact (the summary
		// takes 200 ms), to show it does not slow other sessions.
		comp := "name: Compacting\nmodel:\n  provider: openai\n  name: fake\n  base_url: " + base +
			"\nmemory:\n  context_window: 400\n  recent_turns: 1\n"
		if err := os.WriteFile(filepath.Join(root, d, "agents", "comp.yaml"), []byte(comp), 0o600); err != nil {
			return err
		}
		// Replies streamed in 20 pieces 10 ms apart: the fan-out figure.
		fan := "name: Fan\nmodel:\n  provider: openai\n  name: fake\n  base_url: " + base + "\n"
		if err := os.WriteFile(filepath.Join(root, d, "agents", "fan.yaml"), []byte(fan), 0o600); err != nil {
			return err
		}
	}
	return nil
}

func runInProcess(ctx context.Context, dir string, res *Result, c config) error {
	a, err := app.Open(ctx, dir, nil)
	if err != nil {
		return err
	}
	defer a.Close(context.Background())
	if err := a.Start(ctx); err != nil {
		return err
	}
	rt := a.Runtime
	// Turn latency: sequential turns with one tool call, a fresh session
	// every 20 turns so the context stays the size of a real conversation.
	var lat []time.Duration
	for i := 0; i < c.turns; i++ {
		in := runtime.Input{Session: fmt.Sprintf("bench/lat-%d", i/20), Text: "tool please", Source: "bench"}
		t0 := time.Now()
		_, end, err := rt.Send(ctx, in)
		if err != nil {
			return fmt.Errorf("bench: turn: %w", err)
		}
		if end.Status != "done" || end.Steps != 2 {
			return fmt.Errorf("bench: turn ended %s after %d steps: %s", end.Status, end.Steps, end.Reason)
		}
		lat = append(lat, time.Since(t0))
	}
	res.TurnP50ms, res.TurnP99ms = pct(lat, 50), pct(lat, 99)
	res.OverheadP50ms = res.TurnP50ms - 2*res.ModelRTTP50ms
	if err := runGatewayInProcess(ctx, a, dir, res, c); err != nil {
		return err
	}
	if err := runWhileCompacting(ctx, rt, res, c); err != nil {
		return err
	}

	// Throughput: one-step turns from c.concurrency sessions at once; each
	// worker moves to a fresh session every 20 turns, as in the latency run,
	// so the figure measures agentd rather than ever longer contexts.
	var next atomic.Int64
	var wg sync.WaitGroup
	errs := make(chan error, c.concurrency)
	t0 := time.Now()
	for w := 0; w < c.concurrency; w++ {
		wg.Go(func() {
			for n := 0; next.Add(1) <= int64(c.throughputTurns); n++ {
				_, end, err := rt.Send(ctx, runtime.Input{Session: fmt.Sprintf("bench/tp-%d-%d", w, n/20), Text: "hello", Source: "bench"})
				if err == nil && end.Status != "done" {
					err = errors.New(end.Reason)
				}
				if err != nil {
					errs <- err
					return
				}
			}
		})
	}
	wg.Wait()
	el := time.Since(t0)
	select {
	case err := <-errs:
		return fmt.Errorf("bench: throughput: %w", err)
	default:
	}
	res.TurnsPerS = float64(c.throughputTurns) / el.Seconds()
	return nil
}

func pct(ds []time.Duration, p int) float64 {
	if len(ds) == 0 {
		return 0
	}
	s := slices.Clone(ds)
	slices.Sort(s)
	i := (len(s)*p + 99) / 100
	if i > 0 {
		i--
	}
	return float64(s[i].Microseconds()) / 1000
}

// orCount sets *v, when it is not set (≤ 0), to a run's default count:
// quick's in a --quick run, else full's.
func orCount(v *int, full, quick int, isQuick bool) {
	if *v > 0 {
		return
	}
	*v = full
	if isQuick {
		*v = quick
	}
}
