package bench

import (
	"testing"
	"time"
)

func TestParseStat(t *testing.T) {
	for _, tc := range []struct {
		line string
		want time.Duration
	}{
		// utime 250 and stime 50 ticks: fields 14 and 15.
		{"1234 (agentd) S 1 1234 1234 0 -1 4194560 3000 0 0 0 250 50 0 0 20 0 12 0 100 0 0", 3 * time.Second},
		// A command name with spaces and parentheses.
		{"1234 (a (b) c) R 1 1234 1234 0 -1 4194560 3000 0 0 0 7 3 0 0 20 0 12 0 100 0 0", 100 * time.Millisecond},
		{"1234 (agentd) S 1", 0},
		{"garbage", 0},
	} {
		if got := parseStat([]byte(tc.line)); got != tc.want {
			t.Errorf("parseStat(%q) = %v, want %v", tc.line, got, tc.want)
		}
	}
}

func TestSummarize(t *testing.T) {
	samples := []SoakSample{
		{ElapsedS: 10, Turns: 100, RSSMB: 20, GoHeapMB: 4},
		{ElapsedS: 20, Turns: 200, RSSMB: 30, GoHeapMB: 5},
		{ElapsedS: 40, Turns: 400, RSSMB: 33, GoHeapMB: 6},
	}
	got := summarize(samples, 15*time.Second)
	want := SoakSummary{Turns: 400, TurnsPerS: 10, WarmupS: 20, RSSStartMB: 30, RSSEndMB: 33, RSSGrowthPct: 10, HeapGrowthPct: 20}
	if got != want {
		t.Errorf("got %+v, want %+v", got, want)
	}
}
