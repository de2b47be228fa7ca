package cli

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	goruntime "runtime"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"

	"agentd/internal/app"
	"agentd/internal/event"
	"agentd/internal/gateway"
	"agentd/internal/model"
	"agentd/internal/model/fakellm"
	"agentd/internal/model/openai"
	"agentd/internal/runtime"
)

// BenchResult is what `agentd bench --json` prints.
type BenchResult struct {
	ModelRTTP50ms    float64 `json:"model_rtt_p50_ms"`
	TurnP50ms        float64 `json:"turn_p50_ms"`
	TurnP99ms        float64 `json:"turn_p99_ms"`
	OverheadP50ms    float64 `json:"overhead_p50_ms"`
	TurnsPerS        float64 `json:"turns_per_s"`
	ReadyMS          float64 `json:"ready_ms"`
	IdleRSSMB        float64 `json:"idle_rss_mb"`
	RSS10kSessionsMB float64 `json:"rss_10k_sessions_mb"`
	RSSGrowthPct     float64 `json:"rss_growth_pct"`
	VersionMS        float64 `json:"version_ms"`

	MCPStdioP50us          float64 `json:"mcp_stdio_p50_us"`
	MCPHTTPP50us           float64 `json:"mcp_http_p50_us"`
	DispatchUS             float64 `json:"dispatch_us"`
	LifecycleP50ms         float64 `json:"lifecycle_p50_ms"`
	LifecycleToolsP50ms    float64 `json:"lifecycle_tools_p50_ms"`
	LifecycleOverheadP50ms float64 `json:"lifecycle_overhead_p50_ms"`

	HistorySearchP50ms float64 `json:"history_search_p50_ms"`
	HistoryMessages    int     `json:"history_messages"`
	RecallP50ms        float64 `json:"recall_p50_ms"`
	Memories           int     `json:"memories"`
	ContextColdMS      float64 `json:"context_cold_ms"`
	ContextWarmMS      float64 `json:"context_warm_ms"`
	CompactingTurnP50  float64 `json:"turn_while_compacting_p50_ms"`
	Compactions        int     `json:"compactions"`

	HTTPWaitP50ms      float64 `json:"http_wait_p50_ms"`
	HTTPWaitOverheadMS float64 `json:"http_wait_overhead_p50_ms"`
	UnixWaitP50ms      float64 `json:"unix_stream_p50_ms"`
	ServeWaitP50ms     float64 `json:"serve_http_wait_p50_ms"`
	WSFanoutP50ms      float64 `json:"ws_fanout_p50_ms"`
	WSFanoutP99ms      float64 `json:"ws_fanout_p99_ms"`
	WSSubscribers      int     `json:"ws_subscribers"`
	WSIdleConns        int     `json:"ws_idle_conns"`
	WSIdleRSSMB        float64 `json:"ws_idle_rss_mb"`
	WSIdleBaseRSSMB    float64 `json:"ws_idle_base_rss_mb"`

	Turns        int    `json:"turns"`
	Concurrency  int    `json:"concurrency"`
	Sessions     int    `json:"sessions"`
	GrowthTurns  int    `json:"growth_turns"`
	Quick        bool   `json:"quick,omitempty"`
	Synchronous  string `json:"synchronous"`
	CPUs         int    `json:"cpus"`
	GoVersion    string `json:"go"`
	AgentVersion string `json:"agentd"`
}

// benchScript: turns whose message starts with "tool" call the clock tool
// once and then answer (two model calls); everything else is echoed (one).
const benchScript = `match ^tool
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

type benchConfig struct {
	turns, concurrency, throughputTurns, sessions, growthTurns, rtts int
	subscribers, fanoutEvents, idleConns                             int
	quick                                                            bool
	sync                                                             string
}

func (e *env) benchCmd() *cobra.Command {
	var asJSON, quick, skipProc bool
	var sync string
	cmd := &cobra.Command{
		Use:   "bench",
		Short: "Measure agentd end to end against the fake model and print a table",
		Long: "Run agentd against fakellm over loopback with instant replies and report turn overhead,\n" +
			"throughput, start-up time and memory. --quick runs smaller counts (for CI);\n" +
			"the figures in docs/performance.md come from a full run.",
		Example: "  agentd bench\n" +
			"  agentd bench --quick --json",
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			c := benchConfig{turns: 2000, concurrency: 100, throughputTurns: 20000, sessions: 10000, growthTurns: 50000, rtts: 2000,
				subscribers: 1000, fanoutEvents: 400, idleConns: 10000}
			if quick {
				c = benchConfig{turns: 300, concurrency: 100, throughputTurns: 3000, sessions: 1000, growthTurns: 3000, rtts: 300, quick: true,
					subscribers: 100, fanoutEvents: 100, idleConns: 500}
			}
			c.sync = sync
			res, err := e.bench(cmd.Context(), c, skipProc)
			if err != nil {
				return err
			}
			if asJSON {
				return json.NewEncoder(e.stdout).Encode(res)
			}
			printBench(e.stdout, res)
			return nil
		},
	}
	cmd.Flags().BoolVar(&asJSON, "json", false, "print one JSON object")
	cmd.Flags().BoolVar(&quick, "quick", false, "smaller counts, for CI")
	cmd.Flags().BoolVar(&skipProc, "in-process-only", false, "skip the figures that start agentd serve as a child process")
	cmd.Flags().StringVar(&sync, "synchronous", "full", "the store's synchronous mode: full (the default, durable on power loss) or normal, to see what durability costs")
	return cmd
}

func printBench(w interface{ Write([]byte) (int, error) }, r *BenchResult) {
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	row := func(name, val, target, note string) { fmt.Fprintf(tw, "%s\t%s\t%s\t%s\n", name, val, target, note) }
	f := func(v float64, unit string) string { return strconv.FormatFloat(v, 'f', 3, 64) + " " + unit }
	fmt.Fprintln(tw, "FIGURE\tVALUE\tTARGET\tWHAT")
	row("model_rtt_p50_ms", f(r.ModelRTTP50ms, "ms"), "", "bare round trip to fakellm (the floor)")
	row("turn_p50_ms", f(r.TurnP50ms, "ms"), "", "turn with one tool call = two model calls")
	row("turn_p99_ms", f(r.TurnP99ms, "ms"), "", "")
	row("overhead_p50_ms", f(r.OverheadP50ms, "ms"), "≤ 1.0", "turn_p50 − 2 × model_rtt_p50")
	row("turn_while_compacting_p50_ms", f(r.CompactingTurnP50, "ms"), "≈ turn_p50", fmt.Sprintf("the same turns while another session ran %d turns, each folding its context (a 200 ms summary call)", r.Compactions))
	row("turns_per_s", strconv.FormatFloat(r.TurnsPerS, 'f', 0, 64), "≥ 2000", fmt.Sprintf("one-step turns, %d concurrent sessions, durable", r.Concurrency))
	row("mcp_stdio_p50_us", f(r.MCPStdioP50us, "µs"), "≤ 300", "MCP tool call round trip, Go server over stdio")
	row("mcp_http_p50_us", f(r.MCPHTTPP50us, "µs"), "≤ 1000", "MCP tool call round trip, streamable HTTP on loopback")
	row("dispatch_us", f(r.DispatchUS, "µs"), "≤ 5", "registry lookup + policy check + argument validation per call")
	row("lifecycle_p50_ms", f(r.LifecycleP50ms, "ms"), "", "message(): 3 context, 1 action (+ signed hook), 1 post-process tool over stdio")
	row("lifecycle_tools_p50_ms", f(r.LifecycleToolsP50ms, "ms"), "", "of which the MCP calls themselves (6 calls in 4 rounds)")
	row("lifecycle_overhead_p50_ms", f(r.LifecycleOverheadP50ms, "ms"), "≤ 5", "lifecycle_p50 − model time − MCP call time")
	if r.HistoryMessages > 0 {
		row("history_search_p50_ms", f(r.HistorySearchP50ms, "ms"), "≤ 10", fmt.Sprintf("BM25 over %d stored messages, one agent's sessions, top 20", r.HistoryMessages))
		row("recall_p50_ms", f(r.RecallP50ms, "ms"), "≤ 25", fmt.Sprintf("hybrid recall over %d memories, 384-d vectors", r.Memories))
		row("context_cold_ms", f(r.ContextColdMS, "ms"), "≤ 20", "a 10,000-event session's context from the log, decoded and sized")
		row("context_warm_ms", f(r.ContextWarmMS, "ms"), "≤ 2", "the same from the cached conversation")
	}
	if r.ReadyMS > 0 {
		row("ready_ms", f(r.ReadyMS, "ms"), "≤ 100", "agentd serve start to accepting on its socket")
		row("idle_rss_mb", f(r.IdleRSSMB, "MB"), "≤ 20", "agentd serve, idle")
		row("rss_10k_sessions_mb", f(r.RSS10kSessionsMB, "MB"), "≤ 100", fmt.Sprintf("after %d sessions × 1 turn", r.Sessions))
		row("rss_growth_pct", f(r.RSSGrowthPct, "%"), "≤ 5", fmt.Sprintf("over a further %d turns", r.GrowthTurns))
		row("version_ms", f(r.VersionMS, "ms"), "≤ 20", "agentd version")
	}
	if r.WSSubscribers > 0 {
		row("http_wait_p50_ms", f(r.HTTPWaitP50ms, "ms"), "", "the same two-step turn as turn_p50, as POST …/messages?wait=true over TCP with the token, same process")
		row("http_wait_overhead_p50_ms", f(r.HTTPWaitOverheadMS, "ms"), "≤ 1", "http_wait_p50 − turn_p50: the gateway's cost")
		row("serve_http_wait_p50_ms", f(r.ServeWaitP50ms, "ms"), "", "the same against agentd serve, another process (the client waits across processes)")
		row("unix_stream_p50_ms", f(r.UnixWaitP50ms, "ms"), "", "the same over agentd serve's local socket (no TCP, no token)")
		row("ws_fanout_p50_ms", f(r.WSFanoutP50ms, "ms"), "", fmt.Sprintf("text-delta delivery to %d WebSocket subscribers (a reply streamed in pieces 10 ms apart)", r.WSSubscribers))
		row("ws_fanout_p99_ms", f(r.WSFanoutP99ms, "ms"), "≤ 20", "")
		row("ws_idle_rss_mb", f(r.WSIdleRSSMB, "MB"), "≤ 150", fmt.Sprintf("agentd serve holding %d idle WebSocket connections (%.1f MB before)", r.WSIdleConns, r.WSIdleBaseRSSMB))
	}
	tw.Flush()
	fmt.Fprintf(w, "(%d CPUs, %s, agentd %s, synchronous=%s", r.CPUs, r.GoVersion, r.AgentVersion, r.Synchronous)
	if r.Quick {
		fmt.Fprint(w, ", --quick counts")
	}
	fmt.Fprintln(w, ")")
}

func (e *env) bench(ctx context.Context, c benchConfig, skipProc bool) (*BenchResult, error) {
	res := &BenchResult{Turns: c.turns, Concurrency: c.concurrency, Sessions: c.sessions, GrowthTurns: c.growthTurns,
		Quick: c.quick, Synchronous: c.sync, CPUs: goruntime.NumCPU(), GoVersion: goruntime.Version(), AgentVersion: Version}
	script, err := fakellm.ParseScript("bench", []byte(benchScript))
	if err != nil {
		return nil, err
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, err
	}
	fctx, stopFake := context.WithCancel(ctx)
	defer stopFake()
	go fakellm.New(script, nil).Serve(fctx, ln)
	base := "http://" + ln.Addr().String() + "/v1"

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
	if err := writeBenchAgent(dir, base, c.sync); err != nil {
		return nil, err
	}
	if err := e.benchInProcess(ctx, filepath.Join(dir, "inproc"), res, c); err != nil {
		return nil, err
	}
	if err := e.benchMCP(ctx, dir, base, res, c); err != nil {
		return nil, err
	}
	if err := e.benchMemory(ctx, dir, res, c); err != nil {
		return nil, err
	}
	if skipProc {
		return res, nil
	}
	if err := e.benchProcess(ctx, filepath.Join(dir, "proc"), res, c); err != nil {
		return nil, err
	}
	return res, nil
}

func writeBenchAgent(root, base, sync string) error {
	for _, d := range []string{"inproc", "proc"} {
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

func (e *env) benchInProcess(ctx context.Context, dir string, res *BenchResult, c benchConfig) error {
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
	if err := benchGatewayInProcess(ctx, a, dir, res, c); err != nil {
		return err
	}
	if err := benchWhileCompacting(ctx, rt, res, c); err != nil {
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

// benchProcess measures agentd serve as a child process: start-up, idle
// memory, memory after many sessions, and its growth over more turns.
func (e *env) benchProcess(ctx context.Context, dir string, res *BenchResult, c benchConfig) error {
	exe, err := os.Executable()
	if err != nil {
		return err
	}
	// agentd version, as a user runs it.
	var vs []time.Duration
	for i := 0; i < 11; i++ {
		t0 := time.Now()
		if err := exec.CommandContext(ctx, exe, "version").Run(); err != nil {
			return fmt.Errorf("bench: agentd version: %w", err)
		}
		vs = append(vs, time.Since(t0))
	}
	res.VersionMS = pct(vs, 50)

	sock := filepath.Join(dir, app.SocketFile)
	port, err := freeTCPPort()
	if err != nil {
		return err
	}
	listen := "127.0.0.1:" + strconv.Itoa(port)
	var readies []time.Duration
	var cmd *exec.Cmd
	for i := 0; i < 5; i++ {
		if cmd != nil {
			stopChild(cmd)
		}
		cmd = exec.CommandContext(ctx, exe, "serve", "--data", dir, "--log-level", "error", "--listen", listen)
		t0 := time.Now()
		if err := cmd.Start(); err != nil {
			return err
		}
		for {
			conn, err := net.Dial("unix", sock)
			if err == nil {
				conn.Close()
				break
			}
			if time.Since(t0) > 10*time.Second {
				stopChild(cmd)
				return errors.New("bench: agentd serve did not open its socket within 10s")
			}
			time.Sleep(200 * time.Microsecond)
		}
		readies = append(readies, time.Since(t0))
	}
	defer func() { stopChild(cmd) }()
	res.ReadyMS = pct(readies, 50)
	time.Sleep(time.Second)
	res.IdleRSSMB = rssMB(cmd.Process.Pid)

	cl := gateway.NewUnixClient(sock)
	drive := func(n, sessions int, prefix string) error {
		var next atomic.Int64
		var wg sync.WaitGroup
		var first atomic.Value
		for w := 0; w < c.concurrency; w++ {
			wg.Go(func() {
				for {
					i := next.Add(1) - 1
					if i >= int64(n) {
						return
					}
					addr := fmt.Sprintf("bench/%s-%d", prefix, i%int64(sessions))
					_, end, err := cl.Stream(ctx, addr, gateway.MessageRequest{Text: "hello"}, func(event.Event) error { return nil })
					if err == nil && end.Status != "done" {
						err = errors.New(end.Reason)
					}
					if err != nil {
						first.CompareAndSwap(nil, err)
						return
					}
				}
			})
		}
		wg.Wait()
		if err, _ := first.Load().(error); err != nil {
			return err
		}
		return nil
	}
	if err := drive(c.sessions, c.sessions, "s"); err != nil {
		return fmt.Errorf("bench: sessions: %w", err)
	}
	time.Sleep(time.Second)
	res.RSS10kSessionsMB = rssMB(cmd.Process.Pid)
	if err := drive(c.growthTurns, c.sessions, "s"); err != nil {
		return fmt.Errorf("bench: growth: %w", err)
	}
	time.Sleep(time.Second)
	after := rssMB(cmd.Process.Pid)
	if res.RSS10kSessionsMB > 0 {
		res.RSSGrowthPct = (after - res.RSS10kSessionsMB) / res.RSS10kSessionsMB * 100
	}
	// The gateway's figures from a fresh process over the same data: what
	// the load above left on the heap is not theirs.
	stopChild(cmd)
	cmd = exec.CommandContext(ctx, exe, "serve", "--data", dir, "--log-level", "error", "--listen", listen)
	if err := cmd.Start(); err != nil {
		return err
	}
	for t0 := time.Now(); ; time.Sleep(time.Millisecond) {
		if conn, err := net.Dial("tcp", listen); err == nil {
			conn.Close()
			break
		}
		if time.Since(t0) > 10*time.Second {
			return errors.New("bench: agentd serve did not listen on TCP within 10s")
		}
	}
	time.Sleep(time.Second)
	return benchGateway(ctx, dir, "http://"+listen, cmd.Process.Pid, res, c)
}

// freeTCPPort returns a loopback port nothing listens on (for a child to bind).
func freeTCPPort() (int, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, err
	}
	defer ln.Close()
	return ln.Addr().(*net.TCPAddr).Port, nil
}

func stopChild(cmd *exec.Cmd) {
	cmd.Process.Signal(os.Interrupt)
	done := make(chan struct{})
	go func() { cmd.Wait(); close(done) }()
	select {
	case <-done:
	case <-time.After(15 * time.Second):
		cmd.Process.Kill()
		<-done
	}
}

// rssMB reads a process's resident set size from /proc.
func rssMB(pid int) float64 {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return 0
	}
	for _, line := range strings.Split(string(b), "\n") {
		if strings.HasPrefix(line, "VmRSS:") {
			f := strings.Fields(line)
			if len(f) >= 2 {
				kb, _ := strconv.ParseFloat(f[1], 64)
				return kb / 1024
			}
		}
	}
	return 0
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
