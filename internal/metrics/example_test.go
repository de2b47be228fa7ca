package metrics_test

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"strings"

	"agentd/internal/event"
	"agentd/internal/metrics"
)

// A collector counts the events a turn logs; a scrape writes the counts in
// the Prometheus text format. In agentd, Run feeds it from the event bus.
func Example() {
	ctx := context.Background()
	c := metrics.New(nil, &metrics.Options{Version: "dev"})
	defer c.Close()
	c.Observe(ctx, event.New(1, 1, event.ModelCall, event.ModelCallData{Provider: "openai", Model: "gpt-4o-mini",
		LatencyMS: 850, InputTokens: 120, OutputTokens: 30, CostUSD: 0.0002}))
	c.Observe(ctx, event.New(1, 1, event.TurnEnd, event.TurnEndData{Status: event.StatusDone}))

	var b bytes.Buffer
	if err := c.WriteMetrics(ctx, &b); err != nil {
		fmt.Println(err)
		return
	}
	sc := bufio.NewScanner(&b)
	for sc.Scan() {
		if l := sc.Text(); strings.HasPrefix(l, "agentd_turns_total") || strings.HasPrefix(l, "agentd_tokens_total") {
			fmt.Println(l)
		}
	}
	// Output:
	// agentd_turns_total{agent="unknown",status="done"} 1
	// agentd_tokens_total{agent="unknown",model="gpt-4o-mini",direction="input"} 120
	// agentd_tokens_total{agent="unknown",model="gpt-4o-mini",direction="output"} 30
}
