package bench

import (
	"fmt"
	"io"
	"strconv"
	"text/tabwriter"
)

// figure is one row of the table: a figure of the Result under its JSON
// name, with its floor where the run measured one.
type figure struct {
	name   string // as --json names it
	value  float64
	unit   string  // ms, µs, MB, %, /s; "" for none
	floor  float64 // what the machine allows for this figure; 0: none
	target string
	note   string
}

// section is a group of figures, shown when the run measured them.
type section struct {
	title string
	shown bool
	figs  []figure
}

// sections lists every figure of r by area, in the order the table shows
// them. The floors of figures made of several steps are the sums of the
// floors of the steps.
func (r *Result) sections() []section {
	relay := r.FloorRelayMS + r.FloorFsyncMS                              // a turn through a daemon: one relayed round trip, one sync
	relayOverhead := max(r.FloorRelayMS-r.FloorRTTms, 0) + r.FloorFsyncMS // what that adds to the model's round trip
	inProcTurn := 2*r.FloorRTTms + r.FloorFsyncMS                         // two model calls, one sync
	apiTwoStep := relay + r.FloorRTTms                                    // a two-step turn through a daemon
	pinned := "not pinned: fewer than 2 CPUs, or pinning refused"
	if r.FanoutPinned {
		pinned = "server and subscribers pinned to CPUs of their own"
	}
	return []section{
		{title: "Floors: bare Go on this machine, this run", shown: r.FloorRTTms > 0, figs: []figure{
			{"floor_rtt_ms", r.FloorRTTms, "ms", 0, "", "a streamed round trip to fakellm with net/http, p50"},
			{"floor_model_per_s", r.FloorModelPerS, "/s", 0, "", fmt.Sprintf("such round trips a second, %d at once", r.Concurrency)},
			{"floor_fsync_ms", r.FloorFsyncMS, "ms", 0, "", "append 4 KiB to a file in the data directory's folder and fsync it, p50"},
			{"floor_relay_ms", r.FloorRelayMS, "ms", 0, "", "a round trip through a bare Go HTTP relay (httputil.ReverseProxy, a process of its own) to fakellm, p50"},
			{"floor_relay_turns_per_s_1", r.FloorRelayPerS1, "/s", 0, "", "round trips a second through the relay, 1 at a time"},
			{"floor_relay_turns_per_s_16", r.FloorRelayPerS16, "/s", 0, "", "the same, 16 at once"},
			{"floor_relay_turns_per_s", r.FloorRelayPerS, "/s", 0, "", fmt.Sprintf("the same, %d at once", r.Concurrency)},
			{"floor_relay_cpu_ms", r.FloorRelayCPUms, "ms", 0, "", "the relay's CPU per request in that run (/proc/<pid>/stat)"},
			{"floor_start_ms", r.FloorStartMS, "ms", 0, "", "the relay's start (this binary) to listening"},
			{"floor_idle_rss_mb", r.FloorIdleRSSMB, "MB", 0, "", "the relay's RSS, idle"},
			{"floor_relay_rss_mb", r.FloorRelayRSSMB, "MB", 0, "", "the relay's RSS after its runs"},
			{"floor_fanout_p50_ms", r.FloorFanoutP50ms, "ms", 0, "", "a bare Go WebSocket broadcast of the same text deltas to as many subscribers, placed as for fanout_*"},
			{"floor_fanout_p99_ms", r.FloorFanoutP99ms, "ms", 0, "", ""},
		}},
		{title: "Through the API of agentd serve: what a client sees", shown: r.APITurnP50ms > 0, figs: []figure{
			{"api_turn_p50_ms", r.APITurnP50ms, "ms", relay, "", "one-step turn of agentd init's agent (model: fakellm), POST …/messages?wait=true over TCP with the token; floor: relay + fsync"},
			{"api_turn_p99_ms", r.APITurnP99ms, "ms", relay, "", ""},
			{"api_overhead_p50_ms", r.APIOverheadP50ms, "ms", relayOverhead, "≤ 0.6", "api_turn_p50 − floor_rtt; floor: (relay − rtt) + fsync"},
			{"api_overhead_p99_ms", r.APIOverheadP99ms, "ms", relayOverhead, "≤ 2", "api_turn_p99 − floor_rtt"},
			{"api_minimal_turn_p50_ms", r.APIMinimalP50ms, "ms", relay, "", "the same with a minimal agent (no tools, no recall)"},
			{"api_minimal_turn_p99_ms", r.APIMinimalP99ms, "ms", relay, "", ""},
			{"api_unix_turn_p50_ms", r.APIUnixP50ms, "ms", relay, "", "agentd init's agent over the local socket (no TCP, no token)"},
			{"api_unix_turn_p99_ms", r.APIUnixP99ms, "ms", relay, "", ""},
			{"api_unix_minimal_turn_p50_ms", r.APIUnixMinimalP50ms, "ms", relay, "", "the minimal agent over the local socket"},
			{"api_unix_minimal_turn_p99_ms", r.APIUnixMinimalP99ms, "ms", relay, "", ""},
			{"api_turns_per_s_1", r.APITurnsPerS1, "/s", r.FloorRelayPerS1, "", "turns a second over TCP, agentd init's agent, 1 session at a time"},
			{"api_turns_per_s_16", r.APITurnsPerS16, "/s", r.FloorRelayPerS16, "", "the same, 16 sessions at once"},
			{"api_turns_per_s", r.APITurnsPerS, "/s", r.FloorRelayPerS, "≥ 4000", fmt.Sprintf("the same, %d sessions at once; the client and fakellm on the same CPUs", r.Concurrency)},
			{"cpu_ms_per_turn", r.CPUmsPerTurn, "ms", r.FloorRelayCPUms, "≤ 0.35", "agentd serve's CPU (/proc/<pid>/stat) over that run ÷ its turns"},
			{"rss_10k_turns_mb", r.RSS10kTurnsMB, "MB", r.FloorRelayRSSMB, "≤ 35", fmt.Sprintf("agentd serve's RSS after the %d turns above", r.APITurns)},
			{"anon_10k_turns_mb", r.Anon10kTurnsMB, "MB", 0, "", "of which anonymous (RssAnon)"},
			{"oneshot_ms", r.OneShotMS, "ms", r.FloorStartMS + r.FloorRTTms + r.FloorFsyncMS, "≤ 15", "agentd send without a daemon: start, one turn, exit; floor: start + rtt + fsync"},
			{"fanout_p50_ms", r.FanoutP50ms, "ms", r.FloorFanoutP50ms, "", fmt.Sprintf("text-delta delivery to %d WebSocket subscribers in a process of their own (%s)", r.WSSubscribers, pinned)},
			{"fanout_p99_ms", r.FanoutP99ms, "ms", r.FloorFanoutP99ms, "≤ 20", ""},
			{"fanout_frames_saved_pct", r.FanoutFramesSavedPct, "%", 0, "", "deliveries that came joined with others in one frame"},
		}},
		{title: "In process: the breakdown", shown: true, figs: []figure{
			{"model_rtt_p50_ms", r.ModelRTTP50ms, "ms", r.FloorRTTms, "", "a round trip to fakellm with agentd's OpenAI client"},
			{"turn_p50_ms", r.TurnP50ms, "ms", inProcTurn, "", "turn with one tool call = two model calls; floor: 2 × rtt + fsync"},
			{"turn_p99_ms", r.TurnP99ms, "ms", inProcTurn, "", ""},
			{"overhead_p50_ms", r.OverheadP50ms, "ms", r.FloorFsyncMS, "≤ 1.0", "turn_p50 − 2 × model_rtt_p50; floor: fsync"},
			{"turn_while_compacting_p50_ms", r.CompactingTurnP50, "ms", inProcTurn, "≈ turn_p50", fmt.Sprintf("the same turns while another session ran %d turns, each folding its context (a 200 ms summary call)", r.Compactions)},
			{"turns_per_s", r.TurnsPerS, "/s", r.FloorModelPerS, "≥ 2000", fmt.Sprintf("one-step turns, %d concurrent sessions, durable", r.Concurrency)},
		}},
		{title: "The tool layer", shown: true, figs: []figure{
			{"mcp_stdio_p50_us", r.MCPStdioP50us, "µs", 0, "≤ 300", "MCP tool call round trip, Go server over stdio"},
			{"mcp_http_p50_us", r.MCPHTTPP50us, "µs", 0, "≤ 1000", "MCP tool call round trip, streamable HTTP on loopback"},
			{"dispatch_us", r.DispatchUS, "µs", 0, "≤ 5", "registry lookup + policy check + argument validation per call"},
			{"lifecycle_p50_ms", r.LifecycleP50ms, "ms", 0, "", "message(): 3 context, 1 action (+ signed hook), 1 post-process tool over stdio"},
			{"lifecycle_tools_p50_ms", r.LifecycleToolsP50ms, "ms", 0, "", "of which the MCP calls themselves (6 calls in 4 rounds)"},
			{"lifecycle_overhead_p50_ms", r.LifecycleOverheadP50ms, "ms", 0, "≤ 5", "lifecycle_p50 − model time − MCP call time"},
		}},
		{title: "Memory and context", shown: r.HistoryMessages > 0, figs: []figure{
			{"history_search_p50_ms", r.HistorySearchP50ms, "ms", 0, "≤ 10", fmt.Sprintf("BM25 over %d stored messages, one agent's sessions, top 20", r.HistoryMessages)},
			{"recall_p50_ms", r.RecallP50ms, "ms", 0, "≤ 25", fmt.Sprintf("hybrid recall over %d memories, 384-d vectors", r.Memories)},
			{"context_cold_ms", r.ContextColdMS, "ms", 0, "≤ 20", "a 10,000-event session's context from the log, decoded and sized"},
			{"context_warm_ms", r.ContextWarmMS, "ms", 0, "≤ 2", "the same from the cached conversation"},
		}},
		{title: "agentd serve: start, memory", shown: r.ReadyMS > 0, figs: []figure{
			{"ready_ms", r.ReadyMS, "ms", r.FloorStartMS, "≤ 10", "agentd serve start to accepting on its socket"},
			{"idle_rss_mb", r.IdleRSSMB, "MB", r.FloorIdleRSSMB, "≤ 16", "agentd serve, idle"},
			{"idle_anon_mb", r.IdleAnonMB, "MB", 0, "", "of which anonymous (RssAnon): the rest is pages of the binary, shared and reclaimable"},
			{"rss_10k_sessions_mb", r.RSS10kSessionsMB, "MB", r.FloorRelayRSSMB, "≤ 100", fmt.Sprintf("after %d sessions × 1 turn (minimal agent, local socket)", r.Sessions)},
			{"rss_growth_pct", r.RSSGrowthPct, "%", 0, "≤ 5", fmt.Sprintf("over a further %d turns", r.GrowthTurns)},
			{"version_ms", r.VersionMS, "ms", 0, "≤ 20", "agentd version"},
		}},
		{title: "Extensions: agentd serve over extension rows", shown: r.ExtRows > 0, figs: []figure{
			{"ext_start_ms", r.ExtStartMS, "ms", r.ReadyMS, "none set", fmt.Sprintf("agentd serve start to accepting on its socket over %d extension rows "+
				"(⅓ actions, ⅓ controls, ⅓ capabilities), p50; floor: ready_ms, without them; %s a row", r.ExtRows, perRow(r.ExtStartMS-r.ReadyMS, 1000, "µs", r.ExtRows))},
			{"ext_rss_mb", r.ExtRSSMB, "MB", r.IdleRSSMB, "none set", fmt.Sprintf("its RSS with them active, settled; floor: idle_rss_mb; %s a row", perRow(r.ExtRSSMB-r.IdleRSSMB, 1024, "KB", r.ExtRows))},
			{"ext_anon_mb", r.ExtAnonMB, "MB", r.IdleAnonMB, "", fmt.Sprintf("of which anonymous (RssAnon); floor: idle_anon_mb; %s a row", perRow(r.ExtAnonMB-r.IdleAnonMB, 1024, "KB", r.ExtRows))},
		}},
		{title: "Extensions: an action tool call", shown: r.ActionCallP50ms > 0, figs: []figure{
			{"action_call_p50_ms", r.ActionCallP50ms, "ms", r.ActionBareP50ms, "", "an action tool call through the tool registry, as a turn's (arguments checked, URL filled, " +
				"a ${secret:…} header, the SSRF guard, extract by path), to a JSON server on loopback; floor: action_bare_p50"},
			{"action_bare_p50_ms", r.ActionBareP50ms, "ms", 0, "", "the same request with a plain http.Client, in turn with the calls"},
			{"action_overhead_p50_ms", r.ActionOverheadP50ms, "ms", 0, "≤ 0.5", "action_call_p50 − action_bare_p50"},
		}},
		{title: "The gateway (two-step turns, WebSocket)", shown: r.WSSubscribers > 0, figs: []figure{
			{"http_wait_p50_ms", r.HTTPWaitP50ms, "ms", apiTwoStep, "", "the same two-step turn as turn_p50, as POST …/messages?wait=true over TCP with the token, same process; floor: relay + rtt + fsync"},
			{"http_wait_overhead_p50_ms", r.HTTPWaitOverheadMS, "ms", 0, "≤ 1", "http_wait_p50 − turn_p50: the gateway's cost"},
			{"serve_http_wait_p50_ms", r.ServeWaitP50ms, "ms", apiTwoStep, "", "the same against agentd serve, another process"},
			{"unix_stream_p50_ms", r.UnixWaitP50ms, "ms", apiTwoStep, "", "the same over agentd serve's local socket, streamed (no TCP, no token)"},
			{"ws_fanout_p50_ms", r.WSFanoutP50ms, "ms", 0, "", fmt.Sprintf("text-delta delivery to %d WebSocket subscribers in the bench's own process, not pinned (fanout_* is the honest figure)", r.WSSubscribers)},
			{"ws_fanout_p99_ms", r.WSFanoutP99ms, "ms", 0, "", ""},
			{"ws_idle_rss_mb", r.WSIdleRSSMB, "MB", 0, "≤ 150", fmt.Sprintf("agentd serve holding %d idle WebSocket connections (%.1f MB before)", r.WSIdleConns, r.WSIdleBaseRSSMB)},
		}},
	}
}

// WriteTable writes the figures as a table for a person, by area: each
// with its value, its floor and the value's ratio to it where the run
// measured one, its target where agentd has one, and what it measures.
func (r *Result) WriteTable(w io.Writer) error {
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	first := true
	for _, s := range r.sections() {
		if !s.shown {
			continue
		}
		// A line without cells ends the columns above it: each area is
		// aligned on its own, under a header of its own.
		if !first {
			fmt.Fprintln(tw)
		}
		first = false
		fmt.Fprintf(tw, "# %s\nFIGURE\tVALUE\tFLOOR\t× FLOOR\tTARGET\tWHAT\n", s.title)
		for _, f := range s.figs {
			floor, ratio := "", ""
			if f.floor > 0 {
				floor, ratio = value(f.floor, f.unit), times(f.value/f.floor)
			}
			fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\n", f.name, value(f.value, f.unit), floor, ratio, f.target, f.note)
		}
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	return r.writeFooter(w)
}

// value formats a figure in its unit: rates without decimals, the rest
// with three.
func value(v float64, unit string) string {
	if unit == "/s" {
		return strconv.FormatFloat(v, 'f', 0, 64) + " /s"
	}
	s := strconv.FormatFloat(v, 'f', 3, 64)
	if unit != "" {
		s += " " + unit
	}
	return s
}

// perRow formats what each of rows costs of total, a difference scaled
// by scale into unit; "?" when no rows were measured.
func perRow(total, scale float64, unit string, rows int) string {
	if rows <= 0 {
		return "?"
	}
	return strconv.FormatFloat(total*scale/float64(rows), 'f', 2, 64) + " " + unit
}

// times formats a ratio to a floor with two significant digits or so.
func times(x float64) string {
	switch {
	case x >= 10:
		return strconv.FormatFloat(x, 'f', 0, 64) + "×"
	case x >= 1:
		return strconv.FormatFloat(x, 'f', 1, 64) + "×"
	default:
		return strconv.FormatFloat(x, 'f', 2, 64) + "×"
	}
}
