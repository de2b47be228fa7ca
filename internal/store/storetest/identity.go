package storetest

import (
	"encoding/json"
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"agentd/internal/event"
	"agentd/internal/store"
)

// testIdentityCharacters: a character reads back as put, by pubkey and by
// name (newest first), after a reopen; a put of the same pubkey replaces
// the file and name and keeps CreatedAt; an unknown pubkey is ErrNotFound;
// a file that is not a JSON object or an empty pubkey is refused.
func testIdentityCharacters(t *testing.T, x *suite) {
	ctx := t.Context()
	name := x.name()
	s := x.open(t, name)
	at := time.Date(2026, 11, 26, 14, 0, 0, 123456789, time.UTC)
	a := store.Character{Pubkey: "KeyA", Name: "assistant", File: json.RawMessage(`{"name":"assistant","pubkey":"KeyA"}`), UpdatedAt: at}
	b := store.Character{Pubkey: "KeyB", Name: "assistant", File: json.RawMessage(`{"name":"assistant","pubkey":"KeyB"}`), UpdatedAt: at.Add(time.Second)}
	for _, c := range []store.Character{a, b} {
		got, err := s.PutCharacter(ctx, c)
		c.CreatedAt = c.UpdatedAt
		if err != nil || !cmp.Equal(got, c) {
			t.Fatalf("PutCharacter(%s) = %+v, %v; want %+v", c.Pubkey, got, err, c)
		}
	}
	a.CreatedAt, b.CreatedAt = a.UpdatedAt, b.UpdatedAt
	_ = s.Close()
	s = x.open(t, name)
	if got, err := s.Character(ctx, "KeyA"); err != nil || !cmp.Equal(got, a) {
		t.Errorf("Character(KeyA) = %+v, %v; want %+v", got, err, a)
	}
	if got, err := s.CharactersNamed(ctx, "assistant"); err != nil || !cmp.Equal(got, []store.Character{b, a}) {
		t.Errorf("CharactersNamed(assistant) = %+v, %v; want b, a", got, err)
	}
	a2 := a
	a2.Name, a2.File, a2.UpdatedAt = "helper", json.RawMessage(`{"name":"helper","pubkey":"KeyA"}`), at.Add(time.Hour)
	if got, err := s.PutCharacter(ctx, a2); err != nil || !cmp.Equal(got, a2) {
		t.Errorf("PutCharacter(replace) = %+v, %v; want %+v (CreatedAt kept)", got, err, a2)
	}
	if got, err := s.Character(ctx, "KeyA"); err != nil || !cmp.Equal(got, a2) {
		t.Errorf("Character(KeyA) after replace = %+v, %v; want %+v", got, err, a2)
	}
	if got, err := s.CharactersNamed(ctx, "assistant"); err != nil || !cmp.Equal(got, []store.Character{b}) {
		t.Errorf("CharactersNamed(assistant) after rename = %+v, %v; want b alone", got, err)
	}
	if _, err := s.Character(ctx, "nobody"); !errors.Is(err, store.ErrNotFound) {
		t.Errorf("Character(nobody) = %v; want ErrNotFound", err)
	}
	for _, c := range []store.Character{{Pubkey: "", File: json.RawMessage(`{}`)}, {Pubkey: "K", File: json.RawMessage(`[1]`)},
		{Pubkey: "K", File: json.RawMessage(`nope`)}, {Pubkey: "K\x00", File: json.RawMessage(`{}`)}} {
		if _, err := s.PutCharacter(ctx, c); !errors.Is(err, store.ErrInvalid) {
			t.Errorf("PutCharacter(%q, %s) = %v; want ErrInvalid", c.Pubkey, c.File, err)
		}
	}
}

// testIdentityLogs: each pubkey's logs are numbered from 1 in the order
// they came; a log of a message id already logged stores nothing and
// returns the first row; after and limit page through them in order.
func testIdentityLogs(t *testing.T, x *suite) {
	ctx := t.Context()
	s := x.newStore(t)
	at := time.Date(2026, 11, 26, 14, 0, 0, 0, time.UTC)
	doc := func(id string) json.RawMessage { return json.RawMessage(`{"messageId":"` + id + `"}`) }
	var want []store.IdentityLog
	for i, id := range []string{"7", "3", "9"} {
		l := store.IdentityLog{Pubkey: "KeyA", MessageID: id, Lifecycle: doc(id), CreatedAt: at.Add(time.Duration(i) * time.Second)}
		got, created, err := s.AppendIdentityLog(ctx, l)
		l.Seq = int64(i + 1)
		if err != nil || !created || !cmp.Equal(got, l) {
			t.Fatalf("AppendIdentityLog(%s) = %+v, %v, %v; want %+v, created", id, got, created, err, l)
		}
		want = append(want, l)
	}
	if got, created, err := s.AppendIdentityLog(ctx, store.IdentityLog{Pubkey: "KeyB", MessageID: "7", Lifecycle: doc("7"), CreatedAt: at}); err != nil || !created || got.Seq != 1 {
		t.Errorf("AppendIdentityLog(KeyB 7) = %+v, %v, %v; want seq 1 of its own", got, created, err)
	}
	got, created, err := s.AppendIdentityLog(ctx, store.IdentityLog{Pubkey: "KeyA", MessageID: "3", Lifecycle: doc("other"), CreatedAt: at.Add(time.Hour)})
	if err != nil || created || !cmp.Equal(got, want[1]) {
		t.Errorf("AppendIdentityLog(resent 3) = %+v, %v, %v; want the first row, not created", got, created, err)
	}
	logs, err := s.IdentityLogs(ctx, "KeyA", 0, 0)
	if err != nil || !cmp.Equal(logs, want) {
		t.Errorf("IdentityLogs(KeyA) = %+v, %v; want %+v", logs, err, want)
	}
	if logs, err := s.IdentityLogs(ctx, "KeyA", 1, 1); err != nil || !cmp.Equal(logs, want[1:2]) {
		t.Errorf("IdentityLogs(KeyA, after 1, limit 1) = %+v, %v; want seq 2", logs, err)
	}
	if logs, err := s.IdentityLogs(ctx, "nobody", 0, 0); err != nil || len(logs) != 0 {
		t.Errorf("IdentityLogs(nobody) = %+v, %v; want none", logs, err)
	}
	if _, _, err := s.AppendIdentityLog(ctx, store.IdentityLog{Pubkey: "KeyA", Lifecycle: doc("x")}); !errors.Is(err, store.ErrInvalid) {
		t.Errorf("AppendIdentityLog(no message id) = %v; want ErrInvalid", err)
	}
}

// testIdentityLogsConcurrent: appends racing on one pubkey, some of the
// same message id, leave each message logged once and the seqs gapless.
func testIdentityLogsConcurrent(t *testing.T, x *suite) {
	ctx := t.Context()
	s := x.newStore(t)
	const n = 12
	var wg sync.WaitGroup
	for i := range 2 * n {
		wg.Go(func() {
			id := fmt.Sprint(i % n)
			if _, _, err := s.AppendIdentityLog(ctx, store.IdentityLog{Pubkey: "KeyA", MessageID: id, Lifecycle: json.RawMessage(`{}`)}); err != nil {
				t.Errorf("AppendIdentityLog(%s): %v", id, err)
			}
		})
	}
	wg.Wait()
	logs, err := s.IdentityLogs(ctx, "KeyA", 0, 0)
	if err != nil || len(logs) != n {
		t.Fatalf("IdentityLogs = %d logs, %v; want %d", len(logs), err, n)
	}
	seen := map[string]bool{}
	for i, l := range logs {
		if l.Seq != int64(i+1) || seen[l.MessageID] {
			t.Errorf("log %d = seq %d message %s; want seq %d, each message once", i, l.Seq, l.MessageID, i+1)
		}
		seen[l.MessageID] = true
	}
}

// testIdentityOutbox: a turn's lifecycle is queued once per server and
// agent; due rows of a key come oldest first until marked sent (another
// key's are another node's to deliver); a failed delivery
// counts a try and keeps its error; the sweep finds the ended turns of
// the agent's sessions that have no row (not a silent one, not a pending
// one, not another agent's), from the first turn queued.
func testIdentityOutbox(t *testing.T, x *suite) {
	ctx := t.Context()
	s := x.newStore(t)
	const srv = "http://127.0.0.1:7000/mcp"
	sess := mustSession(t, s, "assistant", "main")
	other := mustSession(t, s, "writer", "main")
	var turns []int64
	for i := range 4 {
		it := mustEnqueue(t, s, store.InboxItem{Session: sess.ID, Kind: event.Input, Text: fmt.Sprint("m", i)})
		mustCommit(t, s, &store.Batch{Session: sess.ID, Events: []event.Event{input(sess.ID, it.ID, it.Text)}, Done: []int64{it.ID}})
		turns = append(turns, it.ID)
	}
	silent := mustEnqueue(t, s, store.InboxItem{Session: sess.ID, Kind: event.SystemMessage, Silent: true, Text: "note"})
	mustCommit(t, s, &store.Batch{Session: sess.ID, Done: []int64{silent.ID}})
	pending := mustEnqueue(t, s, store.InboxItem{Session: sess.ID, Kind: event.Input, Text: "later"})
	theirs := mustEnqueue(t, s, store.InboxItem{Session: other.ID, Kind: event.Input, Text: "theirs"})
	mustCommit(t, s, &store.Batch{Session: other.ID, Events: []event.Event{input(other.ID, theirs.ID, "theirs")}, Done: []int64{theirs.ID}})
	_ = pending

	if first, err := s.FirstIdentityTurn(ctx, srv, "assistant"); err != nil || first != 0 {
		t.Errorf("FirstIdentityTurn before any = %d, %v; want 0", first, err)
	}
	queue := func(turn int64) store.IdentityOutboxItem {
		t.Helper()
		it, created, err := s.QueueIdentityLog(ctx, store.IdentityOutboxItem{Server: srv, Pubkey: "KeyA", Agent: "assistant", Turn: turn,
			Lifecycle: json.RawMessage(fmt.Sprintf(`{"messageId":"%d"}`, turn))})
		if err != nil || !created || it.ID == 0 || it.Turn != turn {
			t.Fatalf("QueueIdentityLog(%d) = %+v, %v, %v; want a new row", turn, it, created, err)
		}
		again, created, err := s.QueueIdentityLog(ctx, store.IdentityOutboxItem{Server: srv, Pubkey: "KeyB", Agent: "assistant", Turn: turn, Lifecycle: json.RawMessage(`{}`)})
		if err != nil || created || again.ID != it.ID || string(again.Lifecycle) != string(it.Lifecycle) {
			t.Fatalf("QueueIdentityLog(%d) again = %+v, %v, %v; want the first row", turn, again, created, err)
		}
		return it
	}
	r1, r3 := queue(turns[1]), queue(turns[3])
	if first, err := s.FirstIdentityTurn(ctx, srv, "assistant"); err != nil || first != turns[1] {
		t.Errorf("FirstIdentityTurn = %d, %v; want %d", first, err, turns[1])
	}
	missed, err := s.IdentityTurns(ctx, srv, "assistant", turns[1]-1, 0)
	if err != nil || !cmp.Equal(missed, []int64{turns[2]}) {
		t.Errorf("IdentityTurns = %v, %v; want [%d] (queued, silent, pending and other agents' left out)", missed, err, turns[2])
	}
	if missed, err := s.IdentityTurns(ctx, "http://other/mcp", "assistant", 0, 2); err != nil || !cmp.Equal(missed, turns[:2]) {
		t.Errorf("IdentityTurns(other server, limit 2) = %v, %v; want %v", missed, err, turns[:2])
	}
	r2 := queue(turns[2])
	if _, _, err := s.QueueIdentityLog(ctx, store.IdentityOutboxItem{Server: srv, Pubkey: "KeyB", Agent: "writer", Turn: theirs.ID, Lifecycle: json.RawMessage(`{}`)}); err != nil {
		t.Fatalf("QueueIdentityLog(another key): %v", err)
	}
	due := func(want ...store.IdentityOutboxItem) {
		t.Helper()
		got, err := s.DueIdentityLogs(ctx, srv, "KeyA", 0)
		if err != nil {
			t.Fatalf("DueIdentityLogs: %v", err)
		}
		var ids, wantIDs []int64
		for _, it := range got {
			ids = append(ids, it.ID)
		}
		for _, it := range want {
			wantIDs = append(wantIDs, it.ID)
		}
		if !cmp.Equal(ids, wantIDs) {
			t.Errorf("DueIdentityLogs = rows %v; want %v", ids, wantIDs)
		}
	}
	due(r1, r3, r2)
	if err := s.MarkIdentityLog(ctx, r1.ID, time.Time{}, "server down"); err != nil {
		t.Fatalf("MarkIdentityLog(failed): %v", err)
	}
	got, _ := s.DueIdentityLogs(ctx, srv, "KeyA", 1)
	if len(got) != 1 || got[0].Tries != 1 || got[0].Error != "server down" {
		t.Errorf("DueIdentityLogs after a failure = %+v; want row %d with 1 try and its error", got, r1.ID)
	}
	sent := time.Date(2026, 11, 26, 15, 0, 0, 0, time.UTC)
	if err := s.MarkIdentityLog(ctx, r1.ID, sent, ""); err != nil {
		t.Fatalf("MarkIdentityLog(sent): %v", err)
	}
	due(r3, r2)
	if err := s.MarkIdentityLog(ctx, 1<<40, sent, ""); !errors.Is(err, store.ErrNotFound) {
		t.Errorf("MarkIdentityLog(no row) = %v; want ErrNotFound", err)
	}
	if due, err := s.DueIdentityLogs(ctx, srv, "KeyB", 0); err != nil || len(due) != 1 || due[0].Turn != theirs.ID {
		t.Errorf("DueIdentityLogs(KeyB) = %+v, %v; want its one row", due, err)
	}
	if due, err := s.DueIdentityLogs(ctx, "http://other/mcp", "KeyA", 0); err != nil || len(due) != 0 {
		t.Errorf("DueIdentityLogs(other server) = %+v, %v; want none", due, err)
	}
	for _, bad := range []store.IdentityOutboxItem{{Server: srv, Pubkey: "KeyA", Agent: "assistant"}, {Server: srv, Agent: "assistant", Turn: turns[0]}} {
		bad.Lifecycle = json.RawMessage(`{}`)
		if _, _, err := s.QueueIdentityLog(ctx, bad); !errors.Is(err, store.ErrInvalid) {
			t.Errorf("QueueIdentityLog(%+v) = %v; want ErrInvalid", bad, err)
		}
	}
}
