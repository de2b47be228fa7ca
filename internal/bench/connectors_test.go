package bench

import (
	"strings"
	"testing"
)

// agentd bench connectors at a tiny size, through agentd serve and the
// fake Bot API: every message answered once, both latencies timed,
// streamed replies edited and delivered with and without the 429 storm,
// the table written. It builds the agentd binary. No figure's size is
// checked, only that each was measured.
func TestConnectorsBench(t *testing.T) {
	exe := agentdBinary(t)
	c, err := newConnConfig(&ConnectorsOptions{Quick: true, Executable: exe, Users: 3, PerUser: 2, Latency: 3, Streams: 1, StreamChars: 300})
	if err != nil {
		t.Fatal(err)
	}
	res, err := runConnectors(t.Context(), t.TempDir(), c)
	if err != nil {
		t.Fatal(err)
	}
	if res.Messages != 6 || res.Duplicates != 0 || !res.StormDelivered {
		t.Errorf("counts: %+v", res)
	}
	for name, v := range map[string]float64{"throughput": res.PerS, "message p50": res.MsgP50ms, "api p50": res.APIP50ms,
		"telegram p50": res.TelegramP50ms, "final after end": res.FinalAfterEnd, "storm final after end": res.StormFinal} {
		if v <= 0 {
			t.Errorf("%s not measured: %+v", name, res)
		}
	}
	var b strings.Builder
	if err := res.WriteTable(&b); err != nil || !strings.Contains(b.String(), "added p50 / p99") {
		t.Errorf("table: %v\n%s", err, b.String())
	}
}
