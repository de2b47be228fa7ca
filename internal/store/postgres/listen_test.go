package postgres_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/jackc/pgx/v5"

	"agentd/internal/event"
	"agentd/internal/store"
	"agentd/internal/store/postgres"
	"agentd/internal/store/postgres/pgtest"
)

// node is one agentd node of a test: a store on the shared database and
// the node's bus, fed by the store's listener.
type node struct {
	st  *postgres.Store
	bus *event.Bus
}

// openNodes opens n nodes on one new database, each with its listener
// running until the test ends.
func openNodes(t *testing.T, n int) (db string, nodes []node) {
	t.Helper()
	db = pgtest.NewDB(t)
	for range n {
		st, err := postgres.Open(t.Context(), db, nil)
		if err != nil {
			t.Fatalf("Open: %v", err)
		}
		bus := event.NewBus()
		ctx, cancel := context.WithCancel(context.Background())
		done := make(chan error, 1)
		go func() { done <- st.Listen(ctx, bus, &postgres.ListenOptions{Retry: 50 * time.Millisecond}) }()
		t.Cleanup(func() {
			cancel()
			if err := <-done; err != nil {
				t.Errorf("Listen: %v", err)
			}
			st.Close()
		})
		waitFor(t, "the listener to connect", st.Listening)
		nodes = append(nodes, node{st, bus})
	}
	return db, nodes
}

// waitFor waits until cond holds, failing the test if it does not
// within a minute.
func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	for deadline := time.Now().Add(time.Minute); !cond(); time.Sleep(5 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
	}
}

// commitTexts commits one batch of texts to session through st and
// returns the events as stored.
func commitTexts(t *testing.T, st store.Store, session int64, texts ...string) []event.Event {
	t.Helper()
	b := &store.Batch{Session: session}
	for _, s := range texts {
		b.Events = append(b.Events, event.New(session, 1, event.Text, event.TextData{Text: s}))
	}
	if err := st.Commit(t.Context(), b); err != nil {
		t.Fatalf("Commit: %v", err)
	}
	return b.Events
}

// collect reads sub until it has received the event of session with
// sequence number last, and returns what it received.
func collect(t *testing.T, sub *event.Subscription, session, last int64) []event.Event {
	t.Helper()
	var got []event.Event
	timeout := time.After(time.Minute)
	for {
		select {
		case e, ok := <-sub.C:
			if !ok {
				t.Fatalf("subscription closed: %s", sub.Err())
			}
			got = append(got, e)
			if e.Session == session && e.Seq == last {
				return got
			}
		case <-timeout:
			t.Fatalf("timed out waiting for event %d:%d; got %d events", session, last, len(got))
		}
	}
}

// key identifies a stored event for comparisons.
type key struct {
	Session, Seq int64
	Text         string
}

func keys(t *testing.T, evs []event.Event) []key {
	t.Helper()
	out := make([]key, 0, len(evs))
	for _, e := range evs {
		var d event.TextData
		if err := e.Decode(&d); err != nil {
			t.Fatalf("event %d:%d: %v", e.Session, e.Seq, err)
		}
		out = append(out, key{e.Session, e.Seq, d.Text})
	}
	return out
}

// TestListenOtherNodesEvents commits through two nodes on one database,
// interleaved, to two sessions: node B's bus gets every event node A
// committed, in each session's order, once, and none of its own (its
// runtime publishes those).
func TestListenOtherNodesEvents(t *testing.T) {
	_, nodes := openNodes(t, 2)
	a, b := nodes[0], nodes[1]
	sub := b.bus.Subscribe(0, 1024)
	defer sub.Close()
	s1, _, err := a.st.Session(t.Context(), "assistant", "chat:one")
	if err != nil {
		t.Fatal(err)
	}
	s2, _, err := b.st.Session(t.Context(), "assistant", "chat:two")
	if err != nil {
		t.Fatal(err)
	}
	var want []event.Event
	for i := range 5 {
		want = append(want, commitTexts(t, a.st, s1.ID, fmt.Sprintf("a%d.1", i), fmt.Sprintf("a%d.2", i))...)
		commitTexts(t, b.st, s1.ID, fmt.Sprintf("b%d", i)) // B's own: not published by its listener
		want = append(want, commitTexts(t, a.st, s2.ID, fmt.Sprintf("a%d", i))...)
		commitTexts(t, b.st, s2.ID, fmt.Sprintf("b%d", i))
	}
	last := commitTexts(t, a.st, s1.ID, "end")
	want = append(want, last...)
	got := collect(t, sub, s1.ID, last[0].Seq)
	if d := cmp.Diff(keys(t, want), keys(t, got)); d != "" {
		t.Errorf("node B's bus (-want +got):\n%s", d)
	}
}

// TestListenCatchesUpAfterReconnect cuts node B's listener off the
// database while both nodes commit: once it connects again, B's bus gets
// what A committed meanwhile, once, in order, and nothing of B's own.
func TestListenCatchesUpAfterReconnect(t *testing.T) {
	db, nodes := openNodes(t, 2)
	a, b := nodes[0], nodes[1]
	sub := b.bus.Subscribe(0, 1024)
	defer sub.Close()
	sess, _, err := a.st.Session(t.Context(), "assistant", "chat:one")
	if err != nil {
		t.Fatal(err)
	}
	want := commitTexts(t, a.st, sess.ID, "before")
	got := collect(t, sub, sess.ID, want[0].Seq) // B follows the session now

	// Refuse new connections, then end B's listener's.
	admin := adminConn(t, pgtest.URL(t))
	name := dbName(t, adminConn(t, db))
	exec(t, admin, "ALTER DATABASE "+name+" ALLOW_CONNECTIONS false")
	exec(t, admin, "SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE datname = '"+name+"' AND application_name = 'agentd listener'")
	waitFor(t, "the listener to notice", func() bool { return !b.st.Listening() })
	for i := range 3 {
		want = append(want, commitTexts(t, a.st, sess.ID, fmt.Sprintf("a%d", i))...)
		commitTexts(t, b.st, sess.ID, fmt.Sprintf("b%d", i))
	}
	exec(t, admin, "ALTER DATABASE "+name+" ALLOW_CONNECTIONS true")
	last := commitTexts(t, a.st, sess.ID, "after")
	want = append(want, last...)
	got = append(got, collect(t, sub, sess.ID, last[0].Seq)...)
	if d := cmp.Diff(keys(t, want), keys(t, got)); d != "" {
		t.Errorf("node B's bus (-want +got):\n%s", d)
	}
}

// TestListenOne refuses a second listener on one store.
func TestListenOne(t *testing.T) {
	_, nodes := openNodes(t, 1)
	if err := nodes[0].st.Listen(t.Context(), nodes[0].bus, nil); err != postgres.ErrListening {
		t.Errorf("second Listen = %v, want ErrListening", err)
	}
}

// adminConn connects to db, apart from the nodes' stores.
func adminConn(t *testing.T, db string) *pgx.Conn {
	t.Helper()
	c, err := pgx.Connect(t.Context(), db)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close(context.Background()) })
	return c
}

func dbName(t *testing.T, c *pgx.Conn) string {
	t.Helper()
	var name string
	if err := c.QueryRow(t.Context(), "SELECT current_database()").Scan(&name); err != nil {
		t.Fatal(err)
	}
	return name
}

func exec(t *testing.T, c *pgx.Conn, sql string) {
	t.Helper()
	if _, err := c.Exec(t.Context(), sql); err != nil {
		t.Fatalf("%s: %v", sql, err)
	}
}

// TestRelayLiveEvents: the live-only events of node A's bus (text deltas:
// never stored) reach node B's bus, in order; stored events do not go
// that way, and A's own listener does not publish A's again.
func TestRelayLiveEvents(t *testing.T) {
	_, nodes := openNodes(t, 2)
	a, b := nodes[0], nodes[1]
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- a.st.Relay(ctx, a.bus) }()
	defer func() { cancel(); <-done }()
	onB := b.bus.Subscribe(0, 1024)
	defer onB.Close()
	// The relay subscribes to A's bus in its goroutine: a session state
	// published until B has one says it is relaying.
	ready := event.New(7, 0, event.State, event.StateData{State: "active"})
	for relaying := false; !relaying; {
		a.bus.Publish(ready)
		select {
		case e := <-onB.C:
			relaying = e.Kind == event.State
		case <-time.After(10 * time.Millisecond):
		}
	}
	for len(onB.C) > 0 { // the other readiness marks
		<-onB.C
	}
	onA := a.bus.Subscribe(0, 1024)
	defer onA.Close()

	var want []string
	for i := range 50 {
		d := fmt.Sprintf("piece %d ", i)
		a.bus.Publish(event.New(7, 3, event.TextDelta, event.DeltaData{Text: d}))
		want = append(want, d)
	}
	a.bus.Publish(event.Event{Session: 7, Seq: 9, Kind: event.Text, Data: []byte(`{"text":"stored"}`)}) // not relayed
	a.bus.Publish(event.New(7, 3, event.TurnStart, nil))                                                // the last one
	var got []string
	timeout := time.After(time.Minute)
	for done := false; !done; {
		var e event.Event
		select {
		case e = <-onB.C:
		case <-timeout:
			t.Fatalf("node B got %d deltas, then nothing for a minute", len(got))
		}
		if e.Kind == event.State {
			continue // a late readiness mark
		}
		if e.Kind == event.TurnStart {
			done = true
			continue
		}
		if e.Kind != event.TextDelta || e.Session != 7 || e.Turn != 3 || e.Seq != 0 {
			t.Fatalf("node B got %+v", e)
		}
		var d event.DeltaData
		if err := e.Decode(&d); err != nil {
			t.Fatal(err)
		}
		got = append(got, d.Text)
	}
	if d := cmp.Diff(want, got); d != "" {
		t.Errorf("node B's deltas (-want +got):\n%s", d)
	}
	// A's bus has its own 52 events once: its listener published none.
	if n := len(onA.C); n != 52 {
		t.Errorf("node A's bus holds %d events, want its own 52", n)
	}
}
