package storetest

import (
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"

	"agentd/internal/event"
	"agentd/internal/store"
)

// connTime is a fixed time the connector cases count from.
var connTime = time.Date(2026, 11, 26, 12, 0, 0, 0, time.UTC)

// conversation is a chat of connector "tg" talking to session.
func conversation(chat string, session int64) store.Conversation {
	return store.Conversation{Connector: "tg", Chat: chat, ChatJSON: `{"id":"` + chat + `","kind":"dm"}`,
		SessionID: session, Instance: "in" + chat}
}

// A conversation is put once: a second put of its chat keeps the first
// row. SetSeen moves the sweep's bookmark forward only, and LastIn when
// given; ConversationsBehind finds the conversations whose session's log
// grew past the bookmark.
func testConversations(t *testing.T, x *suite) {
	s := x.newStore(t)
	cs := store.ConnectorStore(s)
	ctx := t.Context()
	a, b := mustSession(t, s, "user-a", "main"), mustSession(t, s, "user-b", "main")

	first, err := cs.PutConversation(ctx, conversation("c1", a.ID))
	if err != nil {
		t.Fatal(err)
	}
	again, err := cs.PutConversation(ctx, conversation("c1", b.ID))
	if err != nil {
		t.Fatal(err)
	}
	if again.SessionID != a.ID || !again.CreatedAt.Equal(first.CreatedAt) {
		t.Errorf("second put of c1 = session %d created %v, want the first's (session %d, %v)", again.SessionID, again.CreatedAt, a.ID, first.CreatedAt)
	}
	if _, err := cs.PutConversation(ctx, conversation("c2", b.ID)); err != nil {
		t.Fatal(err)
	}
	other := conversation("c1", b.ID)
	other.Connector = "dc"
	if _, err := cs.PutConversation(ctx, other); err != nil {
		t.Fatal(err)
	}
	convs, err := cs.Conversations(ctx, "tg")
	if err != nil {
		t.Fatal(err)
	}
	want := []store.Conversation{first, conversation("c2", b.ID)}
	if d := cmp.Diff(want, convs, cmpopts.IgnoreFields(store.Conversation{}, "CreatedAt", "UpdatedAt")); d != "" {
		t.Errorf("Conversations (-want +got):\n%s", d)
	}

	behind := func(what string, want ...string) {
		t.Helper()
		got, err := cs.ConversationsBehind(ctx, "tg", 0)
		if err != nil {
			t.Fatal(err)
		}
		chats := []string{}
		for _, c := range got {
			chats = append(chats, c.Chat)
		}
		if d := cmp.Diff(append([]string{}, want...), chats); d != "" {
			t.Errorf("%s: ConversationsBehind (-want +got):\n%s", what, d)
		}
	}
	behind("no events")
	mustCommit(t, s, &store.Batch{Session: a.ID, Events: twoEvents(a.ID)})
	behind("session a grew", "c1")
	if err := cs.SetSeen(ctx, "tg", "c1", 2, "m9"); err != nil {
		t.Fatal(err)
	}
	behind("c1 seen")
	if err := cs.SetSeen(ctx, "tg", "c1", 1, ""); err != nil {
		t.Fatal(err)
	}
	convs, _ = cs.Conversations(ctx, "tg")
	if c := convs[0]; c.SeenSeq != 2 || c.LastIn != "m9" {
		t.Errorf("after SetSeen 2 (m9) then 1: seen %d, last in %q; want 2, m9", c.SeenSeq, c.LastIn)
	}
	mustCommit(t, s, &store.Batch{Session: b.ID, Events: twoEvents(b.ID)})
	mustCommit(t, s, &store.Batch{Session: a.ID, Events: twoEvents(a.ID)})
	behind("both grew", "c1", "c2")
	if err := cs.SetSeen(ctx, "tg", "nope", 1, ""); !errors.Is(err, store.ErrNotFound) {
		t.Errorf("SetSeen of no conversation: %v, want ErrNotFound", err)
	}
	if _, err := cs.PutConversation(ctx, store.Conversation{Connector: "tg", Chat: "c3", ChatJSON: "{", SessionID: a.ID, Instance: "i"}); err == nil {
		t.Error("a conversation whose chat is not JSON was put")
	}
}

func twoEvents(session int64) []event.Event {
	return []event.Event{input(session, 1, "hi"), text(session, 1, "hello")}
}

// reply is the outbox row of a turn's reply to chat c1 of session.
func reply(session, turn int64) store.OutboxItem {
	return store.OutboxItem{Connector: "tg", Chat: "c1", SessionID: session, Turn: turn, State: store.OutStreaming, NextAt: connTime}
}

// A turn's outbox row is opened once however many open it at once: every
// opener gets the same row, one of them created it. A notice (turn 0) is
// a row of its own each time.
func testOutboxOpenOnce(t *testing.T, x *suite) {
	s := x.newStore(t)
	cs := store.ConnectorStore(s)
	ctx := t.Context()
	sess := mustSession(t, s, "user-a", "main")
	const openers = 8
	got := make([]store.OutboxItem, openers)
	created := make([]bool, openers)
	errs := make([]error, openers)
	var wg sync.WaitGroup
	for i := range openers {
		wg.Go(func() {
			it := reply(sess.ID, 7)
			if i%2 == 1 {
				it.State, it.Text = store.OutPending, "done"
			}
			got[i], created[i], errs[i] = cs.OpenOutbox(ctx, it)
		})
	}
	wg.Wait()
	n := 0
	for i := range openers {
		if errs[i] != nil {
			t.Fatalf("opener %d: %v", i, errs[i])
		}
		if created[i] {
			n++
		}
		if d := cmp.Diff(got[0], got[i]); d != "" {
			t.Errorf("opener %d got another row (-0 +%d):\n%s", i, i, d)
		}
	}
	if n != 1 {
		t.Errorf("%d openers created the row, want 1", n)
	}
	r := got[0]
	if r.ID == 0 || r.Kind != store.OutReply || r.SendingPart != -1 || r.MessageIDs == nil || len(r.MessageIDs) != 0 || r.Tries != 0 || r.Acked {
		t.Errorf("opened row %+v: want an id, kind reply, sending part -1, no message ids", r)
	}
	rows, err := cs.Outbox(ctx, store.OutboxFilter{SessionID: sess.ID})
	if err != nil || len(rows) != 1 {
		t.Fatalf("Outbox of the session: %d rows, %v; want 1", len(rows), err)
	}
	// The same turn on another connector is another row; notices are
	// never merged.
	dc := reply(sess.ID, 7)
	dc.Connector = "dc"
	if _, created, err := cs.OpenOutbox(ctx, dc); err != nil || !created {
		t.Errorf("the turn's row on another connector: created %v, %v", created, err)
	}
	for range 2 {
		n := store.OutboxItem{Connector: "tg", Chat: "c1", SessionID: sess.ID, Kind: store.OutNotice, State: store.OutPending, Text: "approved"}
		if _, created, err := cs.OpenOutbox(ctx, n); err != nil || !created {
			t.Errorf("a notice: created %v, %v", created, err)
		}
	}
	if _, _, err := cs.OpenOutbox(ctx, store.OutboxItem{Connector: "tg", Chat: "c1", SessionID: sess.ID, State: "lost"}); err == nil {
		t.Error("a row of an unknown state was opened")
	}
}

// Every move is conditional: from a state the row is not in, it moves
// nothing and says false; from the one it is in, it writes every field a
// move writes, the message ids of each part included.
func testOutboxMove(t *testing.T, x *suite) {
	s := x.newStore(t)
	cs := store.ConnectorStore(s)
	ctx := t.Context()
	sess := mustSession(t, s, "user-a", "main")
	r, _, err := cs.OpenOutbox(ctx, reply(sess.ID, 3))
	if err != nil {
		t.Fatal(err)
	}
	to := r
	to.State, to.Text, to.Parts, to.MessageIDs, to.SendingPart, to.Nonce = store.OutSending, "the reply", 2, []string{"101", ""}, 1, "a1p1"
	to.Tries, to.NextAt, to.Error, to.InDoubt = 2, connTime.Add(time.Minute), "timeout", true
	if moved, err := cs.MoveOutbox(ctx, r.ID, store.OutPending, to); err != nil || moved {
		t.Fatalf("move from pending of a streaming row: moved %v, %v; want false", moved, err)
	}
	if moved, err := cs.MoveOutbox(ctx, r.ID, store.OutStreaming, to); err != nil || !moved {
		t.Fatalf("move from streaming: moved %v, %v; want true", moved, err)
	}
	if moved, err := cs.MoveOutbox(ctx, r.ID, store.OutStreaming, to); err != nil || moved {
		t.Fatalf("the same move again: moved %v, %v; want false", moved, err)
	}
	got := outboxRow(t, cs, r.ID)
	if d := cmp.Diff(to, got, cmpopts.IgnoreFields(store.OutboxItem{}, "UpdatedAt")); d != "" {
		t.Errorf("moved row (-want +got):\n%s", d)
	}
	sent := got
	sent.State, sent.MessageIDs, sent.SendingPart, sent.Nonce, sent.SentAt = store.OutSent, []string{"101", "102"}, -1, "", connTime.Add(2*time.Minute)
	if moved, err := cs.MoveOutbox(ctx, r.ID, store.OutSending, sent); err != nil || !moved {
		t.Fatalf("move to sent: moved %v, %v", moved, err)
	}
	if got := outboxRow(t, cs, r.ID); !cmp.Equal(got.MessageIDs, []string{"101", "102"}) || !got.SentAt.Equal(sent.SentAt) {
		t.Errorf("sent row: message ids %q, sent at %v", got.MessageIDs, got.SentAt)
	}
	if _, err := cs.MoveOutbox(ctx, r.ID+100, store.OutPending, to); !errors.Is(err, store.ErrNotFound) {
		t.Errorf("move of no row: %v, want ErrNotFound", err)
	}
	bad := to
	bad.State = "gone"
	if _, err := cs.MoveOutbox(ctx, r.ID, store.OutSent, bad); err == nil {
		t.Error("a move to an unknown state was made")
	}
}

// outboxRow reads row id.
func outboxRow(t testing.TB, cs store.ConnectorStore, id int64) store.OutboxItem {
	t.Helper()
	rows, err := cs.Outbox(t.Context(), store.OutboxFilter{Before: id + 1, Limit: 1})
	if err != nil || len(rows) != 1 || rows[0].ID != id {
		t.Fatalf("outbox row %d: %+v, %v", id, rows, err)
	}
	return rows[0]
}

// openAt opens row of turn in state, due at next, and returns its id.
func openAt(t testing.TB, cs store.ConnectorStore, connector string, session, turn int64, state string, next time.Time) int64 {
	t.Helper()
	it := reply(session, turn)
	it.Connector, it.State, it.NextAt = connector, state, next
	r, created, err := cs.OpenOutbox(t.Context(), it)
	if err != nil || !created {
		t.Fatalf("open turn %d: created %v, %v", turn, created, err)
	}
	return r.ID
}

// DueOutbox returns a connector's pending and sending rows due by now,
// in the order they fall due; OutboxDepth counts its rows not yet
// delivered nor given up (streaming ones too) and the oldest one's time.
func testOutboxDue(t *testing.T, x *suite) {
	s := x.newStore(t)
	cs := store.ConnectorStore(s)
	ctx := t.Context()
	sess := mustSession(t, s, "user-a", "main")
	at := func(m int) time.Time { return connTime.Add(time.Duration(m) * time.Minute) }
	late := openAt(t, cs, "tg", sess.ID, 1, store.OutPending, at(3))
	early := openAt(t, cs, "tg", sess.ID, 2, store.OutPending, at(1))
	sending := openAt(t, cs, "tg", sess.ID, 3, store.OutSending, at(2))
	openAt(t, cs, "tg", sess.ID, 4, store.OutPending, at(10))  // not due
	openAt(t, cs, "tg", sess.ID, 5, store.OutStreaming, at(0)) // the streamer's
	done := openAt(t, cs, "tg", sess.ID, 6, store.OutPending, at(0))
	openAt(t, cs, "dc", sess.ID, 7, store.OutPending, at(0)) // another connector's
	d := outboxRow(t, cs, done)
	d.State = store.OutSent
	if moved, err := cs.MoveOutbox(ctx, done, store.OutPending, d); err != nil || !moved {
		t.Fatal(moved, err)
	}

	due, err := cs.DueOutbox(ctx, "tg", at(5), 0)
	if err != nil {
		t.Fatal(err)
	}
	if d := cmp.Diff([]int64{early, sending, late}, outboxIDs(due)); d != "" {
		t.Errorf("DueOutbox (-want +got):\n%s", d)
	}
	if due, _ := cs.DueOutbox(ctx, "tg", at(5), 2); len(due) != 2 {
		t.Errorf("DueOutbox with limit 2: %d rows", len(due))
	}
	if due, _ := cs.DueOutbox(ctx, "tg", at(0), 0); len(due) != 0 {
		t.Errorf("DueOutbox before any is due: %v", outboxIDs(due))
	}
	// A retry later (a 429's retry_after) takes a row out until then.
	r := outboxRow(t, cs, early)
	r.NextAt, r.Tries = at(20), 1
	if moved, err := cs.MoveOutbox(ctx, early, store.OutPending, r); err != nil || !moved {
		t.Fatal(moved, err)
	}
	due, _ = cs.DueOutbox(ctx, "tg", at(5), 0)
	if d := cmp.Diff([]int64{sending, late}, outboxIDs(due)); d != "" {
		t.Errorf("DueOutbox after a row's next try moved (-want +got):\n%s", d)
	}

	n, oldest, err := cs.OutboxDepth(ctx, "tg")
	if err != nil {
		t.Fatal(err)
	}
	first := outboxRow(t, cs, late)
	if n != 5 || !oldest.Equal(first.CreatedAt) {
		t.Errorf("OutboxDepth = %d, oldest %v; want 5, %v", n, oldest, first.CreatedAt)
	}
	if n, oldest, err := cs.OutboxDepth(ctx, "none"); err != nil || n != 0 || !oldest.IsZero() {
		t.Errorf("OutboxDepth of an empty connector = %d, %v, %v", n, oldest, err)
	}
}

// A notice is a row like a reply's, delivered by the same worker: to a
// chat with no session yet (a person just approved, /help first) it has
// session 0; it has no turn, so two notices are two rows, and it is due,
// moved and sent like a reply. A reply of no session, and a notice of a
// turn, are refused.
func testOutboxNotice(t *testing.T, x *suite) {
	s := x.newStore(t)
	cs := store.ConnectorStore(s)
	ctx := t.Context()
	notice := store.OutboxItem{Connector: "tg", Chat: "c9", Kind: store.OutNotice, State: store.OutPending, Text: "You can talk to me now.", NextAt: connTime}
	var ids []int64
	for range 2 {
		r, created, err := cs.OpenOutbox(ctx, notice)
		if err != nil || !created {
			t.Fatalf("a notice of no session: created %v, %v", created, err)
		}
		if r.SessionID != 0 || r.Turn != 0 || r.Kind != store.OutNotice || r.Text != notice.Text || r.SendingPart != -1 {
			t.Errorf("notice row = %+v", r)
		}
		ids = append(ids, r.ID)
	}
	due, err := cs.DueOutbox(ctx, "tg", connTime, 0)
	if err != nil {
		t.Fatal(err)
	}
	if d := cmp.Diff(ids, outboxIDs(due)); d != "" {
		t.Errorf("DueOutbox (-want +got):\n%s", d)
	}
	r := due[0]
	r.State, r.MessageIDs, r.SentAt = store.OutSent, []string{"41"}, connTime.Add(time.Second)
	if moved, err := cs.MoveOutbox(ctx, r.ID, store.OutPending, r); err != nil || !moved {
		t.Fatalf("notice sent: moved %v, %v", moved, err)
	}
	if got := outboxRow(t, cs, r.ID); got.State != store.OutSent || !cmp.Equal(got.MessageIDs, []string{"41"}) {
		t.Errorf("sent notice = %+v", got)
	}
	if n, _, err := cs.OutboxDepth(ctx, "tg"); err != nil || n != 1 {
		t.Errorf("OutboxDepth = %d, %v; want the other notice", n, err)
	}
	for _, bad := range []store.OutboxItem{
		{Connector: "tg", Chat: "c9", State: store.OutPending, Text: "a reply of no session"},
		{Connector: "tg", Chat: "c9", Kind: store.OutNotice, SessionID: 1, Turn: 3, State: store.OutPending, Text: "a notice of a turn"},
		{Connector: "tg", Chat: "c9", Kind: store.OutNotice, SessionID: -1, State: store.OutPending, Text: "no such session"},
	} {
		if _, _, err := cs.OpenOutbox(ctx, bad); err == nil {
			t.Errorf("%q was opened", bad.Text)
		}
	}
}

func outboxIDs(rows []store.OutboxItem) []int64 {
	ids := []int64{}
	for _, r := range rows {
		ids = append(ids, r.ID)
	}
	return ids
}

// A failed row counts in its session's Undelivered until a person
// dismisses it (it stays failed, acked) or retries it (pending again, no
// tries, due now; failing again, it counts again). Only a failed row is
// acked; anything else is ErrNotFound. The outbox listing filters by
// connector, session and state, newest first, and pages by id.
func testOutboxAck(t *testing.T, x *suite) {
	s := x.newStore(t)
	cs := store.ConnectorStore(s)
	ctx := t.Context()
	a, b := mustSession(t, s, "user-a", "main"), mustSession(t, s, "user-b", "main")
	fail := func(id int64) {
		t.Helper()
		r := outboxRow(t, cs, id)
		from := r.State
		r.State, r.Tries, r.Error = store.OutFailed, 10, "chat not found"
		if moved, err := cs.MoveOutbox(ctx, id, from, r); err != nil || !moved {
			t.Fatal(moved, err)
		}
	}
	undelivered := func(what string, want map[int64]int) {
		t.Helper()
		ss, err := s.Sessions(ctx, store.SessionFilter{})
		if err != nil {
			t.Fatal(err)
		}
		got := map[int64]int{}
		for _, x := range ss {
			got[x.ID] = x.Undelivered
		}
		if d := cmp.Diff(want, got); d != "" {
			t.Errorf("%s: Undelivered by session (-want +got):\n%s", what, d)
		}
	}
	undelivered("none", map[int64]int{a.ID: 0, b.ID: 0})
	r1 := openAt(t, cs, "tg", a.ID, 1, store.OutPending, connTime)
	r2 := openAt(t, cs, "tg", a.ID, 2, store.OutPending, connTime)
	r3 := openAt(t, cs, "tg", b.ID, 3, store.OutPending, connTime)
	fail(r1)
	fail(r2)
	fail(r3)
	undelivered("three failed", map[int64]int{a.ID: 2, b.ID: 1})

	got, err := cs.AckOutbox(ctx, r1, false)
	if err != nil || got.State != store.OutFailed || !got.Acked {
		t.Fatalf("dismiss: %+v, %v; want failed and acked", got, err)
	}
	got, err = cs.AckOutbox(ctx, r3, true)
	if err != nil || got.State != store.OutPending || got.Tries != 0 || got.Acked {
		t.Fatalf("retry: %+v, %v; want pending, no tries", got, err)
	}
	if due, _ := cs.DueOutbox(ctx, "tg", time.Now().Add(time.Second), 0); !cmp.Equal(outboxIDs(due), []int64{r3}) {
		t.Errorf("after a retry, due: %v, want [%d]", outboxIDs(due), r3)
	}
	undelivered("one dismissed, one retried", map[int64]int{a.ID: 1, b.ID: 0})
	fail(r3)
	undelivered("the retried one failed again", map[int64]int{a.ID: 1, b.ID: 1})
	if _, err := cs.AckOutbox(ctx, openAt(t, cs, "tg", a.ID, 4, store.OutPending, connTime), true); !errors.Is(err, store.ErrNotFound) {
		t.Errorf("ack of a pending row: %v, want ErrNotFound", err)
	}
	if _, err := cs.AckOutbox(ctx, 9999, false); !errors.Is(err, store.ErrNotFound) {
		t.Errorf("ack of no row: %v, want ErrNotFound", err)
	}

	for _, tc := range []struct {
		name string
		f    store.OutboxFilter
		want []int64
	}{
		{"all", store.OutboxFilter{}, nil},
		{"session", store.OutboxFilter{SessionID: b.ID}, []int64{r3}},
		{"state", store.OutboxFilter{Connector: "tg", State: store.OutFailed}, []int64{r3, r2, r1}},
		{"page", store.OutboxFilter{State: store.OutFailed, Before: r3, Limit: 1}, []int64{r2}},
		{"other connector", store.OutboxFilter{Connector: "dc"}, []int64{}},
	} {
		rows, err := cs.Outbox(ctx, tc.f)
		if err != nil {
			t.Fatal(err)
		}
		if tc.want == nil {
			if len(rows) != 4 {
				t.Errorf("%s: %d rows, want 4", tc.name, len(rows))
			}
			continue
		}
		if d := cmp.Diff(tc.want, outboxIDs(rows)); d != "" {
			t.Errorf("%s (-want +got):\n%s", tc.name, d)
		}
	}
}

// stranger is user u's pairing request on connector "tg", code c, asked
// at now for an hour.
func stranger(u, c string, now time.Time) store.Pairing {
	return store.Pairing{Connector: "tg", UserID: u, Name: "User " + u, Chat: "dm-" + u, Code: c, CreatedAt: now, ExpiresAt: now.Add(time.Hour)}
}

// A stranger asking again while pending gets the same code; at most 3
// are pending per connector, the 4th is ErrPairingFull until one expires
// (which frees its slot) or is decided. A code is decided once, pending
// and unexpired only; a code pending for one user cannot be another's.
// An approved or denied user gets their row back; Approved says which;
// RevokePairing removes a row, and its user pairs anew.
func testPairing(t *testing.T, x *suite) {
	s := x.newStore(t)
	cs := store.ConnectorStore(s)
	ctx := t.Context()
	now := connTime
	pair := func(p store.Pairing, at time.Time) (store.Pairing, bool, error) {
		return cs.Pair(ctx, p, 3, at)
	}
	first, created, err := pair(stranger("u1", "AAAA1111", now), now)
	if err != nil || !created || first.State != store.PairPending || first.Code != "AAAA1111" {
		t.Fatalf("first pairing: %+v created %v, %v", first, created, err)
	}
	again, created, err := pair(stranger("u1", "BBBB2222", now.Add(time.Minute)), now.Add(time.Minute))
	if err != nil || created || again.Code != "AAAA1111" {
		t.Errorf("asking again: code %q created %v, %v; want the first code", again.Code, created, err)
	}
	if _, _, err := pair(stranger("u9", "AAAA1111", now), now); !errors.Is(err, store.ErrConflict) {
		t.Errorf("another user's pending code: %v, want ErrConflict", err)
	}
	for i, u := range []string{"u2", "u3"} {
		if _, created, err := pair(stranger(u, fmt.Sprintf("CODE000%d", i), now.Add(time.Duration(i+1)*time.Minute)), now.Add(time.Duration(i+1)*time.Minute)); err != nil || !created {
			t.Fatalf("pairing of %s: created %v, %v", u, created, err)
		}
	}
	if _, _, err := pair(stranger("u4", "CODE0004", now.Add(5*time.Minute)), now.Add(5*time.Minute)); !errors.Is(err, store.ErrPairingFull) {
		t.Fatalf("4th pending: %v, want ErrPairingFull", err)
	}
	other := stranger("u4", "CODE0005", now)
	other.Connector = "dc"
	if _, created, err := pair(other, now); err != nil || !created {
		t.Errorf("another connector's first pending: created %v, %v", created, err)
	}

	// u1's code expires: its slot is free, and u1 gets a new code.
	later := now.Add(time.Hour + time.Second)
	if _, err := cs.DecidePairing(ctx, "AAAA1111", store.PairApproved, "ops", later, nil); !errors.Is(err, store.ErrNotFound) {
		t.Errorf("approving an expired code: %v, want ErrNotFound", err)
	}
	_, created, err = pair(stranger("u4", "CODE0004", later), later)
	if err != nil || !created {
		t.Fatalf("4th after one expired: created %v, %v", created, err)
	}
	u1, created, err := pair(stranger("u1", "NEWC0001", later), later)
	if !errors.Is(err, store.ErrPairingFull) {
		t.Errorf("u1 again, with 3 pending: %+v created %v, %v; want ErrPairingFull", u1, created, err)
	}

	// Decide once.
	d, err := cs.DecidePairing(ctx, "CODE0000", store.PairApproved, "ops", later, nil)
	if err != nil || d.UserID != "u2" || d.State != store.PairApproved || d.DecidedBy != "ops" || !d.DecidedAt.Equal(later) {
		t.Fatalf("approve u2: %+v, %v", d, err)
	}
	if _, err := cs.DecidePairing(ctx, "CODE0000", store.PairDenied, "ops", later, nil); !errors.Is(err, store.ErrNotFound) {
		t.Errorf("deciding a code twice: %v, want ErrNotFound", err)
	}
	if _, err := cs.DecidePairing(ctx, "CODE0001", store.PairDenied, "ops", later, nil); err != nil {
		t.Fatal(err)
	}
	if _, err := cs.DecidePairing(ctx, "NOSUCH00", store.PairApproved, "ops", later, nil); !errors.Is(err, store.ErrNotFound) {
		t.Errorf("deciding no code: %v, want ErrNotFound", err)
	}
	// Decided users get their rows back, whatever code they bring.
	for _, tc := range []struct{ user, state string }{{"u2", store.PairApproved}, {"u3", store.PairDenied}} {
		got, created, err := pair(stranger(tc.user, "ZZZZ9999", later), later)
		if err != nil || created || got.State != tc.state {
			t.Errorf("%s asks again: %+v created %v, %v; want their %s row", tc.user, got, created, err, tc.state)
		}
	}
	for _, tc := range []struct {
		user string
		want bool
	}{{"u2", true}, {"u3", false}, {"u4", false}, {"nobody", false}} {
		if ok, err := cs.Approved(ctx, "tg", tc.user); err != nil || ok != tc.want {
			t.Errorf("Approved(%s) = %v, %v; want %v", tc.user, ok, err, tc.want)
		}
	}
	if ok, _ := cs.Approved(ctx, "dc", "u2"); ok {
		t.Error("u2 is approved on another connector")
	}
	// Two slots free now (u2, u3 decided): u1 pairs again.
	if u1, created, err = pair(stranger("u1", "NEWC0001", later), later); err != nil || !created || u1.Code != "NEWC0001" {
		t.Errorf("u1 after decisions: %+v created %v, %v", u1, created, err)
	}
	all, err := cs.Pairings(ctx, "tg", "")
	if err != nil {
		t.Fatal(err)
	}
	if len(all) != 4 {
		t.Errorf("Pairings(tg) = %d rows, want 4: %+v", len(all), all)
	}
	approved, _ := cs.Pairings(ctx, "", store.PairApproved)
	if len(approved) != 1 || approved[0].UserID != "u2" {
		t.Errorf("approved pairings: %+v", approved)
	}

	if err := cs.RevokePairing(ctx, "tg", "u2"); err != nil {
		t.Fatal(err)
	}
	if ok, _ := cs.Approved(ctx, "tg", "u2"); ok {
		t.Error("u2 approved after revoke")
	}
	if err := cs.RevokePairing(ctx, "tg", "u2"); !errors.Is(err, store.ErrNotFound) {
		t.Errorf("revoking twice: %v, want ErrNotFound", err)
	}
	if got, created, err := pair(stranger("u2", "AGAIN002", later), later); err != nil || !created || got.State != store.PairPending {
		t.Errorf("u2 after revoke: %+v created %v, %v; want a new pending code", got, created, err)
	}
}

// Pairings lists a pending code past its time as expired, by the time of
// the listing.
func testPairingsExpiredShown(t *testing.T, x *suite) {
	s := x.newStore(t)
	cs := store.ConnectorStore(s)
	ctx := t.Context()
	past := time.Now().Add(-2 * time.Hour)
	if _, _, err := cs.Pair(ctx, stranger("old", "OLD00001", past), 3, past); err != nil {
		t.Fatal(err)
	}
	now := time.Now()
	if _, _, err := cs.Pair(ctx, store.Pairing{Connector: "tg", UserID: "new", Code: "NEW00001", ExpiresAt: now.Add(time.Hour)}, 3, now); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		state string
		want  []string
	}{{store.PairPending, []string{"new"}}, {store.PairExpired, []string{"old"}}, {"", []string{"new", "old"}}} {
		got, err := cs.Pairings(ctx, "tg", tc.state)
		if err != nil {
			t.Fatal(err)
		}
		users := []string{}
		for _, p := range got {
			users = append(users, p.UserID)
		}
		if d := cmp.Diff(tc.want, users); d != "" {
			t.Errorf("Pairings(%q) (-want +got):\n%s", tc.state, d)
		}
	}
}

// Strangers asking at once on one connector (on any nodes) pass the
// pending limit one at a time: of 8, exactly 3 get a code.
func testPairingConcurrent(t *testing.T, x *suite) {
	s := x.newStore(t)
	ctx := t.Context()
	now := time.Now()
	const strangers = 8
	created := make([]bool, strangers)
	errs := make([]error, strangers)
	var wg sync.WaitGroup
	for i := range strangers {
		wg.Go(func() {
			_, created[i], errs[i] = s.Pair(ctx, stranger(fmt.Sprint("u", i), fmt.Sprintf("CODE%04d", i), now), 3, now)
		})
	}
	wg.Wait()
	made := 0
	for i := range strangers {
		switch {
		case errs[i] == nil && created[i]:
			made++
		case !errors.Is(errs[i], store.ErrPairingFull):
			t.Errorf("stranger %d: created %v, %v; want a code or ErrPairingFull", i, created[i], errs[i])
		}
	}
	pending, err := s.Pairings(ctx, "tg", store.PairPending)
	if err != nil {
		t.Fatal(err)
	}
	if made != 3 || len(pending) != 3 {
		t.Errorf("%d strangers got a code, %d pending; want 3", made, len(pending))
	}
}

// An approval opens its notice in the same transaction: the row to the
// pairing's chat, in the chat's conversation's session (0 when none); a
// denial opens none; a notice the store refuses leaves the code pending
// (the decision is not written without it).
func testPairingNotice(t *testing.T, x *suite) {
	s := x.newStore(t)
	cs := store.ConnectorStore(s)
	ctx := t.Context()
	now := connTime
	sess := mustSession(t, s, "user-u2", "main")
	if _, err := cs.PutConversation(ctx, conversation("dm-u2", sess.ID)); err != nil {
		t.Fatal(err)
	}
	for _, p := range []store.Pairing{stranger("u1", "CODE0001", now), stranger("u2", "CODE0002", now), stranger("u3", "CODE0003", now)} {
		if _, _, err := cs.Pair(ctx, p, 3, now); err != nil {
			t.Fatal(err)
		}
	}
	notice := func(text string) *store.OutboxItem {
		return &store.OutboxItem{State: store.OutPending, Text: text, SendingPart: -1, NextAt: now}
	}
	bad := notice("refused")
	bad.State = "nonsense"
	if _, err := cs.DecidePairing(ctx, "CODE0001", store.PairApproved, "ops", now, bad); err == nil {
		t.Error("an approval with a notice the store refuses was made")
	}
	if ok, _ := cs.Approved(ctx, "tg", "u1"); ok {
		t.Error("u1 is approved though its notice was refused")
	}
	for _, tc := range []struct{ code, state string }{
		{"CODE0001", store.PairApproved}, {"CODE0002", store.PairApproved}, {"CODE0003", store.PairDenied},
	} {
		if _, err := cs.DecidePairing(ctx, tc.code, tc.state, "ops", now, notice("welcome "+tc.code)); err != nil {
			t.Fatalf("%s %s: %v", tc.state, tc.code, err)
		}
	}
	rows, err := cs.Outbox(ctx, store.OutboxFilter{Connector: "tg", Limit: 10})
	if err != nil {
		t.Fatal(err)
	}
	type row struct {
		Chat, Kind, State, Text string
		Session                 int64
	}
	var got []row
	for _, it := range rows {
		got = append(got, row{it.Chat, it.Kind, it.State, it.Text, it.SessionID})
	}
	want := []row{ // newest first
		{"dm-u2", store.OutNotice, store.OutPending, "welcome CODE0002", sess.ID},
		{"dm-u1", store.OutNotice, store.OutPending, "welcome CODE0001", 0},
	}
	if d := cmp.Diff(want, got); d != "" {
		t.Errorf("notices (-want +got):\n%s", d)
	}
}
