package connector

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"agentd/internal/connector/markup"
	"agentd/internal/event"
	"agentd/internal/store"
)

// memStore keeps outbox rows in memory: the streamer's part of the store.
type memStore struct {
	Store // nil: what the streamer does not call
	mu    sync.Mutex
	rows  []store.OutboxItem
}

func (s *memStore) OpenOutbox(_ context.Context, it store.OutboxItem) (store.OutboxItem, bool, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, r := range s.rows {
		if r.Connector == it.Connector && r.SessionID == it.SessionID && r.Turn == it.Turn && it.Turn != 0 {
			return r, false, nil
		}
	}
	it.ID = int64(len(s.rows) + 1)
	it.CreatedAt, it.UpdatedAt = time.Now(), time.Now()
	s.rows = append(s.rows, it)
	return it, true, nil
}

func (s *memStore) MoveOutbox(_ context.Context, id int64, from string, to store.OutboxItem) (bool, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	r := &s.rows[id-1]
	if r.State != from {
		return false, nil
	}
	to.ID, to.CreatedAt, to.UpdatedAt = r.ID, r.CreatedAt, time.Now()
	*r = to
	return true, nil
}

func (s *memStore) row(id int64) store.OutboxItem {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.rows[id-1]
}

// streamRig is one instance's streamer over a bus, in a synctest bubble:
// its time is the bubble's.
func streamRig(t *testing.T, fields string) (*instance, *fakePlatform, *memStore, *event.Bus) {
	bus := event.NewBus()
	st := &memStore{}
	p := newFakePlatform(Caps{MaxText: 4096, EditEvery: time.Second, GroupEditEvery: 3 * time.Second, Dialect: markup.Plain})
	m := New(st, nil, nil, bus, map[string]Factory{"fake": p.factory}, nil)
	in := newInstance(m, "chat", spec(t, `{"platform":"fake","token_env":"T","agent":"a"`+fields+`}`))
	ctx, cancel := context.WithCancel(context.Background())
	in.plat, in.caps = p, p.caps
	in.sctx, in.scancel = ctx, cancel
	t.Cleanup(func() { in.stopStreams(); m.Close() })
	return in, p, st, bus
}

// publishTurn publishes a turn's start, words deltas every gap, and its
// end with reply.
func publishTurn(bus *event.Bus, session, turn int64, words int, gap time.Duration, reply string, at func(i int)) {
	bus.Publish(event.New(session, turn, event.TurnStart, nil))
	for i := range words {
		if at != nil {
			at(i)
		}
		bus.Publish(event.New(session, turn, event.TextDelta, event.DeltaData{Text: fmt.Sprintf("word%02d ", i)}))
		time.Sleep(gap)
	}
	bus.Publish(event.New(session, turn, event.TurnEnd, event.TurnEndData{Status: event.StatusDone, Reply: reply}))
}

// gaps fails the test if two of times are closer than every.
func gaps(t *testing.T, what string, times []time.Time, every time.Duration) {
	t.Helper()
	for i := 1; i < len(times); i++ {
		if d := times[i].Sub(times[i-1]); d < every {
			t.Errorf("%s %d came %s after the one before, less than %s", what, i, d, every)
		}
	}
}

// TestStreamEditsAtMostEvery: a streamed reply is one message, made once
// it has min_chars, then edited no more often than stream.every with the
// newest text; the final text comes from turn_end, and the row goes to
// the worker.
func TestStreamEditsAtMostEvery(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		in, p, st, bus := streamRig(t, ``)
		s := in.watch(1, Chat{ID: "c1", Kind: ChatDM})
		s.expect(7)
		publishTurn(bus, 1, 7, 50, 100*time.Millisecond, "the final text", nil)
		synctest.Wait()
		msgs := p.messages()
		if len(msgs) != 1 {
			t.Fatalf("messages = %+v, want one", msgs)
		}
		edits := p.editList()
		if len(edits) < 3 {
			t.Errorf("%d edits in 5 s of streaming at one a second", len(edits))
		}
		times := []time.Time{msgs[0].At}
		for _, e := range edits {
			times = append(times, e.At)
		}
		gaps(t, "edit", times, time.Second)
		if row := st.row(1); row.State != store.OutPending || row.Text != "the final text" || row.MessageIDs[0] != msgs[0].ID || row.Turn != 7 {
			t.Errorf("row = %+v", row)
		}
		if p.typing == 0 {
			t.Error("no typing indicator")
		}
		if in.streaming(1) {
			t.Error("the streamer did not end with its turn")
		}
	})
}

// TestStreamGroupEvery: in a group the edits are further apart.
func TestStreamGroupEvery(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		in, p, _, bus := streamRig(t, ``)
		in.watch(1, Chat{ID: "g1", Kind: ChatGroup}).expect(7)
		publishTurn(bus, 1, 7, 100, 100*time.Millisecond, "done", nil)
		synctest.Wait()
		gaps(t, "edit", append([]time.Time{p.messages()[0].At}, p.calls("edit")...), 3*time.Second)
		if n := len(p.calls("edit")); n < 2 {
			t.Errorf("%d edits in 10 s", n)
		}
	})
}

// TestStreamPausesOn429: an edit answered 429 pauses the streamer for
// the wait the platform asks; it does not queue edits.
func TestStreamPausesOn429(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		in, p, st, bus := streamRig(t, ``)
		in.watch(1, Chat{ID: "c1", Kind: ChatDM}).expect(7)
		publishTurn(bus, 1, 7, 80, 100*time.Millisecond, "the final text", func(i int) {
			if i == 20 {
				p.fail("edit", &RetryAfter{D: 4 * time.Second})
			}
		})
		synctest.Wait()
		calls := p.calls("edit")
		edits := p.editList()
		if len(calls) != len(edits)+1 {
			t.Fatalf("%d edit calls, %d edits: want one refused", len(calls), len(edits))
		}
		var refused time.Time
		for i, c := range calls {
			if i >= len(edits) || !c.Equal(edits[i].At) {
				refused = c
				break
			}
		}
		for _, e := range edits {
			if e.At.After(refused) && e.At.Sub(refused) < 4*time.Second {
				t.Errorf("an edit %s after a 429 asking for 4s", e.At.Sub(refused))
			}
		}
		if row := st.row(1); row.State != store.OutPending || row.Text != "the final text" {
			t.Errorf("row = %+v", row)
		}
	})
}

// TestStreamShortReplyNotStreamed: a reply shorter than min_chars that
// ends before first_after makes no message: the worker sends it whole.
func TestStreamShortReplyNotStreamed(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		in, p, st, bus := streamRig(t, ``)
		in.watch(1, Chat{ID: "c1", Kind: ChatDM}).expect(7)
		publishTurn(bus, 1, 7, 3, 100*time.Millisecond, "short", nil)
		synctest.Wait()
		if len(p.messages()) != 0 || len(st.rows) != 0 {
			t.Errorf("messages %+v, rows %+v", p.messages(), st.rows)
		}
	})
}
