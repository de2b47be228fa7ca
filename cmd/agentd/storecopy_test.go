package main

import (
	"net/url"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"agentd/internal/store"
	"agentd/internal/store/postgres/pgtest"
	"agentd/internal/store/sqlite"
)

// agentd store copy moves a SQLite deployment to PostgreSQL: every row,
// verified; a second run copies only what was written since; agentd then
// runs on the copy with its sessions as they were, numbering on from
// where they stopped. The password never shows.
func TestStoreCopy(t *testing.T) {
	dst := pgtest.NewDB(t)
	addr := fake(t, `
match ^remember
call remember {"entities": [{"name": "Ada Lovelace", "type": "person", "observations": ["likes green tea"]}], "insight": "the lighthouse project ships in March"}
---
say stored

match *
say ok {{last_user}}
`)
	dir := filepath.Join(t.TempDir(), "d") // SQLite, whatever the harness uses
	if err := os.MkdirAll(filepath.Join(dir, "agents"), 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "agents", "assistant.yaml"), []byte(openaiAgent(addr, "")), 0o600); err != nil {
		t.Fatal(err)
	}
	if r := run(t, dir, "send", "assistant", "--session", "m", "remember Ada"); r.code != 0 {
		t.Fatalf("send: %+v", r)
	}
	for i, key := range []string{"a", "b", "c"} {
		for j := range i + 1 {
			if r := run(t, dir, "send", "assistant", "--session", key, "message "+strconv.Itoa(j)); r.code != 0 {
				t.Fatalf("send: %+v", r)
			}
		}
	}
	// An extension row, changed once, as the substrate writes it.
	lite, err := sqlite.Open(t.Context(), filepath.Join(dir, "agentd.db"), nil)
	if err != nil {
		t.Fatal(err)
	}
	for v, url := range []string{"https://a.example", "https://b.example"} {
		e := store.Extension{Type: "action", Name: "weather", Spec: []byte(`{"url":"` + url + `"}`), Enabled: true, Provenance: store.ProvenanceUser}
		if _, err := lite.PutExtension(t.Context(), e, store.ExtPut, int64(v)); err != nil {
			t.Fatal(err)
		}
	}
	// Two runs of a job, one still running.
	runAt := time.Date(2026, 11, 26, 8, 0, 0, 0, time.UTC)
	for i, status := range []string{store.RunSkipped, store.RunRunning} {
		at := runAt.Add(time.Duration(i) * time.Minute)
		r := store.JobRun{Job: "digest", Run: store.RunID(at, ""), ScheduledAt: at, Trigger: store.TriggerCron, Status: status}
		if _, _, err := lite.StartRun(t.Context(), r); err != nil {
			t.Fatal(err)
		}
	}
	lite.Close()
	copied := func(t *testing.T) int {
		t.Helper()
		r := run(t, dir, "store", "copy", "--from", "sqlite://"+dir, "--to", dst)
		if pw := password(dst); pw != "" && strings.Contains(r.stdout+r.stderr, ":"+pw+"@") {
			t.Errorf("the output shows the password:\n%s%s", r.stdout, r.stderr)
		}
		if r.code != 0 || !strings.Contains(r.stdout, "verified") || !strings.Contains(r.stdout, "every session's last sequence number is the same") {
			t.Fatalf("store copy: %+v", r)
		}
		for _, table := range []string{"sessions", "events", "inbox", "usage", "agents", "agentd_extensions", "agentd_extension_history", "agentd_job_runs", "entities", "observations", "insights"} {
			if !regexp.MustCompile(`(?m)^\s*` + table + `\s+(\d+)\s+(\d+)\s*$`).MatchString(r.stdout) {
				t.Errorf("the report has no equal counts of %s:\n%s", table, r.stdout)
			}
		}
		// The rows a reseed wrote (built-in documents, the agent file) have
		// one change each; the test's extension has two.
		rows := regexp.MustCompile(`(?m)^\s*agentd_extensions\s+(\d+)\s+\d+\s*$`).FindStringSubmatch(r.stdout)
		hist := regexp.MustCompile(`(?m)^\s*agentd_extension_history\s+(\d+)\s+\d+\s*$`).FindStringSubmatch(r.stdout)
		if rows == nil || hist == nil || atoi(rows[1]) < 2 || atoi(hist[1]) != atoi(rows[1])+1 {
			t.Errorf("the report does not count the extensions and their changes in both:\n%s", r.stdout)
		}
		m := regexp.MustCompile(`\((\d+) events copied by this run\)`).FindStringSubmatch(r.stdout)
		if m == nil {
			t.Fatalf("no count of events copied:\n%s", r.stdout)
		}
		n, _ := strconv.Atoi(m[1])
		return n
	}
	first := copied(t)
	if first == 0 {
		t.Fatal("the first copy copied no events")
	}
	if n := copied(t); n != 0 {
		t.Errorf("a second copy with nothing new copied %d events", n)
	}
	if r := run(t, dir, "send", "assistant", "--session", "a", "one more"); r.code != 0 {
		t.Fatalf("send: %+v", r)
	}
	// The running run ends: the next copy carries its end (the copy
	// verifies every run's status).
	lite, err = sqlite.Open(t.Context(), filepath.Join(dir, "agentd.db"), nil)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := lite.FinishRun(t.Context(), store.JobRun{Job: "digest", Run: store.RunID(runAt.Add(time.Minute), ""), Status: store.RunDone}); err != nil {
		t.Fatal(err)
	}
	lite.Close()
	if n := copied(t); n == 0 || n >= first {
		t.Errorf("the copy after one more message copied %d events (the first copied %d): want only the new ones", n, first)
	}

	pg := []string{"--store", dst}
	want := run(t, dir, "log", "assistant/a", "--json")
	got := run(t, dir, append(pg, "log", "assistant/a", "--json")...)
	if got.code != 0 || got.stdout != want.stdout {
		t.Errorf("the copy's log differs:\n got %s\nwant %s", got.stdout, want.stdout)
	}
	if r := run(t, dir, append(pg, "send", "assistant", "--session", "a", "on postgres")...); r.code != 0 {
		t.Fatalf("send on the copy: %+v", r)
	}
	evs, _ := jsonEvents(t, run(t, dir, append(pg, "log", "assistant/a", "--json")...).stdout)
	before, _ := jsonEvents(t, want.stdout)
	for i, e := range evs {
		if e.Seq != int64(i+1) {
			t.Fatalf("event %d has seq %d after sending on the copy: not gapless", i, e.Seq)
		}
	}
	if len(evs) <= len(before) {
		t.Errorf("the copy has %d events after a send, had %d", len(evs), len(before))
	}

	// Long-term memory came along: keyword search finds it in PostgreSQL.
	if r := run(t, dir, append(pg, "memory", "search", "assistant", "lighthouse")...); r.code != 0 || !strings.Contains(r.stdout, "«lighthouse» project ships in March") {
		t.Errorf("memory search on the copy: %+v", r)
	}
	if r := run(t, dir, append(pg, "memory", "show", "assistant", "ada lovelace")...); r.code != 0 || !strings.Contains(r.stdout, "likes green tea") {
		t.Errorf("memory show on the copy: %+v", r)
	}

	// The daemon on the copy says which store it has, and never logs the password.
	d, base := serveListenArgs(t, dir, "127.0.0.1:0", []string{"--log-level", "debug"}, "AGENTD_STORE="+dst)
	tok := strings.TrimSpace(run(t, dir, "token").stdout)
	if r := waitReady(t, base, tok, 200); !strings.Contains(r.body, `"store":"postgres"`) {
		t.Errorf("/readyz = %s, want it to name postgres", r.body)
	}
	d.stop(t)
	if pw := password(dst); pw != "" && strings.Contains(d.out.String(), ":"+pw+"@") {
		t.Errorf("the daemon logged the password:\n%s", d.out.String())
	}
}

func password(u string) string {
	p, err := url.Parse(u)
	if err != nil {
		return ""
	}
	pw, _ := p.User.Password()
	return pw
}

func atoi(s string) int { n, _ := strconv.Atoi(s); return n }
