package postgres_test

import (
	"database/sql"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"agentd/internal/event"
	"agentd/internal/store"
	"agentd/internal/store/postgres"
	"agentd/internal/store/postgres/pgtest"
	"agentd/internal/store/sqlite"
)

// TestCopyClaims: work claimed on SQLite stays claimed after the store
// is copied to PostgreSQL.
func TestCopyClaims(t *testing.T) {
	ctx := t.Context()
	path := filepath.Join(t.TempDir(), "agentd.db")
	lite, err := sqlite.Open(ctx, path, nil)
	if err != nil {
		t.Fatal(err)
	}
	if took, err := lite.Claim(ctx, "cron:digest:1", "old"); err != nil || !took {
		t.Fatalf("Claim on SQLite = %v, %v", took, err)
	}
	lite.Close()
	src, pg := copyEnds(t, path)
	rep, err := pg.CopyFromSQLite(ctx, src, nil)
	if err != nil {
		t.Fatalf("CopyFromSQLite: %v (%+v)", err, rep)
	}
	if took, err := pg.Claim(ctx, "cron:digest:1", "new"); err != nil || took {
		t.Errorf("Claim after the copy = %v, %v; want false: claimed on SQLite", took, err)
	}
}

// TestCopyExtensions: extension rows and their histories come along, as
// they are in SQLite; a copy run again after rows were changed, deleted
// and made again there brings PostgreSQL to the same, and PostgreSQL
// numbers a row's next version on from the copied history.
func TestCopyExtensions(t *testing.T) {
	ctx := t.Context()
	path := filepath.Join(t.TempDir(), "agentd.db")
	lite, err := sqlite.Open(ctx, path, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer lite.Close()
	put := func(name, url string, ifVersion int64) {
		t.Helper()
		e := store.Extension{Type: "action", Name: name, Spec: []byte(`{"url":"` + url + `"}`), Enabled: true,
			Provenance: store.ProvenanceAgent + "a1", SeedHash: "h-" + url}
		if _, err := lite.PutExtension(ctx, e, store.ExtPut, ifVersion); err != nil {
			t.Fatalf("PutExtension(%s): %v", name, err)
		}
	}
	del := func(name string) {
		t.Helper()
		if err := lite.DeleteExtension(ctx, "action", name, "user:cli", store.AnyVersion); err != nil {
			t.Fatalf("DeleteExtension(%s): %v", name, err)
		}
	}
	put("a", "a1", store.NoVersion)
	put("a", "a2", 1)
	put("b", "b1", store.NoVersion)
	put("c", "c1", store.NoVersion)
	del("c")
	src, pg := copyEnds(t, path)
	same := func(what string) {
		t.Helper()
		rep, err := pg.CopyFromSQLite(ctx, src, nil)
		if err != nil || !rep.OK() {
			t.Fatalf("%s: CopyFromSQLite: %v (%+v)", what, err, rep)
		}
		want, err := lite.Extensions(ctx, "")
		if err != nil {
			t.Fatal(err)
		}
		got, err := pg.Extensions(ctx, "")
		if err != nil {
			t.Fatal(err)
		}
		if d := cmp.Diff(want, got); d != "" {
			t.Errorf("%s: the rows (-sqlite +postgres):\n%s", what, d)
		}
		for _, name := range []string{"a", "b", "c"} {
			want, err := lite.ExtensionHistory(ctx, "action", name)
			if err != nil {
				t.Fatal(err)
			}
			got, err := pg.ExtensionHistory(ctx, "action", name)
			if err != nil {
				t.Fatal(err)
			}
			if d := cmp.Diff(want, got); d != "" {
				t.Errorf("%s: the history of %s (-sqlite +postgres):\n%s", what, name, d)
			}
		}
	}
	same("the first copy")
	put("a", "a3", 2)
	del("b")
	put("c", "c2", store.NoVersion)
	same("the copy after changes")
	e, err := pg.PutExtension(ctx, store.Extension{Type: "action", Name: "c", Spec: []byte(`{}`), Provenance: store.ProvenanceUser}, store.ExtPut, 3)
	if err != nil || e.Version != 4 {
		t.Errorf("PutExtension on the copy = version %d, %v; want 4", e.Version, err)
	}
}

// TestCopyJobRuns: the runs of jobs come along as they are in SQLite; a
// copy run again after a run ended and another was taken there brings
// PostgreSQL to the same; a fire taken on SQLite stays taken.
func TestCopyJobRuns(t *testing.T) {
	ctx := t.Context()
	path := filepath.Join(t.TempDir(), "agentd.db")
	lite, err := sqlite.Open(ctx, path, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer lite.Close()
	at := func(i int) time.Time { return time.Date(2026, 11, 26, 8, i, 0, 0, time.UTC) }
	start := func(job string, i int, status string) store.JobRun {
		t.Helper()
		r := store.JobRun{Job: job, Run: store.RunID(at(i), ""), ScheduledAt: at(i), Trigger: store.TriggerEvery, Status: status,
			Session: "a/job:" + job, Payload: []byte(`{"n":1}`), Node: "old", Error: "busy",
			MAC: strings.Repeat(strconv.Itoa(i), 64)}
		got, created, err := lite.StartRun(ctx, r)
		if err != nil || !created {
			t.Fatalf("StartRun(%s, %d) = %v, %v", job, i, created, err)
		}
		return got
	}
	start("digest", 0, store.RunRunning)
	open := start("digest", 1, store.RunRunning)
	start("digest", 2, store.RunSkipped)
	start("watch", 0, store.RunQueued)
	if _, err := lite.FinishRun(ctx, store.JobRun{Job: "digest", Run: store.RunID(at(0), ""), Status: store.RunDone,
		Steps: 2, TokensIn: 10, TokensOut: 20, CostUSD: 0.5, Output: "all quiet"}); err != nil {
		t.Fatal(err)
	}
	src, pg := copyEnds(t, path)
	same := func(what string) {
		t.Helper()
		rep, err := pg.CopyFromSQLite(ctx, src, nil)
		if err != nil || !rep.OK() {
			t.Fatalf("%s: CopyFromSQLite: %v (%+v)", what, err, rep)
		}
		for _, job := range []string{"digest", "watch"} {
			want, err := lite.JobRuns(ctx, job, "", 0)
			if err != nil {
				t.Fatal(err)
			}
			got, err := pg.JobRuns(ctx, job, "", 0)
			if err != nil {
				t.Fatal(err)
			}
			if d := cmp.Diff(want, got); d != "" {
				t.Errorf("%s: the runs of %s (-sqlite +postgres):\n%s", what, job, d)
			}
		}
	}
	same("the first copy")
	if _, err := lite.FinishRun(ctx, store.JobRun{Job: "digest", Run: open.Run, Status: store.RunError, Error: "budget"}); err != nil {
		t.Fatal(err)
	}
	start("digest", 3, store.RunRunning)
	same("the copy after changes")
	if r, created, err := pg.StartRun(ctx, store.JobRun{Job: "digest", Run: open.Run, ScheduledAt: at(1), Trigger: store.TriggerEvery,
		Status: store.RunRunning, Node: "new"}); err != nil || created || r.Node != "old" {
		t.Errorf("StartRun on the copy of a run taken on SQLite = node %q, created %v, %v; want the copied run", r.Node, created, err)
	}
}

// TestCopyAgents: the dynamic agents' instances (with the budgets a
// person's start kept), usage rows' payers and accounts and inbox items'
// hops come along as they are in SQLite; a copy run again after an
// instance ended and its report was recorded there brings PostgreSQL to
// the same; a descriptor created on SQLite stays taken.
func TestCopyAgents(t *testing.T) {
	ctx := t.Context()
	path := filepath.Join(t.TempDir(), "agentd.db")
	lite, err := sqlite.Open(ctx, path, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer lite.Close()
	id := func(i int) string { return "k" + strings.Repeat("0", 22) + strconv.Itoa(i) }
	child := store.Instance{ID: id(1), Type: store.InstanceSubagent, Descriptor: "task:assistant/main:c1", Template: "researcher",
		Parent: "assistant", Payer: "assistant", Account: "1:2", TurnLimit: 0.5, Report: store.ReportLoud, ReportTo: "assistant/main",
		OriginTurn: 2, OriginCall: "c1", Task: "look", Hops: 1, State: store.AgentStarting}
	if _, created, err := lite.CreateInstance(ctx, child, store.InstanceLimits{}); err != nil || !created {
		t.Fatalf("CreateInstance = %v, %v", created, err)
	}
	if _, _, err := lite.CreateInstance(ctx, store.Instance{ID: id(2), Type: store.InstanceUser, Descriptor: "user:cli:t:ann",
		Template: "assistant", State: store.AgentIdle}, store.InstanceLimits{}); err != nil {
		t.Fatal(err)
	}
	if _, _, err := lite.CreateInstance(ctx, store.Instance{ID: id(4), Type: store.InstanceBackground, Descriptor: "api:ann-1",
		Template: "researcher", Payer: "researcher", Task: "look", State: store.AgentStarting, Budgets: `{"max_steps":3}`},
		store.InstanceLimits{}); err != nil {
		t.Fatal(err)
	}
	sess, _, err := lite.Session(ctx, id(1), "main")
	if err != nil {
		t.Fatal(err)
	}
	if _, _, err := lite.Enqueue(ctx, store.InboxItem{Session: sess.ID, Kind: "input", Text: "look", Hops: 1}); err != nil {
		t.Fatal(err)
	}
	if err := lite.Commit(ctx, &store.Batch{Session: sess.ID, Usage: []store.Usage{{Model: "m", CostUSD: 0.25, Payer: "assistant", Account: "1:2"},
		{Model: "m", CostUSD: 0.5}}}); err != nil {
		t.Fatal(err)
	}
	src, pg := copyEnds(t, path)
	same := func(what string) {
		t.Helper()
		rep, err := pg.CopyFromSQLite(ctx, src, nil)
		if err != nil || !rep.OK() {
			t.Fatalf("%s: CopyFromSQLite: %v (%+v)", what, err, rep)
		}
		want, _, err := lite.Instances(ctx, store.AgentFilter{})
		if err != nil {
			t.Fatal(err)
		}
		got, _, err := pg.Instances(ctx, store.AgentFilter{})
		if err != nil {
			t.Fatal(err)
		}
		if d := cmp.Diff(want, got); d != "" {
			t.Errorf("%s: the instances (-sqlite +postgres):\n%s", what, d)
		}
		for _, payer := range []string{"assistant", id(1)} {
			w, _ := lite.UsageSince(ctx, payer, time.Time{})
			g, err := pg.UsageSince(ctx, payer, time.Time{})
			if err != nil || g.CostUSD != w.CostUSD {
				t.Errorf("%s: UsageSince(%s) = $%v, %v; SQLite has $%v", what, payer, g.CostUSD, err, w.CostUSD)
			}
		}
		if c, err := pg.UsageOfAccount(ctx, "1:2"); err != nil || c != 0.25 {
			t.Errorf("%s: UsageOfAccount = %v, %v; want 0.25", what, c, err)
		}
		pending, err := pg.Pending(ctx, sess.ID)
		if err != nil || len(pending) != 1 || pending[0].Hops != 1 {
			t.Errorf("%s: the pending item = %+v, %v; want hops 1", what, pending, err)
		}
	}
	same("the first copy")
	if _, err := lite.SetInstanceState(ctx, id(1), store.AgentDone, "found", 0); err != nil {
		t.Fatal(err)
	}
	if _, err := lite.RecordReport(ctx, id(1), ""); err != nil {
		t.Fatal(err)
	}
	same("the copy after changes")
	again := child
	again.ID = id(3)
	if got, created, err := pg.CreateInstance(ctx, again, store.InstanceLimits{}); err != nil || created || got.ID != id(1) {
		t.Errorf("CreateInstance on the copy of a descriptor taken on SQLite = %s, created %v, %v; want the copied instance", got.ID, created, err)
	}
}

// TestCopyConnectors: the chat connectors' conversations, outbox rows
// (their ids and message ids, a failed one counted in its session's
// Undelivered), pairings and the approvals' grants come along as they are
// in SQLite; a copy run again after rows moved there brings PostgreSQL to
// the same; a turn's
// row copied is not opened again, and a new row takes an id past the
// copied ones.
func TestCopyConnectors(t *testing.T) {
	ctx := t.Context()
	path := filepath.Join(t.TempDir(), "agentd.db")
	lite, err := sqlite.Open(ctx, path, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer lite.Close()
	sess, _, err := lite.Session(ctx, "user-a", "main")
	if err != nil {
		t.Fatal(err)
	}
	if err := lite.Commit(ctx, &store.Batch{Session: sess.ID, Events: []event.Event{
		event.New(sess.ID, 1, event.Input, event.InputData{Text: "hi"})}}); err != nil {
		t.Fatal(err)
	}
	if _, err := lite.PutConversation(ctx, store.Conversation{Connector: "tg", Chat: "42", ChatJSON: `{"id":"42"}`,
		SessionID: sess.ID, Instance: "i1"}); err != nil {
		t.Fatal(err)
	}
	now := time.Now()
	open := func(turn int64, state string) store.OutboxItem {
		it, _, err := lite.OpenOutbox(ctx, store.OutboxItem{Connector: "tg", Chat: "42", SessionID: sess.ID, Turn: turn, State: state,
			Text: "reply " + strconv.FormatInt(turn, 10), Parts: 1, NextAt: now})
		if err != nil {
			t.Fatal(err)
		}
		return it
	}
	move := func(it store.OutboxItem, from string) {
		if moved, err := lite.MoveOutbox(ctx, it.ID, from, it); err != nil || !moved {
			t.Fatalf("MoveOutbox = %v, %v", moved, err)
		}
	}
	sending := open(1, store.OutPending)
	sending.State, sending.SendingPart, sending.Nonce, sending.MessageIDs = store.OutSending, 0, "a1p0", []string{""}
	move(sending, store.OutPending)
	failed := open(2, store.OutPending)
	failed.State, failed.Tries, failed.Error = store.OutFailed, 10, "chat not found"
	move(failed, store.OutPending)
	if _, _, err := lite.Pair(ctx, store.Pairing{Connector: "tg", UserID: "u1", Name: "Ann", Chat: "42", Code: "AAAA1111",
		ExpiresAt: now.Add(time.Hour)}, 3, now); err != nil {
		t.Fatal(err)
	}
	if _, _, err := lite.Pair(ctx, store.Pairing{Connector: "tg", UserID: "u2", Code: "BBBB2222", ExpiresAt: now.Add(time.Hour)}, 3, now); err != nil {
		t.Fatal(err)
	}
	if _, err := lite.DecidePairing(ctx, "BBBB2222", store.PairApproved, "ops", now, nil); err != nil {
		t.Fatal(err)
	}
	if err := lite.PutGrant(ctx, &store.Grant{ID: "g1", Agent: "user-a", Tool: "exec", Exact: "ls\x00in .", Approval: "a1",
		By: "ops", CreatedAt: now}); err != nil {
		t.Fatal(err)
	}
	src, pg := copyEnds(t, path)
	same := func(what string) {
		t.Helper()
		rep, err := pg.CopyFromSQLite(ctx, src, nil)
		if err != nil || !rep.OK() {
			t.Fatalf("%s: CopyFromSQLite: %v (%+v)", what, err, rep)
		}
		for _, read := range []struct {
			name string
			of   func(store.ConnectorStore) (any, error)
		}{
			{"conversations", func(s store.ConnectorStore) (any, error) { return s.Conversations(ctx, "tg") }},
			{"outbox", func(s store.ConnectorStore) (any, error) { return s.Outbox(ctx, store.OutboxFilter{}) }},
			{"pairings", func(s store.ConnectorStore) (any, error) { return s.Pairings(ctx, "", "") }},
			{"sessions", func(store.ConnectorStore) (any, error) { return pg.Sessions(ctx, store.SessionFilter{}) }},
			{"grants", func(store.ConnectorStore) (any, error) { return pg.Grants(ctx, "") }},
		} {
			want, err := read.of(lite)
			switch read.name {
			case "sessions":
				want, err = lite.Sessions(ctx, store.SessionFilter{})
			case "grants":
				want, err = lite.Grants(ctx, "")
			}
			if err != nil {
				t.Fatal(err)
			}
			got, err := read.of(pg)
			if err != nil {
				t.Fatal(err)
			}
			if d := cmp.Diff(want, got); d != "" {
				t.Errorf("%s: the %s (-sqlite +postgres):\n%s", what, read.name, d)
			}
		}
	}
	same("the first copy")
	if ss, _ := pg.Sessions(ctx, store.SessionFilter{}); len(ss) != 1 || ss[0].Undelivered != 1 {
		t.Errorf("the copied session: %+v; want 1 undelivered", ss)
	}
	sent := sending
	sent.State, sent.SendingPart, sent.Nonce, sent.MessageIDs, sent.SentAt = store.OutSent, -1, "", []string{"m1"}, now
	move(sent, store.OutSending)
	if _, err := lite.AckOutbox(ctx, failed.ID, false); err != nil {
		t.Fatal(err)
	}
	if err := lite.SetSeen(ctx, "tg", "42", 1, "in9"); err != nil {
		t.Fatal(err)
	}
	if _, err := lite.DecidePairing(ctx, "AAAA1111", store.PairDenied, "ops", now, nil); err != nil {
		t.Fatal(err)
	}
	same("the copy after changes")
	if got, created, err := pg.OpenOutbox(ctx, store.OutboxItem{Connector: "tg", Chat: "42", SessionID: sess.ID, Turn: 1,
		State: store.OutPending}); err != nil || created || got.ID != sending.ID {
		t.Errorf("OpenOutbox of a copied turn = row %d, created %v, %v; want the copied row %d", got.ID, created, err, sending.ID)
	}
	if got, created, err := pg.OpenOutbox(ctx, store.OutboxItem{Connector: "tg", Chat: "42", SessionID: sess.ID, Turn: 3,
		State: store.OutPending}); err != nil || !created || got.ID <= failed.ID {
		t.Errorf("OpenOutbox of a new turn = row %d, created %v, %v; want an id past %d", got.ID, created, err, failed.ID)
	}
}

// copyEnds opens the SQLite file at path as a copy's source and a new
// PostgreSQL store as its target, both closed when t ends.
func copyEnds(t *testing.T, path string) (*sql.DB, *postgres.Store) {
	t.Helper()
	src, err := sql.Open("sqlite", path)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { src.Close() })
	pg, err := postgres.Open(t.Context(), pgtest.NewDB(t), nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { pg.Close() })
	return src, pg
}
