package bench

import (
	"context"
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"time"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"agentd/internal/agent"
	"agentd/internal/app"
	"agentd/internal/event"
	"agentd/internal/mcp"
	"agentd/internal/mcpdemo"
	"agentd/internal/runtime"
	"agentd/internal/store"
	"agentd/internal/tool"
)

// runMCP measures the tool layer: MCP round trips to the demo server
// (this binary's `mcp demo`) over stdio and streamable HTTP, the dispatch
// cost of one call, and the Daemon message lifecycle end to end.
func runMCP(ctx context.Context, dir, base string, res *Result, c config) error {
	exe := c.exe
	// The demo server over streamable HTTP, on loopback.
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return err
	}
	demo := mcpdemo.New(nil)
	hs := &http.Server{Handler: sdk.NewStreamableHTTPHandler(func(*http.Request) *sdk.Server { return demo }, nil)}
	go hs.Serve(ln)
	defer hs.Close()

	reg := tool.NewRegistry(nil)
	m, err := mcp.New(&mcp.Options{Tools: reg, ClientName: "agentd-bench", ClientVersion: c.version})
	if err != nil {
		return err
	}
	defer m.Close()
	for _, err := range m.Set(ctx, []mcp.Def{
		{Name: "stdio", Config: agent.MCPServer{Command: exe, Args: []string{"mcp", "demo"}}},
		{Name: "http", Config: agent.MCPServer{URL: "http://" + ln.Addr().String() + "/mcp", AllowNetworks: []string{"127.0.0.1/32"}}},
	}) {
		return err
	}
	wctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	m.WaitReady(wctx)
	cancel()
	for _, s := range m.List() {
		if s.State != "connected" {
			return fmt.Errorf("bench: mcp server %s is %s: %s", s.Name, s.State, s.LastError)
		}
	}
	roundTrips := func(name string) (float64, error) {
		var lat []time.Duration
		call := &tool.Call{ID: "bench", Name: name, Args: json.RawMessage(`{"text":"ping"}`)}
		for i := 0; i < c.rtts+c.rtts/10; i++ {
			t0 := time.Now()
			out := reg.Run(ctx, call, nil)
			if out.Result.IsError {
				return 0, fmt.Errorf("bench: %s: %s", name, out.Result.Output)
			}
			if i >= c.rtts/10 { // after a warm-up
				lat = append(lat, time.Since(t0))
			}
		}
		return pct(lat, 50) * 1000, nil
	}
	if res.MCPStdioP50us, err = roundTrips("stdio__echo"); err != nil {
		return err
	}
	if res.MCPHTTPP50us, err = roundTrips("http__echo"); err != nil {
		return err
	}

	// Dispatch: registry lookup, policy decision and argument validation
	// around a tool that does nothing.
	noop := tool.Func(tool.Spec{Name: "noop", InputSchema: json.RawMessage(`{"type":"object","properties":{"text":{"type":"string"}},"required":["text"]}`)},
		func(context.Context, *tool.Call) (tool.Result, error) { return tool.Result{Output: "ok"}, nil })
	reg.Register(noop)
	pol := tool.Policy{Allow: []string{"noop", "stdio__*"}}
	call := &tool.Call{ID: "bench", Name: "noop", Args: json.RawMessage(`{"text":"ping"}`)}
	n := 200000
	if c.quick {
		n = 20000
	}
	t0 := time.Now()
	for i := 0; i < n; i++ {
		t, _ := reg.Get(call.Name)
		if pol.Decide(t.Spec()).Verdict != tool.Allow {
			return fmt.Errorf("bench: policy denied noop")
		}
		if out := reg.Run(ctx, call, nil); out.Result.IsError {
			return fmt.Errorf("bench: noop: %s", out.Result.Output)
		}
	}
	res.DispatchUS = float64(time.Since(t0).Microseconds()) / float64(n)
	return runLifecycle(ctx, filepath.Join(dir, "lifecycle"), exe, base, res, c)
}

// runLifecycle runs message() with three context tools, one action tool
// (whose hook is signed and sent back) and one post-process tool, each on
// a demo server over stdio, against fakellm.
func runLifecycle(ctx context.Context, dir, exe, base string, res *Result, c config) error {
	if err := os.MkdirAll(filepath.Join(dir, "agents"), 0o700); err != nil {
		return err
	}
	srv := func(extra string) string {
		return fmt.Sprintf("    command: %q\n    args: [mcp, demo]\n%s", exe, extra)
	}
	// Only d1's action and post-process tools take part; d2 and d3 add a
	// context tool each.
	quiet := "    kinds: {quote: server, remember: server}\n"
	cfg := "mcp_servers:\n  d1:\n" + srv("") + "  d2:\n" + srv(quiet) + "  d3:\n" + srv(quiet)
	if err := os.WriteFile(filepath.Join(dir, "agentd.yaml"), []byte(cfg), 0o600); err != nil {
		return err
	}
	def := "name: Lifecycle\nmodel:\n  provider: openai\n  name: fake\n  base_url: " + base + "\n"
	if err := os.WriteFile(filepath.Join(dir, "agents", "life.yaml"), []byte(def), 0o600); err != nil {
		return err
	}
	a, err := app.Open(ctx, dir, &app.Options{Version: c.version})
	if err != nil {
		return err
	}
	defer a.Close(context.Background())
	if err := a.Start(ctx); err != nil {
		return err
	}
	wctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	a.MCP.WaitReady(wctx)
	cancel()
	turns := c.turns / 4
	var total, toolTime, overhead []time.Duration
	for i := 0; i < turns+turns/10; i++ {
		in := runtime.Input{Session: fmt.Sprintf("life/c%d", i/20), Text: "buy tea", Source: "bench", Options: json.RawMessage(`{"channelId":"bench"}`)}
		t0 := time.Now()
		rc, obj, err := a.Runtime.Message(ctx, in)
		el := time.Since(t0)
		if err != nil {
			return fmt.Errorf("bench: lifecycle: %w", err)
		}
		if obj.Status != event.StatusDone || len(obj.Context) < 3 || len(obj.ActionsLog) != 1 || len(obj.HooksLog) != 1 || len(obj.PostProcessLog) != 1 {
			return fmt.Errorf("bench: lifecycle did not run every phase: status %s (%s), %d context, %d actions, %d hooks, %d post-process",
				obj.Status, obj.Reason, len(obj.Context), len(obj.ActionsLog), len(obj.HooksLog), len(obj.PostProcessLog))
		}
		if i < turns/10 {
			continue // warm-up
		}
		model, tools, err := turnTimes(ctx, a.Store, rc)
		if err != nil {
			return err
		}
		total = append(total, el)
		toolTime = append(toolTime, tools)
		overhead = append(overhead, el-model-tools)
	}
	res.LifecycleP50ms, res.LifecycleToolsP50ms, res.LifecycleOverheadP50ms = pct(total, 50), pct(toolTime, 50), pct(overhead, 50)
	return nil
}

// turnTimes is the time a turn spent in model calls and in lifecycle tool
// calls (the context phase's calls run in parallel: its longest counts).
func turnTimes(ctx context.Context, st store.Store, rc runtime.Receipt) (model, tools time.Duration, err error) {
	evs, err := st.TurnEvents(ctx, rc.SessionID, rc.Turn)
	if err != nil {
		return 0, 0, err
	}
	ms := func(v float64) time.Duration { return time.Duration(v * float64(time.Millisecond)) }
	var context time.Duration
	for _, ev := range evs {
		switch ev.Kind {
		case event.ModelCall:
			var mc event.ModelCallData
			if ev.Decode(&mc) == nil {
				model += ms(mc.LatencyMS)
			}
		case event.Lifecycle:
			var l event.LifecycleData
			if ev.Decode(&l) == nil && len(l.Start) == 0 {
				if l.Phase == event.PhaseContext {
					context = max(context, ms(l.DurationMS))
				} else {
					tools += ms(l.DurationMS)
				}
			}
		}
	}
	return model, tools + context, nil
}
