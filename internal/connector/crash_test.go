package connector

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"agentd/internal/agentsys"
	"agentd/internal/event"
	"agentd/internal/runtime"
	"agentd/internal/store"
)

var errCrash = errors.New("test: agentd died here")

// crashStore is the store as a process that dies sees it: once crash
// says a write is the one it dies at, that write and every one after
// fail (a fresh Manager over the store itself is the restart).
type crashStore struct {
	Store
	crash   func(from string, to store.OutboxItem) bool // the MoveOutbox agentd dies at
	failPut atomic.Int32                                // PutConversations that fail, without dying
	dead    atomic.Bool
	decided atomic.Bool // agentd dies once a DecidePairing has returned
}

func (s *crashStore) DecidePairing(ctx context.Context, code, state, by string, now time.Time, notice *store.OutboxItem) (store.Pairing, error) {
	if s.dead.Load() {
		return store.Pairing{}, errCrash
	}
	p, err := s.Store.DecidePairing(ctx, code, state, by, now, notice)
	s.dead.Store(s.decided.Load())
	return p, err
}

func (s *crashStore) MoveOutbox(ctx context.Context, id int64, from string, to store.OutboxItem) (bool, error) {
	if s.dead.Load() || s.crash != nil && s.crash(from, to) {
		s.dead.Store(true)
		return false, errCrash
	}
	return s.Store.MoveOutbox(ctx, id, from, to)
}

func (s *crashStore) OpenOutbox(ctx context.Context, it store.OutboxItem) (store.OutboxItem, bool, error) {
	if s.dead.Load() {
		return it, false, errCrash
	}
	return s.Store.OpenOutbox(ctx, it)
}

func (s *crashStore) SetSeen(ctx context.Context, connector, chat string, seq int64, lastIn string) error {
	if s.dead.Load() {
		return errCrash
	}
	return s.Store.SetSeen(ctx, connector, chat, seq, lastIn)
}

func (s *crashStore) PutConversation(ctx context.Context, c store.Conversation) (store.Conversation, error) {
	if s.dead.Load() || s.failPut.Add(-1) >= 0 {
		return c, errCrash
	}
	return s.Store.PutConversation(ctx, c)
}

// crashRig returns a rig whose store dies at the MoveOutbox crash picks.
func crashRig(t *testing.T, caps Caps, crash func(from string, to store.OutboxItem) bool) (*rig, *crashStore) {
	var cs *crashStore
	r := newRig(t, &rigOptions{caps: caps, wrap: func(s Store) Store { cs = &crashStore{Store: s, crash: crash}; return cs }})
	return r, cs
}

// restart is agentd starting again after it died: a fresh Manager over
// the store itself.
func (r *rig) restart() {
	r.m.Close()
	r.st = r.k.Store
	r.start()
	r.activate(`,"dm_policy":"open"`)
}

// TestCrashInCreateWindow: agentd dies after the platform made the
// reply's message and before its id was recorded. After the restart: a
// platform that dedups a nonce shows the reply once; one that cannot
// (Telegram) shows it again, at most once more, and the log says the
// reply is in doubt.
func TestCrashInCreateWindow(t *testing.T) {
	for _, tc := range []struct {
		name     string
		nonce    bool
		messages int
	}{
		{"nonce", true, 1},
		{"no nonce", false, 2},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r, cs := crashRig(t, Caps{Nonce: tc.nonce}, func(from string, to store.OutboxItem) bool {
				return from == store.OutSending && len(to.MessageIDs) > 0 && to.MessageIDs[0] != ""
			})
			r.activate(`,"dm_policy":"open"`)
			if err := r.inbound(dm("k1", "u1", "hello")); err != nil {
				t.Fatal(err)
			}
			waitFor(t, "agentd to die", cs.dead.Load)
			if it := r.rows()[0]; it.State != store.OutSending || it.SendingPart != 0 || len(r.p.messages()) != 1 {
				t.Fatalf("before the restart: row %+v, messages %+v", it, r.p.messages())
			}
			r.restart()
			waitFor(t, "the reply sent", r.settled(1))
			got := r.p.texts()
			want := []string{"re: hello"}
			if !tc.nonce {
				want = append(want, "re: hello")
			}
			if diff := cmp.Diff(want, got); diff != "" {
				t.Errorf("messages (-want +got)\n%s", diff)
			}
			it := r.rows()[0]
			if it.State != store.OutSent || it.InDoubt == tc.nonce {
				t.Errorf("row = %+v", it)
			}
			if tc.nonce {
				return
			}
			waitFor(t, "the in_doubt event", func() bool { return len(r.deliveries(it.SessionID)) > 0 })
			if ds := r.deliveries(it.SessionID); ds[0].Op != event.DeliveryInDoubt || ds[0].Outbox != it.ID {
				t.Errorf("delivery events = %+v", ds)
			}
		})
	}
}

// finderPlatform is the fake platform with a Finder that answers with
// find.
type finderPlatform struct {
	*fakePlatform
	find func(nonce string) (string, bool, error)
}

func (f finderPlatform) Find(_ context.Context, _ Chat, nonce string, _ time.Time) (string, bool, error) {
	return f.find(nonce)
}

// TestCrashInCreateWindowFind: agentd dies after the platform made the
// reply's message and before its id was recorded, on a platform that
// can look for it (Slack). Found, it is edited to the reply's final text
// and shown once; where the platform cannot look (a missing scope), the
// reply is sent again and marked in doubt.
func TestCrashInCreateWindowFind(t *testing.T) {
	for _, tc := range []struct {
		name     string
		cannot   bool
		messages int
	}{
		{"found", false, 1},
		{"cannot look", true, 2},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r, cs := crashRig(t, Caps{}, func(from string, to store.OutboxItem) bool {
				return from == store.OutSending && len(to.MessageIDs) > 0 && to.MessageIDs[0] != ""
			})
			r.activate(`,"dm_policy":"open"`)
			if err := r.inbound(dm("k1", "u1", "hello")); err != nil {
				t.Fatal(err)
			}
			waitFor(t, "agentd to die", cs.dead.Load)
			fp := finderPlatform{fakePlatform: r.p, find: func(nonce string) (string, bool, error) {
				if tc.cannot {
					return "", false, fmt.Errorf("fake: conversations.history: %w", ErrConfig)
				}
				r.p.mu.Lock()
				defer r.p.mu.Unlock()
				id, ok := r.p.nonces[nonce]
				return id, ok, nil
			}}
			r.factory = func(Config, PlatformDeps) (Platform, Caps, error) { return fp, r.p.caps, nil }
			r.restart()
			waitFor(t, "the reply sent", r.settled(1))
			if diff := cmp.Diff(slices.Repeat([]string{"re: hello"}, tc.messages), r.p.texts()); diff != "" {
				t.Errorf("messages (-want +got)\n%s", diff)
			}
			it := r.rows()[0]
			if it.State != store.OutSent || it.InDoubt != tc.cannot {
				t.Errorf("row = %+v", it)
			}
			if !tc.cannot {
				// The found message is edited to the final text.
				if es := r.p.editList(); len(es) != 1 || es[0].ID != it.MessageIDs[0] || es[0].Text != "re: hello" {
					t.Errorf("edits = %+v, want one of message %s to the final text", es, it.MessageIDs[0])
				}
				return
			}
			waitFor(t, "the in_doubt event", func() bool { return len(r.deliveries(it.SessionID)) > 0 })
			if ds := r.deliveries(it.SessionID); ds[0].Op != event.DeliveryInDoubt || ds[0].Outbox != it.ID {
				t.Errorf("delivery events = %+v", ds)
			}
		})
	}
}

// TestCrashBeforeCreate: agentd dies as it marks the create; after the
// restart the reply is sent once, not in doubt.
func TestCrashBeforeCreate(t *testing.T) {
	r, cs := crashRig(t, Caps{}, func(from string, to store.OutboxItem) bool { return to.State == store.OutSending })
	r.activate(`,"dm_policy":"open"`)
	if err := r.inbound(dm("k1", "u1", "hello")); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "agentd to die", cs.dead.Load)
	r.restart()
	waitFor(t, "the reply sent", r.settled(1))
	if diff := cmp.Diff([]string{"re: hello"}, r.p.texts()); diff != "" {
		t.Errorf("messages (-want +got)\n%s", diff)
	}
	if it := r.rows()[0]; it.InDoubt {
		t.Errorf("row = %+v", it)
	}
}

// TestCrashBeforeEndedHook: the turn's end is durable but the hook never
// ran (agentd died between them): the sweep finds the turn and the reply
// is delivered once.
func TestCrashBeforeEndedHook(t *testing.T) {
	r := newRig(t, &rigOptions{noHook: true})
	r.activate(`,"dm_policy":"open"`)
	if err := r.inbound(dm("k1", "u1", "hello")); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "the reply sent", r.settled(1))
	if diff := cmp.Diff([]string{"re: hello"}, r.p.texts()); diff != "" {
		t.Errorf("messages (-want +got)\n%s", diff)
	}
}

// diesAfterSubmit is an agent system in a process that dies just after
// a message is durable: Contact submits it, then fails.
type diesAfterSubmit struct{ *agentsys.System }

func (d diesAfterSubmit) Contact(ctx context.Context, c agentsys.Contact) (store.Instance, runtime.Receipt, error) {
	in, rc, err := d.System.Contact(ctx, c)
	if err == nil {
		err = errCrash
	}
	return in, rc, err
}

// TestCrashAfterFirstMessageDurable: a new chat's first message is
// durable and agentd dies before it is acknowledged, on a platform that
// delivers nothing again (Discord after a fresh IDENTIFY): the chat's
// conversation was recorded before the message, so after the restart
// the reply is delivered once, with no second delivery of the message.
func TestCrashAfterFirstMessageDurable(t *testing.T) {
	r := newRig(t, &rigOptions{agents: func(s *agentsys.System) Contacts { return diesAfterSubmit{s} }})
	r.activate(`,"dm_policy":"open"`)
	if err := r.inbound(dm("k1", "u1", "hello")); !errors.Is(err, errCrash) {
		t.Fatalf("inbound = %v, want %v", err, errCrash)
	}
	r.m.Close()
	r.agents = r.sys
	r.start()
	r.activate(`,"dm_policy":"open"`)
	waitFor(t, "the reply sent", r.settled(1))
	if diff := cmp.Diff([]string{"re: hello"}, r.p.texts()); diff != "" {
		t.Errorf("messages (-want +got)\n%s", diff)
	}
}

// TestCrashBeforeConversation: the message is durable but its chat's
// conversation is not recorded (agentd died between them): the platform
// delivers the message again, which starts no second turn, records the
// conversation, and the sweep delivers the first turn's reply once.
func TestCrashBeforeConversation(t *testing.T) {
	r, cs := crashRig(t, Caps{}, nil)
	cs.failPut.Store(1)
	r.activate(`,"dm_policy":"open"`)
	if err := r.inbound(dm("k1", "u1", "hello")); err == nil {
		t.Fatal("the message was acknowledged with its conversation not recorded")
	}
	if err := r.inbound(dm("k1", "u1", "hello")); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "the reply sent", r.settled(1))
	if diff := cmp.Diff([]string{"re: hello"}, r.p.texts()); diff != "" {
		t.Errorf("messages (-want +got)\n%s", diff)
	}
	if n := r.model.Calls(); n != 1 {
		t.Errorf("model calls = %d", n)
	}
}

// TestCrashWhileStreaming: agentd dies as the streamer hands its row to
// the worker; after the restart the sweep finds the turn ended and the
// worker edits the streamed message to the final text: one message.
func TestCrashWhileStreaming(t *testing.T) {
	var armed atomic.Bool // the first reply may stream too: it dies at the second
	r, cs := crashRig(t, Caps{}, func(from string, to store.OutboxItem) bool {
		return armed.Load() && from == store.OutStreaming && to.State == store.OutPending
	})
	r.activate(`,"dm_policy":"open","stream":{"min_chars":1,"first_after":"1ms"}`)
	if err := r.inbound(dm("k1", "u1", "hello")); err != nil { // the first message: its chat's session is made
		t.Fatal(err)
	}
	waitFor(t, "the first reply", r.settled(1))
	armed.Store(true)
	gate := r.model.Gate("again")
	if err := r.inbound(dm("k2", "u1", "again")); err != nil {
		t.Fatal(err)
	}
	<-gate.Entered
	gate.Open()
	waitFor(t, "agentd to die", cs.dead.Load)
	r.restart()
	waitFor(t, "the reply sent", r.settled(2))
	if diff := cmp.Diff([]string{"re: hello", "re: again"}, r.p.texts()); diff != "" {
		t.Errorf("messages (-want +got)\n%s", diff)
	}
}

// TestCrashAfterApproval: agentd dies right after an approval is
// written. The notice was written with it: after the restart the person
// is told they can talk.
func TestCrashAfterApproval(t *testing.T) {
	var cs *crashStore
	r := newRig(t, &rigOptions{wrap: func(s Store) Store { cs = &crashStore{Store: s}; return cs }})
	r.activate(``)
	if err := r.inbound(dm("k1", "u1", "hi")); err != nil {
		t.Fatal(err)
	}
	ps, err := r.m.ListPairings(t.Context(), "chat", store.PairPending)
	if err != nil || len(ps) != 1 {
		t.Fatalf("pairings = %+v, %v", ps, err)
	}
	cs.decided.Store(true)
	r.m.DecidePairing(t.Context(), ps[0].Code, true, "test") // it may fail: agentd died within it
	r.restart()
	if ok, err := r.k.Store.Approved(t.Context(), "chat", "u1"); err != nil || !ok {
		t.Fatalf("approved: %v, %v", ok, err)
	}
	waitFor(t, "the approval notice", func() bool {
		got := r.p.texts()
		return len(got) > 0 && got[len(got)-1] == approvedText
	})
}
