package storetest

import (
	"errors"
	"testing"

	"agentd/internal/event"
	"agentd/internal/store"
)

// testLeases: a node alone on its store takes the lease of a session with
// pending input and none, keeps it at the same epoch, commits under it,
// gives it up and takes it again.
func testLeases(t *testing.T, x *suite) {
	s := x.newStore(t)
	ctx := t.Context()
	a := mustSession(t, s, "a", "k")
	idle := mustSession(t, s, "a", "idle")
	it := mustEnqueue(t, s, store.InboxItem{Session: a.ID, Kind: event.Input, Text: "hi"})

	orphans, err := s.Orphans(ctx, 0)
	if err != nil {
		t.Fatal(err)
	}
	if len(orphans) != 1 || orphans[0].Session != a.ID || orphans[0].Epoch <= 0 {
		t.Fatalf("Orphans = %+v, want session %d alone with an epoch", orphans, a.ID)
	}
	epoch := orphans[0].Epoch
	if released, err := s.Unlease(ctx, a.ID, epoch); err != nil || released {
		t.Fatalf("Unlease with an input pending = %v, %v; want kept", released, err)
	}
	for range 2 {
		e, held, err := s.Lease(ctx, a.ID)
		if err != nil || !held || e != epoch {
			t.Fatalf("Lease of a session this node holds = %d, %v, %v; want %d, true", e, held, err, epoch)
		}
	}
	mustCommit(t, s, &store.Batch{Session: a.ID, Epoch: epoch, Events: []event.Event{input(a.ID, it.ID, "hi")}, Done: []int64{it.ID}})
	if released, err := s.Unlease(ctx, a.ID, epoch); err != nil || !released {
		t.Fatalf("Unlease with nothing pending = %v, %v; want released", released, err)
	}
	e, held, err := s.Lease(ctx, a.ID)
	if err != nil || !held || e != epoch {
		t.Fatalf("Lease after Unlease = %d, %v, %v; want %d (no other node wrote), true", e, held, err, epoch)
	}
	mustCommit(t, s, &store.Batch{Session: a.ID, Epoch: e, Events: []event.Event{text(a.ID, it.ID, "hello")}})
	if orphans, err := s.Orphans(ctx, 0); err != nil || len(orphans) != 0 {
		t.Fatalf("Orphans with nothing pending = %+v, %v", orphans, err)
	}
	// A session never leased is leased on demand.
	if e, held, err := s.Lease(ctx, idle.ID); err != nil || !held || e <= 0 {
		t.Fatalf("Lease of a new session = %d, %v, %v", e, held, err)
	}
	evs, err := s.Events(ctx, a.ID, 0, 0)
	if err != nil || len(evs) != 2 {
		t.Fatalf("events = %d, %v; want 2", len(evs), err)
	}
	s.Close()
	if _, _, err := s.Lease(ctx, a.ID); !errors.Is(err, store.ErrClosed) {
		t.Fatalf("Lease after Close = %v, want ErrClosed", err)
	}
}

// testNodes: the registry lists the node that answers, live.
func testNodes(t *testing.T, x *suite) {
	s := x.newStore(t)
	nodes, err := s.Nodes(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	var self []store.Node
	for _, n := range nodes {
		if n.Self {
			self = append(self, n)
		}
	}
	if len(self) != 1 || !self[0].Live || self[0].ID == "" || self[0].StartedAt.IsZero() {
		t.Fatalf("Nodes = %+v, want this node once, live, with an id and a start", nodes)
	}
}
