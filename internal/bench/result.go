package bench

import (
	"fmt"
	"io"
	"strconv"
	"text/tabwriter"
)

// Result is what Run measured; `agentd bench --json` prints it.
type Result struct {
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

// WriteTable writes the figures as a table for a person: each with its
// value, its target where agentd has one, and what it measures.
func (r *Result) WriteTable(w io.Writer) error {
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
	if err := tw.Flush(); err != nil {
		return err
	}
	fmt.Fprintf(w, "(%d CPUs, %s, agentd %s, synchronous=%s", r.CPUs, r.GoVersion, r.AgentVersion, r.Synchronous)
	if r.Quick {
		fmt.Fprint(w, ", --quick counts")
	}
	_, err := fmt.Fprintln(w, ")")
	return err
}
