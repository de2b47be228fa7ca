package connector

import (
	"fmt"
	"testing"
)

// BenchmarkOutboxDeliver is one reply's way through the outbox over the
// scripted platform and SQLite: the row opened from its turn's end, then
// delivered (marked, created, recorded, sent). Its allocations are the
// deterministic figure.
func BenchmarkOutboxDeliver(b *testing.B) {
	r := newRig(b, nil)
	r.activate(`,"dm_policy":"open"`)
	if err := r.p.handler(b.Context()).Inbound(b.Context(), dm("k0", "u1", "hello")); err != nil {
		b.Fatal(err)
	}
	waitFor(b, "the first reply", r.settled(1))
	first := r.rows()[0]
	in := r.m.inst("chat")
	r.m.Close() // its worker and sweep stop; the instance keeps its platform for the calls below
	b.ReportAllocs()
	b.ResetTimer()
	for i := range b.N {
		e := ended{session: first.SessionID, turn: first.Turn + int64(i) + 1000000, chat: chatOf(first.Chat, "")}
		e.end.Status, e.end.Reply = "done", fmt.Sprintf("reply %d", i)
		if err := in.open(b.Context(), e); err != nil {
			b.Fatal(err)
		}
		rows, err := r.k.Store.DueOutbox(b.Context(), "chat", r.now().Add(1e12), 1)
		if err != nil || len(rows) == 0 {
			b.Fatal(err, len(rows))
		}
		in.deliver(b.Context(), rows[0])
	}
}
