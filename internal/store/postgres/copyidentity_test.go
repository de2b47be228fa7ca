package postgres_test

import (
	"encoding/json"
	"path/filepath"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"agentd/internal/event"
	"agentd/internal/store"
	"agentd/internal/store/sqlite"
)

// TestCopyIdentity: an identity server's characters and logs and a
// node's queue of lifecycles come along as they are in SQLite; the next
// log of a key goes on from the copied seq, and the queue's next row
// gets an id after the copied ones.
func TestCopyIdentity(t *testing.T) {
	ctx := t.Context()
	path := filepath.Join(t.TempDir(), "agentd.db")
	lite, err := sqlite.Open(ctx, path, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer lite.Close()
	at := time.Date(2026, 11, 26, 14, 0, 0, 0, time.UTC)
	if _, err := lite.PutCharacter(ctx, store.Character{Pubkey: "KeyA", Name: "a", File: json.RawMessage(`{"name":"a"}`), UpdatedAt: at}); err != nil {
		t.Fatal(err)
	}
	for _, id := range []string{"1", "2"} {
		if _, _, err := lite.AppendIdentityLog(ctx, store.IdentityLog{Pubkey: "KeyA", MessageID: id, Lifecycle: json.RawMessage(`{}`), CreatedAt: at}); err != nil {
			t.Fatal(err)
		}
	}
	sess, _, err := lite.Session(ctx, "a", "main")
	if err != nil {
		t.Fatal(err)
	}
	it, _, err := lite.Enqueue(ctx, store.InboxItem{Session: sess.ID, Kind: event.Input, Text: "hi"})
	if err != nil {
		t.Fatal(err)
	}
	row, _, err := lite.QueueIdentityLog(ctx, store.IdentityOutboxItem{Server: "http://s/mcp", Pubkey: "KeyA", Agent: "a", Turn: it.ID, Lifecycle: json.RawMessage(`{}`), CreatedAt: at})
	if err != nil {
		t.Fatal(err)
	}
	src, pg := copyEnds(t, path)
	for range 2 { // a copy run again changes nothing
		if rep, err := pg.CopyFromSQLite(ctx, src, nil); err != nil || !rep.OK() {
			t.Fatalf("CopyFromSQLite: %v (%+v)", err, rep)
		}
	}
	for _, read := range []struct {
		name string
		of   func(s store.IdentityStore) (any, error)
	}{
		{"character", func(s store.IdentityStore) (any, error) { return s.Character(ctx, "KeyA") }},
		{"logs", func(s store.IdentityStore) (any, error) { return s.IdentityLogs(ctx, "KeyA", 0, 0) }},
		{"queue", func(s store.IdentityStore) (any, error) {
			return s.(store.IdentityOutbox).DueIdentityLogs(ctx, "http://s/mcp", "KeyA", 0)
		}},
	} {
		want, err := read.of(lite)
		if err != nil {
			t.Fatal(err)
		}
		got, err := read.of(pg)
		if err != nil {
			t.Fatal(err)
		}
		if d := cmp.Diff(want, got); d != "" {
			t.Errorf("the %s (-sqlite +postgres):\n%s", read.name, d)
		}
	}
	if l, created, err := pg.AppendIdentityLog(ctx, store.IdentityLog{Pubkey: "KeyA", MessageID: "3", Lifecycle: json.RawMessage(`{}`)}); err != nil || !created || l.Seq != 3 {
		t.Errorf("AppendIdentityLog after the copy = %+v, %v, %v; want seq 3", l, created, err)
	}
	it2, _, err := pg.Enqueue(ctx, store.InboxItem{Session: sess.ID, Kind: event.Input, Text: "again"})
	if err != nil {
		t.Fatal(err)
	}
	if next, _, err := pg.QueueIdentityLog(ctx, store.IdentityOutboxItem{Server: "http://s/mcp", Pubkey: "KeyA", Agent: "a", Turn: it2.ID, Lifecycle: json.RawMessage(`{}`)}); err != nil || next.ID <= row.ID {
		t.Errorf("QueueIdentityLog after the copy = %+v, %v; want an id after %d", next, err, row.ID)
	}
}
