package sqlite

import (
	"context"
	"path/filepath"
	"testing"

	"agentd/internal/event"
	"agentd/internal/store"
)

func TestEnqueueEarly(t *testing.T) {
	ctx := context.Background()
	s, err := Open(ctx, filepath.Join(t.TempDir(), "t.db"), nil)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	sess, _, err := s.Session(ctx, "a", "k")
	if err != nil {
		t.Fatal(err)
	}
	item := store.InboxItem{Session: sess.ID, Kind: event.Input, Text: "hi", IdempotencyKey: "k1"}
	got, dup, durable, err := s.EnqueueEarly(ctx, item)
	if err != nil || dup || got.ID == 0 {
		t.Fatalf("EnqueueEarly: %+v %v %v", got, dup, err)
	}
	if err := durable(); err != nil {
		t.Fatal(err)
	}
	stored, err := s.InboxItem(ctx, got.ID)
	if err != nil || stored.Text != "hi" || stored.State != store.InboxPending {
		t.Fatalf("stored %+v %v", stored, err)
	}
	again, dup, durable, err := s.EnqueueEarly(ctx, item)
	if err != nil || !dup || again.ID != got.ID {
		t.Fatalf("redelivery: %+v %v %v", again, dup, err)
	}
	if err := durable(); err != nil {
		t.Fatal(err)
	}
	// Bad input is refused before anything is handed to the writer.
	if _, _, _, err := s.EnqueueEarly(ctx, store.InboxItem{Session: sess.ID, Kind: event.Text}); err == nil {
		t.Fatal("an inbox item of kind text was accepted")
	}
	// Writes handed over later are durable after the item.
	b := &store.Batch{Session: sess.ID, Events: []event.Event{event.New(sess.ID, got.ID, event.Text, event.TextData{Text: "indexed later"})}, Done: []int64{got.ID}}
	if err := s.Commit(ctx, b); err != nil {
		t.Fatal(err)
	}
	// Text is in the search index by the time a search runs.
	hits, err := s.SearchText(ctx, "indexed", 5)
	if err != nil || len(hits) != 1 {
		t.Fatalf("search: %d hits, %v", len(hits), err)
	}
}

func TestIndexCatchesUpAfterReopen(t *testing.T) {
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "t.db")
	s, err := Open(ctx, path, nil)
	if err != nil {
		t.Fatal(err)
	}
	sess, _, _ := s.Session(ctx, "a", "k")
	if err := s.Commit(ctx, &store.Batch{Session: sess.ID, Events: []event.Event{event.New(sess.ID, 0, event.Input, event.InputData{Text: "zebra crossing"})}}); err != nil {
		t.Fatal(err)
	}
	// Drop the index rows, as if the process stopped before indexing.
	if _, err := s.wconn.ExecContext(ctx, `DELETE FROM events_fts; UPDATE search_indexed SET id = 0`); err != nil {
		t.Fatal(err)
	}
	s.Close()
	s, err = Open(ctx, path, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	hits, err := s.SearchText(ctx, "zebra", 5)
	if err != nil || len(hits) != 1 {
		t.Fatalf("search after reopen: %d hits, %v", len(hits), err)
	}
}
