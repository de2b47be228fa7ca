package connector

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/google/go-cmp/cmp"

	"agentd/internal/connector/markup"
	"agentd/internal/event"
	"agentd/internal/model"
	"agentd/internal/store"
)

// memStore keeps outbox rows in memory: the streamer's part of the store.
type memStore struct {
	Store // nil: what the streamer does not call
	mu    sync.Mutex
	rows  []store.OutboxItem
	ends  map[int64]event.Event // the turn_end in the log, by turn
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

func (s *memStore) Outbox(_ context.Context, f store.OutboxFilter) ([]store.OutboxItem, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	var out []store.OutboxItem
	for _, r := range s.rows {
		if f.State == "" || r.State == f.State {
			out = append(out, r)
		}
	}
	return out, nil
}

// InboxItem: no turn's message is known (a reply answers none).
func (s *memStore) InboxItem(context.Context, int64) (store.InboxItem, error) {
	return store.InboxItem{}, store.ErrNotFound
}

// The sweep's reads: no conversation is behind; a turn has ended when
// the test says so.
func (s *memStore) ConversationsBehind(context.Context, string, int) ([]store.Conversation, error) {
	return nil, nil
}

func (s *memStore) TurnEvents(_ context.Context, _, turn int64) ([]event.Event, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if e, ok := s.ends[turn]; ok {
		return []event.Event{e}, nil
	}
	return nil, nil
}

func (s *memStore) row(id int64) store.OutboxItem {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.rows[id-1]
}

// streamRig is one instance's streamer over a bus, in a synctest bubble:
// its time is the bubble's.
func streamRig(t *testing.T, fields string) (*instance, *fakePlatform, *memStore, *event.Bus) {
	return streamRigCaps(t, fields, Caps{MaxText: 4096, EditEvery: time.Second, GroupEditEvery: 3 * time.Second, Dialect: markup.Plain})
}

// streamRigCaps is streamRig on a platform of caps.
func streamRigCaps(t *testing.T, fields string, caps Caps) (*instance, *fakePlatform, *memStore, *event.Bus) {
	bus := event.NewBus()
	st := &memStore{}
	p := newFakePlatform(caps)
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

// TestStreamAdoptedAfterRestart: agentd stopped while a turn streamed
// into a message; after the restart the runtime runs the turn again and
// the sweep's streamer edits that same message with the new text as it
// comes: one message on the platform, streamed, not only the final edit.
func TestStreamAdoptedAfterRestart(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		in, p, st, bus := streamRig(t, ``)
		c := Chat{ID: "c1", Kind: ChatDM}
		old, err := p.Send(t.Context(), Outgoing{Chat: c, Text: "word00 word01 (the text of the run that died)"})
		if err != nil {
			t.Fatal(err)
		}
		st.rows = []store.OutboxItem{{ID: 1, Connector: "chat", Chat: "c1", SessionID: 1, Turn: 7, Kind: store.OutReply,
			State: store.OutStreaming, MessageIDs: []string{old.ID}, SendingPart: -1, Nonce: "a1p0"}}
		in.m.remember(1, convRef{connector: "chat", chat: c})
		in.sweep(t.Context())
		if !in.streaming(1) {
			t.Fatal("no streamer adopted the row")
		}
		publishTurn(bus, 1, 7, 50, 100*time.Millisecond, "the final text", nil)
		synctest.Wait()
		if msgs := p.messages(); len(msgs) != 1 {
			t.Fatalf("messages = %+v, want the one made before the restart", msgs)
		}
		edits := p.editList()
		if len(edits) < 3 {
			t.Fatalf("%d edits while the turn ran again for 5 s", len(edits))
		}
		if last := edits[len(edits)-1].Text; !strings.HasPrefix(last, "word00 word01 word02") || strings.Contains(last, "died") {
			t.Errorf("the message shows %q, want the new run's text", last)
		}
		if row := st.row(1); row.State != store.OutPending || row.Text != "the final text" || !slices.Equal(row.MessageIDs, []string{old.ID}) {
			t.Errorf("row = %+v", row)
		}
		if in.streaming(1) {
			t.Error("the adopted streamer did not end with its turn")
		}
	})
}

// TestStreamPastLimit: a streamed reply longer than the platform's limit
// grows across parts while it streams: part 0 is frozen at the limit and
// part 1 made, each part's message id in the row; the worker's final pass
// edits every part to its final text.
func TestStreamPastLimit(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		caps := Caps{MaxText: 100, EditEvery: time.Second, Dialect: markup.Plain}
		in, p, st, bus := streamRigCaps(t, ``, caps)
		c := Chat{ID: "c1", Kind: ChatDM}
		in.m.remember(1, convRef{connector: "chat", chat: c})
		in.watch(1, c).expect(7)
		var final strings.Builder
		for i := range 50 {
			fmt.Fprintf(&final, "word%02d ", i)
		}
		var ended time.Time
		publishTurn(bus, 1, 7, 50, 100*time.Millisecond, final.String(), func(i int) {
			if i == 49 {
				ended = time.Now()
			}
		})
		synctest.Wait()
		want := markup.Split(caps.Dialect, final.String(), caps.MaxText, caps.Unit)
		msgs := p.messages()
		if len(want) < 3 || len(msgs) < 3 {
			t.Fatalf("%d parts, %d messages made while streaming: %+v", len(want), len(msgs), msgs)
		}
		for i, m := range msgs[:len(msgs)-1] {
			if m.Text != want[i] {
				t.Errorf("part %d, full, shows %q, want %q", i, m.Text, want[i])
			}
		}
		if !msgs[1].At.Before(ended) {
			t.Error("part 1 was made only at the turn's end")
		}
		row := st.row(1)
		var ids []string
		for _, m := range msgs {
			ids = append(ids, m.ID)
		}
		if row.State != store.OutPending || !slices.Equal(row.MessageIDs, ids) {
			t.Fatalf("row = %+v, want pending with ids %q", row, ids)
		}
		in.deliver(t.Context(), row)
		if d := cmp.Diff(want, p.texts()); d != "" {
			t.Errorf("messages after the final pass (-want +got):\n%s", d)
		}
		if row := st.row(1); row.State != store.OutSent || row.Parts != len(want) {
			t.Errorf("row = %+v", row)
		}
	})
}

// TestStreamEndOnlyInLog: a turn whose end is in the log but never came
// on the bus (another node ran it, its notification lost) does not leave
// its row streaming: the sweep hands the end to the streamer, which hands
// the row to the worker and ends.
func TestStreamEndOnlyInLog(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		in, p, st, bus := streamRig(t, ``)
		in.watch(1, Chat{ID: "c1", Kind: ChatDM}).expect(7)
		bus.Publish(event.New(1, 7, event.TurnStart, nil))
		for i := range 30 {
			bus.Publish(event.New(1, 7, event.TextDelta, event.DeltaData{Text: fmt.Sprintf("word%02d ", i)}))
			time.Sleep(100 * time.Millisecond)
		}
		synctest.Wait()
		if len(p.messages()) != 1 || st.row(1).State != store.OutStreaming {
			t.Fatalf("messages %+v, row %+v: want one streaming", p.messages(), st.row(1))
		}
		st.mu.Lock()
		st.ends = map[int64]event.Event{7: event.New(1, 7, event.TurnEnd, event.TurnEndData{Status: event.StatusDone, Reply: "the final text"})}
		st.mu.Unlock()
		in.sweep(t.Context())
		synctest.Wait()
		if row := st.row(1); row.State != store.OutPending || row.Text != "the final text" {
			t.Errorf("row = %+v", row)
		}
		if in.streaming(1) {
			t.Error("the streamer still waits for its turn's end")
		}
	})
}

// TestFirstTurnStreams: a person's first message, whose session Contact
// makes, is streamed as the later ones are: its message is made while the
// turn runs, and edited to the final text.
func TestFirstTurnStreams(t *testing.T) {
	r := newRig(t, nil)
	release := make(chan struct{})
	r.model.Respond = func(ctx context.Context, req *model.Request, onDelta func(model.Delta)) (*model.Response, error) {
		onDelta(model.Delta{Text: "thinking "})
		select { // the turn runs until the test has seen the streamed message
		case <-release:
		case <-ctx.Done():
			return nil, ctx.Err()
		}
		onDelta(model.Delta{Text: "done"})
		return &model.Response{Text: "thinking done", StopReason: "stop"}, nil
	}
	r.activate(`,"dm_policy":"open","stream":{"min_chars":1,"first_after":"1ms"}`)
	if err := r.inbound(dm("k1", "u1", "hello")); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "the first turn's streamed message", func() bool { return len(r.p.texts()) == 1 })
	close(release)
	waitFor(t, "the reply", r.settled(1))
	if diff := cmp.Diff([]string{"thinking done"}, r.p.texts()); diff != "" {
		t.Errorf("messages (-want +got)\n%s", diff)
	}
}

// TestStreamCreateAnswerLost: the answer to the streamed message's create
// is lost after the platform made it. A platform that dedups nonces is
// asked again with the same nonce: the message is the first one, and the
// streaming goes on with edits (not only the final text at the end); one
// that cannot say (no nonce, no Finder) stops streaming and leaves the
// create to the worker.
func TestStreamCreateAnswerLost(t *testing.T) {
	for _, tc := range []struct {
		name    string
		nonce   bool
		streams bool
	}{{"nonce", true, true}, {"no nonce", false, false}} {
		t.Run(tc.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				in, p, st, bus := streamRigCaps(t, ``, Caps{MaxText: 4096, EditEvery: time.Second, Dialect: markup.Plain, Nonce: tc.nonce})
				p.mu.Lock()
				p.lose = 1
				p.mu.Unlock()
				in.watch(1, Chat{ID: "c1", Kind: ChatDM}).expect(7)
				publishTurn(bus, 1, 7, 60, 100*time.Millisecond, "the final text", nil)
				synctest.Wait()
				if n := len(p.messages()); n != 1 {
					t.Fatalf("%d messages, want 1", n)
				}
				row := st.row(1)
				if streamed := len(p.editList()) >= 3; streamed != tc.streams {
					t.Errorf("%d edits while streaming; streaming went on: %v, want %v", len(p.editList()), streamed, tc.streams)
				}
				resolved := row.SendingPart == -1 && len(row.MessageIDs) == 1 && row.MessageIDs[0] == "1"
				if row.State != store.OutPending || resolved != tc.streams {
					t.Errorf("row = %+v: resolved %v, want %v", row, resolved, tc.streams)
				}
			})
		})
	}
}
