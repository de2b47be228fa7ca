package agentsys

import (
	"context"
	"fmt"
	"testing"

	"agentd/internal/agent"
)

// BenchmarkStart measures starting a background agent in process (its
// row, its first event and input, durable), over SQLite: allocations per
// start.
func BenchmarkStart(b *testing.B) {
	h := newBenchHarness(b)
	b.ReportAllocs()
	i := 0
	for b.Loop() {
		if _, err := h.sys.Start(context.Background(), StartRequest{Template: "worker", Prompt: "task", Key: fmt.Sprint("k", i)}); err != nil {
			b.Fatal(err)
		}
		i++
	}
}

// BenchmarkDefinitionHit measures the registry hook's answer for a cached
// instance.
func BenchmarkDefinitionHit(b *testing.B) {
	h := newBenchHarness(b)
	in, err := h.sys.Start(context.Background(), StartRequest{Template: "worker", Prompt: "task"})
	if err != nil {
		b.Fatal(err)
	}
	h.sys.Definition(in.ID)
	b.ReportAllocs()
	for b.Loop() {
		if _, ok := h.sys.Definition(in.ID); !ok {
			b.Fatal("not found")
		}
	}
}

func newBenchHarness(b *testing.B) *harness {
	return newHarnessTB(b, &harnessOptions{cfg: agent.AgentsConfig{MaxLive: 1 << 30}})
}
