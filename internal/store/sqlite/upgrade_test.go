package sqlite

import (
	"database/sql"
	"fmt"
	"log/slog"
	"path/filepath"
	"testing"
	"time"

	"agentd/internal/store"
)

// A database written by a build before schema v5 (the search index keyed
// by event id) is upgraded on open: its events are indexed again under the
// new row ids, searches by agent find them, and new events are indexed as
// they come.
func TestUpgradeRebuildsSearchIndex(t *testing.T) {
	ctx := t.Context()
	path, conn, closeOld := oldDatabase(t, 4)
	now := time.Now().UnixNano()
	for i, agent := range []string{"ada", "bob"} {
		if _, err := conn.ExecContext(ctx, `INSERT INTO sessions (id, agent, key, state, last_seq, created_at, updated_at) VALUES (?, ?, 'k', 'idle', 3, ?, ?)`,
			i+1, agent, now, now); err != nil {
			t.Fatal(err)
		}
		for seq := 1; seq <= 3; seq++ {
			data := fmt.Sprintf(`{"text":"%s mentions the lighthouse number %d"}`, agent, seq)
			if _, err := conn.ExecContext(ctx, `INSERT INTO events (session_id, seq, turn, kind, ts, data) VALUES (?, ?, 1, 'input', ?, ?)`,
				i+1, seq, now, []byte(data)); err != nil {
				t.Fatal(err)
			}
		}
	}
	closeOld()

	s, err := Open(ctx, path, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	hits, _, err := s.SearchHistory(ctx, store.HistoryQuery{Query: "lighthouse", Agents: []string{"bob"}})
	if err != nil {
		t.Fatal(err)
	}
	if len(hits) != 3 {
		t.Fatalf("%d hits for bob after the upgrade, want 3", len(hits))
	}
	for _, h := range hits {
		if h.Agent != "bob" {
			t.Errorf("hit from %s", h.Agent)
		}
	}
	all, err := s.SearchText(ctx, "lighthouse", 10)
	if err != nil || len(all) != 6 {
		t.Fatalf("SearchText: %d events, %v", len(all), err)
	}
}

// A database written before schema v8 (no session titles) is upgraded on
// open: each session is titled from its first input, as new ones are.
func TestUpgradeTitlesSessions(t *testing.T) {
	ctx := t.Context()
	path, conn, closeOld := oldDatabase(t, 7)
	for _, q := range []string{
		`INSERT INTO sessions (id, agent, key, state, last_seq, created_at, updated_at) VALUES (1, 'a', 'chat', 'idle', 3, 0, 0), (2, 'a', 'bootstrap', 'idle', 1, 0, 0)`,
		`INSERT INTO events (session_id, seq, turn, kind, ts, data) VALUES
			(1, 1, 1, 'system_message', 0, '{"text":"not this"}'),
			(1, 2, 1, 'input', 0, '{"text":"Where is the lighthouse?\nIt was here"}'),
			(1, 3, 2, 'input', 0, '{"text":"nor this"}'),
			(2, 1, 0, 'tool_result', 0, '{"output":"x"}')`,
	} {
		if _, err := conn.ExecContext(ctx, q); err != nil {
			t.Fatal(err)
		}
	}
	closeOld()

	s, err := Open(ctx, path, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	for _, want := range []store.Session{
		{Key: "chat", Title: "Where is the lighthouse?", TitleBy: store.TitleByInput},
		{Key: "bootstrap"},
	} {
		got, err := s.SessionByAddress(ctx, "a", want.Key)
		if err != nil {
			t.Fatal(err)
		}
		if got.Title != want.Title || got.TitleBy != want.TitleBy {
			t.Errorf("%s: title %q by %q, want %q by %q", want.Key, got.Title, got.TitleBy, want.Title, want.TitleBy)
		}
	}
}

// A database written before the extension tables is upgraded on open: its
// sessions stay, and extension rows can be written and read.
func TestUpgradeAddsExtensions(t *testing.T) {
	ctx := t.Context()
	path, conn, closeOld := oldDatabase(t, 9)
	if _, err := conn.ExecContext(ctx, `INSERT INTO sessions (id, agent, key, state, last_seq, created_at, updated_at) VALUES (1, 'a', 'chat', 'idle', 0, 0, 0)`); err != nil {
		t.Fatal(err)
	}
	closeOld()

	s, err := Open(ctx, path, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	if _, err := s.SessionByAddress(ctx, "a", "chat"); err != nil {
		t.Errorf("the session after the upgrade: %v", err)
	}
	e := store.Extension{Type: "action", Name: "weather", Spec: []byte(`{"url":"https://a.example"}`), Enabled: true, Provenance: store.ProvenanceUser}
	if _, err := s.PutExtension(ctx, e, store.ExtPut, store.NoVersion); err != nil {
		t.Fatalf("PutExtension after the upgrade: %v", err)
	}
	if got, err := s.Extensions(ctx, ""); err != nil || len(got) != 1 {
		t.Errorf("Extensions after the upgrade = %+v, %v", got, err)
	}
}

// A database written before the job runs table is upgraded on open: its
// extension rows stay, and runs can be taken and read.
func TestUpgradeAddsJobRuns(t *testing.T) {
	ctx := t.Context()
	path, conn, closeOld := oldDatabase(t, 10)
	if _, err := conn.ExecContext(ctx, `INSERT INTO agentd_extensions (type, name, spec, enabled, version, provenance, created_at, created_by, updated_at, updated_by)
		VALUES ('job', 'digest', '{}', 1, 1, 'user', 0, 'user', 0, 'user')`); err != nil {
		t.Fatal(err)
	}
	closeOld()

	s, err := Open(ctx, path, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	if _, err := s.Extension(ctx, "job", "digest"); err != nil {
		t.Errorf("the extension row after the upgrade: %v", err)
	}
	at := time.Date(2026, 11, 26, 8, 0, 0, 0, time.UTC)
	r := store.JobRun{Job: "digest", Run: store.RunID(at, ""), ScheduledAt: at, Trigger: store.TriggerCron, Status: store.RunRunning}
	if _, created, err := s.StartRun(ctx, r); err != nil || !created {
		t.Fatalf("StartRun after the upgrade = created %v, %v", created, err)
	}
	if last, err := s.LastRun(ctx, "digest"); err != nil || last.Run != r.Run {
		t.Errorf("LastRun after the upgrade = %+v, %v", last, err)
	}
}

// A database written before runs recorded their deliveries is upgraded on
// open: the runs that had ended count as delivered (none is delivered
// again), an open run's delivery is pending once it ends, and a webhook
// delivery is taken once from then on.
func TestUpgradeRecordsDeliveries(t *testing.T) {
	ctx := t.Context()
	path, conn, closeOld := oldDatabase(t, 11)
	at := time.Date(2026, 11, 26, 8, 0, 0, 0, time.UTC)
	for i, st := range []string{store.RunDone, store.RunError, store.RunRunning} {
		ended := 5
		if st == store.RunRunning {
			ended = 0
		}
		if _, err := conn.ExecContext(ctx, `INSERT INTO agentd_job_runs (job, run, scheduled_at, trigger_kind, status, started_at, ended_at)
			VALUES ('digest', ?, 1, 'cron', ?, 1, ?)`, store.RunID(at.Add(time.Duration(i)*time.Minute), ""), st, ended); err != nil {
			t.Fatal(err)
		}
	}
	closeOld()

	s, err := Open(ctx, path, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	if pending, err := s.UndeliveredRuns(ctx, "digest", 0); err != nil || len(pending) != 0 {
		t.Errorf("undelivered runs after the upgrade: %+v, %v; want none", pending, err)
	}
	open := store.RunID(at.Add(2*time.Minute), "")
	if _, err := s.FinishRun(ctx, store.JobRun{Job: "digest", Run: open, Status: store.RunDone}); err != nil {
		t.Fatal(err)
	}
	if pending, err := s.UndeliveredRuns(ctx, "digest", 0); err != nil || len(pending) != 1 || pending[0].Run != open {
		t.Errorf("undelivered runs once the open run ended: %+v, %v; want it", pending, err)
	}
	hook := store.JobRun{Job: "digest", Run: store.RunID(at, "hook-1"), ScheduledAt: at, Trigger: store.TriggerWebhook,
		Status: store.RunRunning, Delivery: "d-1"}
	if _, created, err := s.StartRun(ctx, hook); err != nil || !created {
		t.Fatalf("StartRun of a delivery after the upgrade = created %v, %v", created, err)
	}
	hook.Run = store.RunID(at, "hook-2")
	if _, created, err := s.StartRun(ctx, hook); err != nil || created {
		t.Errorf("StartRun of the delivery again = created %v, %v; want the run taken before", created, err)
	}
}

// A database written before usage had payers is upgraded on open without
// rewriting a row: its usage is still paid by its agent, beside the new
// rows' payers, and instances can be created.
func TestUpgradeAddsAgents(t *testing.T) {
	ctx := t.Context()
	path, conn, closeOld := oldDatabase(t, 12)
	if _, err := conn.ExecContext(ctx, `INSERT INTO usage (session_id, agent, model, input_tokens, output_tokens, cost_usd, ts)
		VALUES (1, 'assistant', 'm', 10, 1, 0.25, 5)`); err != nil {
		t.Fatal(err)
	}
	closeOld()

	s, err := Open(ctx, path, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	sess, _, err := s.Session(ctx, "k00000000000000000000001", "main")
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Commit(ctx, &store.Batch{Session: sess.ID, Usage: []store.Usage{{Model: "m", CostUSD: 0.5, Payer: "assistant"}}}); err != nil {
		t.Fatal(err)
	}
	if u, err := s.UsageSince(ctx, "assistant", time.Time{}); err != nil || u.CostUSD != 0.75 {
		t.Errorf("UsageSince(assistant) after the upgrade = $%v, %v; want $0.75: its old row and the one it pays", u.CostUSD, err)
	}
	a := store.Instance{ID: "k00000000000000000000001", Type: store.InstanceBackground, Descriptor: "task:api:1", Template: "assistant",
		State: store.AgentStarting}
	if _, created, err := s.CreateInstance(ctx, a, store.InstanceLimits{MaxLive: 1}); err != nil || !created {
		t.Errorf("CreateInstance after the upgrade = %v, %v", created, err)
	}
}

// oldDatabase makes a database of the first steps of the migrations, as
// an older agentd left it, and returns its path, a connection to fill it
// with rows of that age, and what closes them before the upgrade opens it.
func oldDatabase(t *testing.T, steps int) (path string, conn *sql.Conn, closeOld func()) {
	t.Helper()
	path = filepath.Join(t.TempDir(), "old.db")
	db, err := sql.Open("sqlite", path)
	if err != nil {
		t.Fatal(err)
	}
	conn, err = db.Conn(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	if err := migrate(t.Context(), conn, migrations()[:steps], slog.New(slog.DiscardHandler)); err != nil {
		t.Fatal(err)
	}
	return path, conn, func() { conn.Close(); db.Close() }
}
