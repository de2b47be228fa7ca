package main

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"

	"agentd/internal/event"
	"agentd/internal/gateway"
)

// A tool result larger than an MCP frame may be reaches the model cut to
// tools.max_output_bytes with a note of how much was cut, is logged as
// truncated, and the server's connection serves the next call of the
// same turn: through `agentd serve` and a client.
func TestLargeToolResultThroughTheDaemon(t *testing.T) {
	const size = 20 << 20 // over the MCP SDK's 16 MiB frame limit
	addr := fake(t, fmt.Sprintf(`
match *
call demo__fill {"bytes": %d}
---
call demo__echo {"text": "still connected"}
---
say {{tool_result}}
`, size))
	dir := dataDir(t, nil)
	dir = dataDir(t, map[string]string{"agents/a.yaml": demoAgent(addr, dir, "tools:\n  max_output_bytes: 1000\n")})
	serve(t, dir)
	waitDemo(t, dir)

	r := run(t, dir, "send", "a", "fill it", "--json")
	if r.code != 0 {
		t.Fatalf("exit %d\n%s%s", r.code, r.stdout, r.stderr)
	}
	evs, end := jsonEvents(t, r.stdout)
	if end == nil || end.Reply != "still connected" {
		t.Fatalf("end %+v", end)
	}
	var results []event.ToolResultData
	for _, ev := range evs {
		if ev.Kind == event.ToolResult {
			var d event.ToolResultData
			json.Unmarshal(ev.Data, &d)
			results = append(results, d)
		}
	}
	if len(results) != 2 {
		t.Fatalf("tool results %+v", results)
	}
	fill := results[0]
	note := fmt.Sprintf("\n[output truncated: %d of %d bytes cut]", size-1000, size)
	if fill.IsError || !fill.Truncated || !strings.HasSuffix(fill.Output, note) || len(fill.Output) != 1000+len(note) {
		t.Errorf("the large result: error %v, truncated %v, %d bytes ending %q", fill.IsError, fill.Truncated, len(fill.Output), fill.Output[max(len(fill.Output)-80, 0):])
	}
	if results[1].IsError || results[1].Output != "still connected" {
		t.Errorf("the next call: %+v", results[1])
	}
	// The log the user reads back says the same.
	logged, _ := jsonEvents(t, okRun(t, dir, "log", "a", "--json"))
	found := false
	for _, ev := range logged {
		var d event.ToolResultData
		if ev.Kind == event.ToolResult && json.Unmarshal(ev.Data, &d) == nil && d.Name == "demo__fill" {
			found = d.Truncated && strings.HasSuffix(d.Output, note)
		}
	}
	if !found {
		t.Errorf("the log has no truncated demo__fill result")
	}
	var list []gateway.ServerInfo
	decodeOut(t, okRun(t, dir, "mcp", "list", "--json"), &list)
	for _, s := range list {
		if s.Name == "demo" && (s.State != "connected" || s.Restarts != 0) {
			t.Errorf("the demo server after the large result: %+v", s)
		}
	}
}
