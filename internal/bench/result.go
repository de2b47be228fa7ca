package bench

// Result is what Run measured; `agentd bench --json` prints it.
type Result struct {
	// In process: the breakdown (bench.go, mcp.go, memory.go), and agentd
	// serve measured as before (process.go, gateway.go).
	ModelRTTP50ms    float64 `json:"model_rtt_p50_ms"`
	TurnP50ms        float64 `json:"turn_p50_ms"`
	TurnP99ms        float64 `json:"turn_p99_ms"`
	OverheadP50ms    float64 `json:"overhead_p50_ms"`
	TurnsPerS        float64 `json:"turns_per_s"`
	ReadyMS          float64 `json:"ready_ms"`
	IdleRSSMB        float64 `json:"idle_rss_mb"`
	IdleAnonMB       float64 `json:"idle_anon_mb"` // RssAnon: what agentd allocated, not pages of its binary
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

	// Extensions (ext.go): agentd serve's start and memory over a data
	// directory of ExtRows rows, and an action tool call against the bare
	// HTTP round trip of its request.
	ExtRows             int     `json:"ext_rows"`
	ExtStartMS          float64 `json:"ext_start_ms"`
	ExtRSSMB            float64 `json:"ext_rss_mb"`
	ExtAnonMB           float64 `json:"ext_anon_mb"`
	ActionCallP50ms     float64 `json:"action_call_p50_ms"`
	ActionBareP50ms     float64 `json:"action_bare_p50_ms"`
	ActionOverheadP50ms float64 `json:"action_overhead_p50_ms"`

	// Floors: bare Go programs doing the least each figure's work needs,
	// measured in the same run (floor.go, floorserver.go).
	FloorRTTms       float64 `json:"floor_rtt_ms"`
	FloorModelPerS   float64 `json:"floor_model_per_s"`
	FloorFsyncMS     float64 `json:"floor_fsync_ms"`
	FloorStartMS     float64 `json:"floor_start_ms"`
	FloorIdleRSSMB   float64 `json:"floor_idle_rss_mb"`
	FloorRelayMS     float64 `json:"floor_relay_ms"`
	FloorRelayPerS1  float64 `json:"floor_relay_turns_per_s_1"`
	FloorRelayPerS16 float64 `json:"floor_relay_turns_per_s_16"`
	FloorRelayPerS   float64 `json:"floor_relay_turns_per_s"`
	FloorRelayCPUms  float64 `json:"floor_relay_cpu_ms"`
	FloorRelayRSSMB  float64 `json:"floor_relay_rss_mb"`
	FloorFanoutP50ms float64 `json:"floor_fanout_p50_ms"`
	FloorFanoutP99ms float64 `json:"floor_fanout_p99_ms"`

	// Through the API of agentd serve, as a client sees it (api.go).
	APITurnP50ms         float64 `json:"api_turn_p50_ms"`
	APITurnP99ms         float64 `json:"api_turn_p99_ms"`
	APIOverheadP50ms     float64 `json:"api_overhead_p50_ms"`
	APIOverheadP99ms     float64 `json:"api_overhead_p99_ms"`
	APIMinimalP50ms      float64 `json:"api_minimal_turn_p50_ms"`
	APIMinimalP99ms      float64 `json:"api_minimal_turn_p99_ms"`
	APIUnixP50ms         float64 `json:"api_unix_turn_p50_ms"`
	APIUnixP99ms         float64 `json:"api_unix_turn_p99_ms"`
	APIUnixMinimalP50ms  float64 `json:"api_unix_minimal_turn_p50_ms"`
	APIUnixMinimalP99ms  float64 `json:"api_unix_minimal_turn_p99_ms"`
	APITurnsPerS1        float64 `json:"api_turns_per_s_1"`
	APITurnsPerS16       float64 `json:"api_turns_per_s_16"`
	APITurnsPerS         float64 `json:"api_turns_per_s"`
	CPUmsPerTurn         float64 `json:"cpu_ms_per_turn"`
	RSS10kTurnsMB        float64 `json:"rss_10k_turns_mb"`
	Anon10kTurnsMB       float64 `json:"anon_10k_turns_mb"`
	APITurns             int     `json:"api_turns"`
	OneShotMS            float64 `json:"oneshot_ms"`
	FanoutP50ms          float64 `json:"fanout_p50_ms"`
	FanoutP99ms          float64 `json:"fanout_p99_ms"`
	FanoutFramesSavedPct float64 `json:"fanout_frames_saved_pct"`
	FanoutPinned         bool    `json:"fanout_pinned"`

	Turns       int `json:"turns"`
	Concurrency int `json:"concurrency"`
	Sessions    int `json:"sessions"`
	GrowthTurns int `json:"growth_turns"`
	RunInfo
}
