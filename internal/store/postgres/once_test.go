package postgres_test

import (
	"fmt"
	"sync"
	"testing"

	"agentd/internal/store"
	"agentd/internal/store/postgres"
	"agentd/internal/store/postgres/pgtest"
)

// openShared opens n stores (nodes) on one new database.
func openShared(t *testing.T, n int) (string, []*postgres.Store) {
	t.Helper()
	db := pgtest.NewDB(t)
	var out []*postgres.Store
	for range n {
		st, err := postgres.Open(t.Context(), db, nil)
		if err != nil {
			t.Fatalf("Open: %v", err)
		}
		t.Cleanup(func() { st.Close() })
		out = append(out, st)
	}
	return db, out
}

// TestOnceAcrossNodes: three nodes race for each of a series of pieces of
// work and for a role; exactly one wins each, and when the leader's
// connection dies, the leadership moves to another node.
func TestOnceAcrossNodes(t *testing.T) {
	db, nodes := openShared(t, 3)
	ctx := t.Context()
	for i := range 20 {
		key := fmt.Sprintf("cron:digest:%d", i)
		var wg sync.WaitGroup
		var mu sync.Mutex
		var won []int
		for n, st := range nodes {
			wg.Go(func() {
				took, err := st.Claim(ctx, key, fmt.Sprintf("node%d", n))
				if err != nil {
					t.Errorf("node %d: Claim(%q): %v", n, key, err)
				}
				if took {
					mu.Lock()
					won = append(won, n)
					mu.Unlock()
				}
			})
		}
		wg.Wait()
		if len(won) != 1 {
			t.Fatalf("%s taken by nodes %v, want exactly one", key, won)
		}
	}

	leads := make([]store.Lead, len(nodes))
	var wg sync.WaitGroup
	for n, st := range nodes {
		wg.Go(func() {
			l, err := st.TryLead(ctx, "cron")
			if err != nil {
				t.Errorf("node %d: TryLead: %v", n, err)
			}
			leads[n] = l
		})
	}
	wg.Wait()
	leader := -1
	for n, l := range leads {
		if l != nil {
			if leader >= 0 {
				t.Fatalf("nodes %d and %d both lead", leader, n)
			}
			leader = n
		}
	}
	if leader < 0 {
		t.Fatal("no node leads")
	}

	// The leader's connection dies: it learns it lost the leadership,
	// and another node can take it.
	admin := adminConn(t, pgtest.URL(t))
	name := dbName(t, adminConn(t, db))
	exec(t, admin, "SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE datname = '"+name+"' AND application_name = 'agentd leader'")
	<-leads[leader].Lost()
	other := (leader + 1) % len(nodes)
	var next store.Lead
	waitFor(t, "another node to lead", func() bool {
		l, err := nodes[other].TryLead(ctx, "cron")
		if err != nil {
			t.Fatalf("node %d: TryLead: %v", other, err)
		}
		next = l
		return l != nil
	})
	if l, err := nodes[leader].TryLead(ctx, "cron"); err != nil || l != nil {
		t.Errorf("the old leader's TryLead = %v, %v; want none: node %d leads", l, err, other)
	}
	next.Release()
}
