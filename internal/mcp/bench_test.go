package mcp

import (
	"context"
	"encoding/json"
	"slices"
	"testing"
	"time"

	"agentd/internal/agent"
	"agentd/internal/tool"
)

// benchCall measures one tool call round trip through the Manager's tool,
// without the registry, and reports the median in microseconds.
func benchCall(b *testing.B, d Def) {
	reg := newRecorder()
	m := newTestManager(b, &Options{Tools: reg})
	if _, err := m.Add(context.Background(), d); err != nil {
		b.Fatal(err)
	}
	echo, ok := reg.Get(d.Name + "__echo")
	if !ok {
		b.Fatal("echo not registered")
	}
	ctx := context.Background()
	c := &tool.Call{ID: "call_1", Name: d.Name + "__echo", Args: json.RawMessage(`{"text":"hello"}`), Agent: "bench", Session: "bench/s"}
	took := make([]time.Duration, 0, b.N)
	b.ReportAllocs()
	b.ResetTimer()
	for b.Loop() {
		start := time.Now()
		res, err := echo.Call(ctx, c)
		took = append(took, time.Since(start))
		if err != nil || res.Output != "hello" {
			b.Fatalf("%+v, %v", res, err)
		}
	}
	b.StopTimer()
	slices.Sort(took)
	b.ReportMetric(float64(took[len(took)/2].Nanoseconds())/1e3, "p50-µs")
}

func BenchmarkCallStdio(b *testing.B) {
	benchCall(b, stdioDef(b, "b", "minimal"))
}

func BenchmarkCallStreamableHTTP(b *testing.B) {
	hs := newHTTPServer(b, newMinimalServer(), false)
	benchCall(b, Def{Name: "b", Config: agent.MCPServer{URL: hs.URL, AllowNetworks: local}})
}
