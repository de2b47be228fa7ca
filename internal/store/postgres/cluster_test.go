package postgres_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"agentd/internal/event"
	"agentd/internal/store"
	"agentd/internal/store/postgres"
	"agentd/internal/store/postgres/pgtest"
)

// Two nodes on one database: one node at a time holds a session's lease;
// once the holder stops renewing it (paused, dead), the other takes the
// session over at a higher epoch, finds its pending input, and the first
// node's commits to it are fenced, writing nothing.
func TestLeaseTakeoverFences(t *testing.T) {
	db := pgtest.NewDB(t)
	ctx := t.Context()
	open := func(name string) *postgres.Store {
		s, err := postgres.Open(ctx, db, &postgres.Options{NodeName: name, LeaseTTL: 300 * time.Millisecond, Heartbeat: 50 * time.Millisecond})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { s.Close() })
		return s
	}
	a, b := open("a"), open("b")
	sess, _, err := a.Session(ctx, "agent", "k")
	if err != nil {
		t.Fatal(err)
	}
	ea, held, err := a.Lease(ctx, sess.ID)
	if err != nil || !held {
		t.Fatalf("a: Lease = %v, %v", held, err)
	}
	if _, held, err := b.Lease(ctx, sess.ID); err != nil || held {
		t.Fatalf("b: Lease of a's live session = %v, %v; want not held", held, err)
	}
	it, _, err := b.Enqueue(ctx, store.InboxItem{Session: sess.ID, Kind: event.Input, Text: "to a's session, through b"})
	if err != nil {
		t.Fatal(err)
	}
	if orphans, err := b.Orphans(ctx, 0); err != nil || len(orphans) != 0 {
		t.Fatalf("b: Orphans while a lives = %+v, %v", orphans, err)
	}
	ev := event.New(sess.ID, it.ID, event.Input, event.InputData{Text: "x"})
	if err := a.Commit(ctx, &store.Batch{Session: sess.ID, Epoch: ea, Events: []event.Event{ev}}); err != nil {
		t.Fatalf("a: commit under its lease: %v", err)
	}

	a.StopHeartbeat() // a pauses
	var orphans []store.Lease
	for len(orphans) == 0 {
		if orphans, err = b.Orphans(ctx, 0); err != nil {
			t.Fatal(err)
		}
		time.Sleep(50 * time.Millisecond)
	}
	if len(orphans) != 1 || orphans[0].Session != sess.ID || orphans[0].Epoch != ea+1 {
		t.Fatalf("b: Orphans = %+v, want session %d at epoch %d", orphans, sess.ID, ea+1)
	}
	if _, held, err := a.Lease(ctx, sess.ID); err != nil || held {
		t.Fatalf("a: Lease of b's session = %v, %v; want not held", held, err)
	}
	late := event.New(sess.ID, it.ID, event.Text, event.TextData{Text: "late"})
	err = a.Commit(ctx, &store.Batch{Session: sess.ID, Epoch: ea, Events: []event.Event{late}, Done: []int64{it.ID}})
	if !errors.Is(err, store.ErrFenced) {
		t.Fatalf("a: commit after b took over = %v, want ErrFenced", err)
	}
	// Working memory written under the lost lease is fenced the same way.
	if _, err := a.SetWorking(store.WithEpoch(ctx, sess.ID, ea), sess.ID, "k", []byte(`1`)); !errors.Is(err, store.ErrFenced) {
		t.Fatalf("a: working memory set after b took over = %v, want ErrFenced", err)
	}
	evs, err := b.Events(ctx, sess.ID, 0, 0)
	if err != nil || len(evs) != 1 {
		t.Fatalf("events = %d, %v; want a's first one alone", len(evs), err)
	}
	if pending, err := b.Pending(ctx, sess.ID); err != nil || len(pending) != 1 {
		t.Fatalf("pending = %d, %v; want the input still pending", len(pending), err)
	}
	if err := b.Commit(ctx, &store.Batch{Session: sess.ID, Epoch: orphans[0].Epoch, Events: []event.Event{late}, Done: []int64{it.ID}}); err != nil {
		t.Fatalf("b: commit under its lease: %v", err)
	}

	if _, err := b.SetWorking(store.WithEpoch(ctx, sess.ID, orphans[0].Epoch), sess.ID, "k", []byte(`1`)); err != nil {
		t.Fatalf("b: working memory set under its lease: %v", err)
	}
	if _, err := b.DeleteWorking(store.WithEpoch(ctx, sess.ID, ea), sess.ID, "k"); !errors.Is(err, store.ErrFenced) {
		t.Fatalf("b: working memory deleted under a's old epoch = %v, want ErrFenced", err)
	}

	nodes, err := b.Nodes(ctx)
	if err != nil {
		t.Fatal(err)
	}
	state := map[string]string{}
	for _, n := range nodes {
		s := "dead"
		if n.Live {
			s = "live"
		}
		if n.Self {
			s += ", self"
		}
		state[n.Name] = s
	}
	if state["a"] != "dead" || state["b"] != "live, self" {
		t.Fatalf("nodes = %v, want a dead and b live (self)", state)
	}
}

// A node that stops cleanly gives up its leases: another node takes its
// sessions at once, and it leaves the registry.
func TestCloseGivesUpLeases(t *testing.T) {
	db := pgtest.NewDB(t)
	ctx := t.Context()
	a, err := postgres.Open(ctx, db, nil)
	if err != nil {
		t.Fatal(err)
	}
	b, err := postgres.Open(ctx, db, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	sess, _, err := a.Session(ctx, "agent", "k")
	if err != nil {
		t.Fatal(err)
	}
	ea, held, err := a.Lease(ctx, sess.ID)
	if err != nil || !held {
		t.Fatal(held, err)
	}
	a.Close()
	eb, held, err := b.Lease(ctx, sess.ID)
	if err != nil || !held || eb != ea+1 {
		t.Fatalf("b: Lease after a closed = %d, %v, %v; want %d, true", eb, held, err, ea+1)
	}
	nodes, err := b.Nodes(ctx)
	if err != nil || len(nodes) != 1 || !nodes[0].Self {
		t.Fatalf("nodes = %+v, %v; want b alone", nodes, err)
	}
}

// A node that succeeds a dead one (the next process on its data
// directory) gives the dead node's leases up as it opens: its sessions
// are taken at once, not after the lease TTL.
func TestSuccessorTakesLeasesAtOnce(t *testing.T) {
	db := pgtest.NewDB(t)
	ctx := t.Context()
	a, err := postgres.Open(ctx, db, &postgres.Options{LeaseTTL: time.Hour})
	if err != nil {
		t.Fatal(err)
	}
	defer a.Close()
	sess, _, err := a.Session(ctx, "agent", "k")
	if err != nil {
		t.Fatal(err)
	}
	ea, held, err := a.Lease(ctx, sess.ID)
	if err != nil || !held {
		t.Fatal(held, err)
	}
	a.StopHeartbeat() // a dies
	b, err := postgres.Open(ctx, db, &postgres.Options{LeaseTTL: time.Hour, Succeeds: a.NodeID()})
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	eb, held, err := b.Lease(ctx, sess.ID)
	if err != nil || !held || eb != ea+1 {
		t.Fatalf("b: Lease of its predecessor's session = %d, %v, %v; want %d, true", eb, held, err, ea+1)
	}
	nodes, err := b.Nodes(ctx)
	if err != nil || len(nodes) != 1 || !nodes[0].Self {
		t.Fatalf("nodes = %+v, %v; want b alone", nodes, err)
	}
}

// A successor forgets its predecessor although a transaction of the
// predecessor's, still running on the server after its process died,
// holds some of its leases and waits for others: PostgreSQL aborts one
// of the two for the deadlock, and the successor's forget is tried again
// once the other has ended.
func TestSuccessorForgetsThroughADeadlock(t *testing.T) {
	db := pgtest.NewDB(t)
	ctx := t.Context()
	a, err := postgres.Open(ctx, db, &postgres.Options{LeaseTTL: time.Hour})
	if err != nil {
		t.Fatal(err)
	}
	defer a.Close()
	var ids []int64
	for _, key := range []string{"one", "two"} {
		sess, _, err := a.Session(ctx, "agent", key)
		if err != nil {
			t.Fatal(err)
		}
		if _, held, err := a.Lease(ctx, sess.ID); err != nil || !held {
			t.Fatal(held, err)
		}
		ids = append(ids, sess.ID)
	}
	a.StopHeartbeat() // a dies; one of its commits goes on on the server
	conn, err := pgx.Connect(ctx, db)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(context.Background())
	tx, err := conn.Begin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer tx.Rollback(context.Background())
	const share = `SELECT 1 FROM agentd_leases WHERE session_id = $1 FOR SHARE`
	if _, err := tx.Exec(ctx, share, ids[1]); err != nil {
		t.Fatal(err)
	}
	opened := make(chan error, 1)
	go func() {
		b, err := postgres.Open(ctx, db, &postgres.Options{LeaseTTL: time.Hour, Succeeds: a.NodeID()})
		if err == nil {
			b.Close()
		}
		opened <- err
	}()
	// The successor's forget gives up the first lease, then waits for the
	// second; the predecessor's transaction then waits for the first.
	watch, err := pgx.Connect(ctx, db)
	if err != nil {
		t.Fatal(err)
	}
	defer watch.Close(context.Background())
	for waiting := false; !waiting; {
		err := watch.QueryRow(ctx, `SELECT EXISTS (SELECT 1 FROM pg_stat_activity
			WHERE datname = current_database() AND wait_event_type = 'Lock' AND query LIKE '%-infinity%')`).Scan(&waiting)
		if err != nil {
			t.Fatal(err)
		}
		time.Sleep(10 * time.Millisecond)
	}
	_, err = tx.Exec(ctx, share, ids[0])
	if err != nil {
		t.Logf("the predecessor's transaction was aborted for the deadlock: %v", err)
	}
	tx.Rollback(ctx)
	if err := <-opened; err != nil {
		t.Fatalf("the successor did not open: %v", err)
	}
}
