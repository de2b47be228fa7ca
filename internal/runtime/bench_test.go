package runtime_test

import (
	"fmt"
	"sync/atomic"
	"testing"

	"agentd/internal/event"
	"agentd/internal/runtime"
)

// BenchmarkSend measures one turn through the runtime — inbox, worker,
// engine, log — with a model that answers at once, in one session.
func BenchmarkSend(b *testing.B) {
	e := newEnv(b, setup{})
	ctx := b.Context()
	b.ReportAllocs()
	for i := 0; b.Loop(); i++ {
		_, end, err := e.rt.Send(ctx, runtime.Input{Session: "a/bench", Text: fmt.Sprintf("a:%d", i)})
		if err != nil || end.Status != event.StatusDone {
			b.Fatalf("%v %+v", err, end)
		}
	}
}

// BenchmarkSendParallel measures turns of many sessions at once, which
// share the store's syncs.
func BenchmarkSendParallel(b *testing.B) {
	e := newEnv(b, setup{})
	ctx := b.Context()
	var next atomic.Int64
	b.ReportAllocs()
	b.RunParallel(func(pb *testing.PB) {
		addr := fmt.Sprintf("a/bench%d", next.Add(1))
		for i := 0; pb.Next(); i++ {
			_, end, err := e.rt.Send(ctx, runtime.Input{Session: addr, Text: fmt.Sprintf("a:%d", i)})
			if err != nil || end.Status != event.StatusDone {
				b.Errorf("%v %+v", err, end)
				return
			}
		}
	})
}
