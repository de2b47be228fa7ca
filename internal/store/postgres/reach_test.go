package postgres

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"testing"
	"time"

	"agentd/internal/event"
	"agentd/internal/store"
	"agentd/internal/store/postgres/pgtest"
)

// While the database cannot be reached, a turn's write is held and
// retried, new inputs are refused with store.ErrUnavailable, and once the
// database is back the held write is committed, once.
func TestWritesHeldWhileUnreachable(t *testing.T) {
	proxy, via := pgtest.NewProxy(t, pgtest.NewDB(t))
	s, err := Open(t.Context(), via, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	ctx := t.Context()
	sess, _, err := s.Session(ctx, "assistant", "chat:alice")
	if err != nil {
		t.Fatal(err)
	}
	text := func(s string) []event.Event {
		return []event.Event{event.New(sess.ID, 1, event.Text, event.TextData{Text: s})}
	}
	if err := s.Commit(ctx, &store.Batch{Session: sess.ID, Events: text("before")}); err != nil {
		t.Fatal(err)
	}

	proxy.Cut()
	s.pool.Reset() // as a failed write does (lostConn): the idle connections are dead
	wait := s.CommitAsync(ctx, &store.Batch{Session: sess.ID, Events: text("held")})
	for deadline := time.Now().Add(time.Minute); s.Reachable(); time.Sleep(time.Millisecond) {
		// until the writer finds the database unreachable and holds the write
		if time.Now().After(deadline) {
			t.Fatalf("the writer never held the write; it gave %v", wait())
		}
	}
	if _, _, err := s.Enqueue(ctx, store.InboxItem{Session: sess.ID, Kind: event.Input, Text: "new"}); !errors.Is(err, store.ErrUnavailable) {
		t.Errorf("Enqueue while unreachable = %v, want ErrUnavailable", err)
	}
	proxy.Restore()
	if err := wait(); err != nil {
		t.Fatalf("the held write: %v", err)
	}
	evs, err := s.Events(ctx, sess.ID, 0, 0)
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, e := range evs {
		var d event.TextData
		e.Decode(&d)
		got = append(got, d.Text)
	}
	if len(got) != 2 || got[0] != "before" || got[1] != "held" {
		t.Errorf("stored %q, want [before held]", got)
	}
	if !s.Reachable() {
		t.Error("still unreachable after the held write committed")
	}
}

// TestLost tells a database that cannot be reached from a caller that
// stopped waiting.
func TestLost(t *testing.T) {
	for _, c := range []struct {
		err  error
		want bool
	}{
		{io.EOF, true},
		{fmt.Errorf("read: %w", io.ErrUnexpectedEOF), true},
		{&net.OpError{Op: "dial", Err: errors.New("connection refused")}, true},
		{context.Canceled, false},
		{context.DeadlineExceeded, false},
		{fmt.Errorf("query: %w", context.DeadlineExceeded), false},
		{errors.New("something else"), false},
	} {
		if got := lost(c.err); got != c.want {
			t.Errorf("lost(%v) = %v, want %v", c.err, got, c.want)
		}
	}
}
