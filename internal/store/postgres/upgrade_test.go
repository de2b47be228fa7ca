package postgres

import (
	"log/slog"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"

	"agentd/internal/store"
	"agentd/internal/store/postgres/pgtest"
)

// A database written before the extension tables is upgraded on open:
// its sessions stay, and extension rows can be written and read.
func TestUpgradeAddsExtensions(t *testing.T) {
	ctx := t.Context()
	db := pgtest.NewDB(t)
	pool, err := pgxpool.New(ctx, db)
	if err != nil {
		t.Fatal(err)
	}
	if err := migrate(ctx, pool, migrations()[:3], slog.New(slog.DiscardHandler)); err != nil {
		t.Fatal(err)
	}
	if _, err := pool.Exec(ctx, `INSERT INTO sessions (agent, key, state, created_at, updated_at) VALUES ('a', 'chat', 'idle', 0, 0)`); err != nil {
		t.Fatal(err)
	}
	pool.Close()

	s, err := Open(ctx, db, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	if v, err := DatabaseSchemaVersion(ctx, db, nil); err != nil || v != SchemaVersion() {
		t.Errorf("schema version after the upgrade = %d, %v; want %d", v, err, SchemaVersion())
	}
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
	db := pgtest.NewDB(t)
	pool, err := pgxpool.New(ctx, db)
	if err != nil {
		t.Fatal(err)
	}
	if err := migrate(ctx, pool, migrations()[:4], slog.New(slog.DiscardHandler)); err != nil {
		t.Fatal(err)
	}
	if _, err := pool.Exec(ctx, `INSERT INTO agentd_extensions (type, name, spec, enabled, version, provenance, created_at, created_by, updated_at, updated_by)
		VALUES ('job', 'digest', '{}', true, 1, 'user', 0, 'user', 0, 'user')`); err != nil {
		t.Fatal(err)
	}
	pool.Close()

	s, err := Open(ctx, db, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	if v, err := DatabaseSchemaVersion(ctx, db, nil); err != nil || v != SchemaVersion() {
		t.Errorf("schema version after the upgrade = %d, %v; want %d", v, err, SchemaVersion())
	}
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
	db := pgtest.NewDB(t)
	pool, err := pgxpool.New(ctx, db)
	if err != nil {
		t.Fatal(err)
	}
	if err := migrate(ctx, pool, migrations()[:5], slog.New(slog.DiscardHandler)); err != nil {
		t.Fatal(err)
	}
	at := time.Date(2026, 11, 26, 8, 0, 0, 0, time.UTC)
	for i, st := range []string{store.RunDone, store.RunError, store.RunRunning} {
		ended := 5
		if st == store.RunRunning {
			ended = 0
		}
		if _, err := pool.Exec(ctx, `INSERT INTO agentd_job_runs (job, run, scheduled_at, trigger_kind, status, started_at, ended_at)
			VALUES ('digest', $1, 1, 'cron', $2, 1, $3)`, store.RunID(at.Add(time.Duration(i)*time.Minute), ""), st, ended); err != nil {
			t.Fatal(err)
		}
	}
	pool.Close()

	s, err := Open(ctx, db, nil)
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
	db := pgtest.NewDB(t)
	pool, err := pgxpool.New(ctx, db)
	if err != nil {
		t.Fatal(err)
	}
	if err := migrate(ctx, pool, migrations()[:6], slog.New(slog.DiscardHandler)); err != nil {
		t.Fatal(err)
	}
	if _, err := pool.Exec(ctx, `INSERT INTO usage (session_id, agent, model, input_tokens, output_tokens, cost_usd, ts)
		VALUES (1, 'assistant', 'm', 10, 1, 0.25, 5)`); err != nil {
		t.Fatal(err)
	}
	pool.Close()

	s, err := Open(ctx, db, nil)
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
