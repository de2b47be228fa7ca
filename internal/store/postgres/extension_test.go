package postgres_test

import (
	"context"
	"slices"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"agentd/internal/event"
	"agentd/internal/store"
	"agentd/internal/store/postgres"
	"agentd/internal/store/postgres/pgtest"
)

// watchingNode is a store whose listener tells of extension changes on
// changes ("type/name", "/" for every row).
type watchingNode struct {
	st      *postgres.Store
	changes chan string
}

// openWatching opens n stores on one new database, each watching
// extensions and listening until the test ends.
func openWatching(t *testing.T, n int) (db string, nodes []watchingNode) {
	t.Helper()
	db = pgtest.NewDB(t)
	for range n {
		st, err := postgres.Open(t.Context(), db, nil)
		if err != nil {
			t.Fatalf("Open: %v", err)
		}
		changes := make(chan string, 1000)
		st.WatchExtensions(func(typ, name string) { changes <- typ + "/" + name })
		ctx, cancel := context.WithCancel(context.Background())
		done := make(chan error, 1)
		go func() { done <- st.Listen(ctx, event.NewBus(), &postgres.ListenOptions{Retry: 50 * time.Millisecond}) }()
		t.Cleanup(func() {
			cancel()
			if err := <-done; err != nil {
				t.Errorf("Listen: %v", err)
			}
			st.Close()
		})
		nodes = append(nodes, watchingNode{st, changes})
	}
	for _, nd := range nodes {
		nd.await(t, "/") // connected: every row is to be read
	}
	return db, nodes
}

// await reads the node's changes until want, failing the test if it does
// not come within a minute.
func (nd watchingNode) await(t *testing.T, want string) {
	t.Helper()
	timeout := time.After(time.Minute)
	for {
		select {
		case got := <-nd.changes:
			if got == want {
				return
			}
		case <-timeout:
			t.Fatalf("timed out waiting for the change %q", want)
		}
	}
}

// Two nodes on one database hear each other's extension changes (and
// their own) through WatchExtensions, and after their listener lost its
// connection, are told to read every row again once it is back.
func TestWatchExtensions(t *testing.T) {
	db, nodes := openWatching(t, 2)
	a, b := nodes[0], nodes[1]
	ctx := t.Context()
	e := store.Extension{Type: "action", Name: "weather", Spec: []byte(`{"url":"https://a.example"}`), Enabled: true, Provenance: store.ProvenanceUser}
	if _, err := a.st.PutExtension(ctx, e, store.ExtPut, store.NoVersion); err != nil {
		t.Fatal(err)
	}
	b.await(t, "action/weather")
	a.await(t, "action/weather")
	if err := b.st.DeleteExtension(ctx, "action", "weather", "user", store.AnyVersion); err != nil {
		t.Fatal(err)
	}
	a.await(t, "action/weather")

	// Refuse new connections, end the listeners', change a row meanwhile.
	admin := adminConn(t, pgtest.URL(t))
	name := dbName(t, adminConn(t, db))
	exec(t, admin, "ALTER DATABASE "+name+" ALLOW_CONNECTIONS false")
	exec(t, admin, "SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE datname = '"+name+"' AND application_name = 'agentd listener'")
	waitFor(t, "the listener to notice", func() bool { return !b.st.Listening() })
	e.Name = "missed"
	if _, err := a.st.PutExtension(ctx, e, store.ExtPut, store.NoVersion); err != nil {
		t.Fatal(err)
	}
	exec(t, admin, "ALTER DATABASE "+name+" ALLOW_CONNECTIONS true")
	b.await(t, "/")
	if got, err := b.st.Extension(ctx, "action", "missed"); err != nil || got.Version != 1 {
		t.Errorf("node B reads the row changed while it was away: %+v, %v", got, err)
	}
}

// Extensions lists rows in the order of their bytes, as SQLite does,
// whatever the database's collation: here one that puts "alpha" before
// "Alpha" and ignores punctuation.
func TestExtensionsByteOrder(t *testing.T) {
	ctx := t.Context()
	st, err := postgres.Open(ctx, pgtest.NewDBCollated(t, "en-US"), nil)
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	names := []string{"a_b", "alpha", "Alpha", "a-c", "beta", "B"}
	for _, name := range names {
		e := store.Extension{Type: "action", Name: name, Spec: []byte(`{}`), Provenance: store.ProvenanceUser}
		if _, err := st.PutExtension(ctx, e, store.ExtPut, store.NoVersion); err != nil {
			t.Fatal(err)
		}
	}
	list, err := st.Extensions(ctx, "action")
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, e := range list {
		got = append(got, e.Name)
	}
	slices.Sort(names)
	if d := cmp.Diff(names, got); d != "" {
		t.Errorf("order (-bytes +listed):\n%s", d)
	}
}
