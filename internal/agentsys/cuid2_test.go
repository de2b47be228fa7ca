package agentsys

import (
	"testing"
	"time"

	"agentd/internal/store"
)

func TestIDShape(t *testing.T) {
	g := newIDs(time.Now)
	for range 10000 {
		if id := g.next(); !store.IsInstanceID(id) {
			t.Fatalf("id %q is not an instance id", id)
		}
	}
}

func TestIDsDoNotCollide(t *testing.T) {
	n := 1_000_000
	if testing.Short() {
		n = 100_000
	}
	// Two generators, as on two nodes, with the same clock reading.
	at := time.Unix(1700000000, 0)
	now := func() time.Time { return at }
	a, b := newIDs(now), newIDs(now)
	seen := make(map[string]struct{}, n)
	for i := range n {
		g := a
		if i%2 == 1 {
			g = b
		}
		id := g.next()
		if _, dup := seen[id]; dup {
			t.Fatalf("id %q made twice after %d ids", id, i)
		}
		seen[id] = struct{}{}
	}
}
