package title

import (
	"context"
	"errors"
	"math"
	"path/filepath"
	"reflect"
	"strings"
	"sync"
	"testing"
	"time"

	"agentd/internal/agent"
	"agentd/internal/event"
	"agentd/internal/model"
	"agentd/internal/store"
	"agentd/internal/store/sqlite"
)

// provider answers every call with text (or err) and counts the calls.
type provider struct {
	mu    sync.Mutex
	text  string
	err   error
	reqs  []*model.Request
	calls chan struct{}
}

func (p *provider) Stream(ctx context.Context, req *model.Request, _ func(model.Delta)) (*model.Response, error) {
	p.mu.Lock()
	p.reqs = append(p.reqs, req)
	p.mu.Unlock()
	if p.calls != nil {
		p.calls <- struct{}{}
	}
	if p.err != nil {
		return nil, p.err
	}
	return &model.Response{Text: p.text, Usage: model.Usage{InputTokens: 100, OutputTokens: 5}}, nil
}

func (p *provider) count() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return len(p.reqs)
}

type models struct{ p *provider }

func (m models) Provider(agent.Model) (model.Provider, error) { return m.p, nil }

type agents map[string]*agent.Definition

func (a agents) Get(id string) (*agent.Definition, bool) { d, ok := a[id]; return d, ok }

var testAgents = agents{
	"real": {ID: "real", Model: agent.Model{Provider: agent.ProviderOpenAI, Name: "m"}},
	"echo": {ID: "echo", Model: agent.Model{Provider: agent.ProviderEcho, Name: "echo"}},
}

// turn logs a turn of session agent/key (its input, its reply, its end)
// as the runtime does, and returns the turn's end as the bus carries it.
func turn(t *testing.T, st *sqlite.Store, agentID, key, text, reply string) event.Event {
	t.Helper()
	ctx := t.Context()
	sess, _, err := st.Session(ctx, agentID, key)
	if err != nil {
		t.Fatal(err)
	}
	it, _, err := st.Enqueue(ctx, store.InboxItem{Session: sess.ID, Kind: event.Input, Text: text})
	if err != nil {
		t.Fatal(err)
	}
	b := &store.Batch{Session: sess.ID, Done: []int64{it.ID}, Events: []event.Event{
		event.New(sess.ID, it.ID, event.Input, event.InputData{Text: text}),
		event.New(sess.ID, it.ID, event.Text, event.TextData{Text: reply}),
		event.New(sess.ID, it.ID, event.TurnEnd, event.TurnEndData{Status: event.StatusDone, Reply: reply}),
	}}
	if err := st.Commit(ctx, b); err != nil {
		t.Fatal(err)
	}
	return b.Events[2]
}

func newTitler(t *testing.T, p *provider) (*Titler, *sqlite.Store) {
	st, err := sqlite.Open(t.Context(), filepath.Join(t.TempDir(), "agentd.db"), nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	return New(st, testAgents, models{p}, event.NewBus(), &Options{Prices: map[string]agent.Price{"m": {Input: 1, Output: 2}}}), st
}

func titleOf(t *testing.T, st *sqlite.Store, agentID, key string) (string, string) {
	t.Helper()
	s, err := st.SessionByAddress(t.Context(), agentID, key)
	if err != nil {
		t.Fatal(err)
	}
	return s.Title, s.TitleBy
}

// After a session's first reply, a real model is asked once for a title,
// which replaces the first message's; its usage is recorded.
func TestModelTitleAfterFirstReply(t *testing.T) {
	p := &provider{text: "Title: \"Trip to Lisbon in May.\"\nextra"}
	tt, st := newTitler(t, p)
	ctx := t.Context()
	tt.title(ctx, turn(t, st, "real", "k", "plan my trip to lisbon in may please", "Sure: here is a plan."))
	if got, by := titleOf(t, st, "real", "k"); got != "Trip to Lisbon in May" || by != store.TitleByModel {
		t.Errorf("title %q by %q, want the model's, cleaned", got, by)
	}
	if n := p.count(); n != 1 {
		t.Fatalf("%d model calls, want 1", n)
	}
	req := p.reqs[0]
	if req.System != Prompt || len(req.Messages) != 1 || !strings.HasPrefix(req.Messages[0].Content, Lead+"User: plan my trip") ||
		!strings.Contains(req.Messages[0].Content, "Assistant: Sure: here is a plan.") || len(req.Tools) != 0 {
		t.Errorf("request: %+v", req)
	}
	u, err := st.UsageSince(ctx, "real", time.Time{})
	if err != nil || u.InputTokens != 100 || u.OutputTokens != 5 || math.Abs(u.CostUSD-0.00011) > 1e-12 {
		t.Errorf("usage %+v, %v; want the title call's", u, err)
	}
	tt.title(ctx, turn(t, st, "real", "k", "and a hotel", "Here are three."))
	if n := p.count(); n != 1 {
		t.Errorf("%d model calls after the second reply, want still 1", n)
	}
}

// No call: for an agent on the echo model, a session a person named, a
// turn that did not end well, or a reply to a later message; and a call
// that fails leaves the first message's title.
func TestNoModelTitle(t *testing.T) {
	p := &provider{text: "A title"}
	tt, st := newTitler(t, p)
	ctx := t.Context()

	tt.title(ctx, turn(t, st, "echo", "k", "hello echo", "hello echo"))
	if got, by := titleOf(t, st, "echo", "k"); got != "hello echo" || by != store.TitleByInput {
		t.Errorf("echo: title %q by %q", got, by)
	}

	turn(t, st, "real", "named", "first", "reply")
	s, _ := st.SessionByAddress(ctx, "real", "named")
	if _, err := st.SetTitle(ctx, s.ID, "Mine", store.TitleByUser); err != nil {
		t.Fatal(err)
	}
	tt.title(ctx, turn(t, st, "real", "named", "second", "reply"))

	ev := turn(t, st, "real", "failed", "this failed", "")
	ev.Data = event.New(0, 0, event.TurnEnd, event.TurnEndData{Status: event.StatusError, Reason: "boom"}).Data
	tt.title(ctx, ev)

	turn(t, st, "real", "later", "first message", "reply") // its end went by unseen
	tt.title(ctx, turn(t, st, "real", "later", "second message", "reply"))
	if n := p.count(); n != 0 {
		t.Fatalf("%d model calls, want none", n)
	}

	p.err = errors.New("down")
	tt.title(ctx, turn(t, st, "real", "down", "will fail", "reply"))
	if got, by := titleOf(t, st, "real", "down"); got != "will fail" || by != store.TitleByInput || p.count() != 1 {
		t.Errorf("after a failed call: title %q by %q, %d calls", got, by, p.count())
	}
}

// Run titles the sessions whose first reply ends on the bus, and ends
// with its context.
func TestRun(t *testing.T) {
	p := &provider{text: "From the bus", calls: make(chan struct{}, 1)}
	tt, st := newTitler(t, p)
	ctx, cancel := context.WithCancel(t.Context())
	done := make(chan error)
	go func() { done <- tt.Run(ctx) }()
	ev := turn(t, st, "real", "k", "hello", "hi")
	// Run may not have subscribed yet: publish until the model is asked.
	for asked := false; !asked; {
		tt.bus.Publish(ev)
		select {
		case <-p.calls:
			asked = true
		case <-time.After(10 * time.Millisecond):
		}
	}
	for deadline := time.Now().Add(time.Minute); ; time.Sleep(5 * time.Millisecond) {
		if got, by := titleOf(t, st, "real", "k"); by == store.TitleByModel {
			if got != "From the bus" {
				t.Errorf("title %q", got)
			}
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("the model's title was never stored")
		}
	}
	cancel()
	if err := <-done; err != nil {
		t.Fatal(err)
	}
}

func TestClean(t *testing.T) {
	for _, tc := range []struct{ in, want string }{
		{"Trip planning", "Trip planning"},
		{"  \"Trip planning.\"  ", "Trip planning"},
		{"**Title:** Trip planning", "Trip planning"},
		{"title: «Voyage à Lisbonne»\nmore", "Voyage à Lisbonne"},
		{"", ""},
		{"\"\"", ""},
	} {
		if got := Clean(tc.in); got != tc.want {
			t.Errorf("Clean(%q) = %q, want %q", tc.in, got, tc.want)
		}
	}
}

// countingStore counts the sessions read, by id.
type countingStore struct {
	*sqlite.Store
	mu    sync.Mutex
	reads map[int64]int
}

func (c *countingStore) SessionByID(ctx context.Context, id int64) (store.Session, error) {
	c.mu.Lock()
	c.reads[id]++
	c.mu.Unlock()
	return c.Store.SessionByID(ctx, id)
}

// Once a session was asked about, Run reads nothing for its later turns:
// every turn's end goes by, and most are not a first reply.
func TestRunLaterTurnsReadNothing(t *testing.T) {
	p := &provider{text: "A title", calls: make(chan struct{}, 1)}
	_, st := newTitler(t, p)
	cs := &countingStore{Store: st, reads: map[int64]int{}}
	tt := New(cs, testAgents, models{p}, event.NewBus(), nil)
	ctx, cancel := context.WithCancel(t.Context())
	done := make(chan error)
	go func() { done <- tt.Run(ctx) }()
	// Run may not have subscribed yet: publish until the model is asked.
	publish := func(ev event.Event) (times int) {
		for asked := false; !asked; times++ {
			tt.bus.Publish(ev)
			select {
			case <-p.calls:
				asked = true
			case <-time.After(10 * time.Millisecond):
			}
		}
		return times
	}
	first := turn(t, st, "real", "a", "hello", "hi")
	times := publish(first)
	for range 5 {
		tt.bus.Publish(turn(t, st, "real", "a", "more", "ok"))
	}
	// Events reach Run in order: once the next session's model call is
	// made, the later turns of the first went by.
	publish(turn(t, st, "real", "b", "hello", "hi"))
	cancel()
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	cs.mu.Lock()
	defer cs.mu.Unlock()
	if n := cs.reads[first.Session]; n > times {
		t.Errorf("session read %d times over 6 turns, want at most %d (its first reply, as often as it was published)", n, times)
	}
}

// The sessions a Titler remembers are bounded, and the map that held them
// is let go when it is emptied rather than kept at the size it grew to.
func TestTriedBounded(t *testing.T) {
	tr := New(nil, nil, nil, event.NewBus(), nil)
	for id := range int64(maxTried) {
		if !tr.first(id) {
			t.Fatalf("session %d asked about twice", id)
		}
	}
	full := reflect.ValueOf(tr.tried).UnsafePointer()
	if tr.first(0) {
		t.Error("a session asked about again before the bound")
	}
	tr.first(maxTried)
	if n := len(tr.tried); n != 1 {
		t.Errorf("%d sessions remembered past the bound, want 1", n)
	}
	if reflect.ValueOf(tr.tried).UnsafePointer() == full {
		t.Error("the full map was kept (cleared), with the room it grew to")
	}
}
