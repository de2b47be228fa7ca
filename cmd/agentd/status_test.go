package main

// agentd status and agentd doctor through the binary, with and without a
// daemon.

import (
	"encoding/json"
	"fmt"
	"path/filepath"
	"strings"
	"testing"

	"agentd/internal/doctor"
	"agentd/internal/store/postgres/pgtest"
)

func TestStatusCommand(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "d")
	run(t, dir, "send", "assistant", "hello")

	// Not running: what was looked at, exit 5.
	r := run(t, dir, "status")
	if r.code != 5 || !strings.Contains(r.stdout, "agentd is not running on "+dir+" (no socket there: looked for "+filepath.Join(dir, "agentd.sock")+")") ||
		!strings.Contains(r.stdout, "agentd serve --data "+dir) {
		t.Errorf("status, not running: %+v", r)
	}
	// A mistyped directory is not taken for a stopped agentd.
	typo := filepath.Join(t.TempDir(), "dd")
	if r := run(t, typo, "status"); r.code != 3 || !strings.Contains(r.stderr, typo+" does not exist") {
		t.Errorf("status on a missing directory: %+v", r)
	}

	d, url := serveListen(t, dir, "127.0.0.1:0")
	pid := d.cmd.Process.Pid
	r = run(t, dir, "status")
	for _, want := range []string{"agentd dev is running on " + dir, fmt.Sprintf("pid %d", pid), "unix:" + filepath.Join(dir, "agentd.sock"),
		url, "1 idle (1 in all)", "assistant (echo)", "system agents memory-keeper (echo)", "mcp servers none"} {
		if r.code != 0 || !strings.Contains(flat(r.stdout), want) {
			t.Errorf("status does not say %q: %+v", want, r)
		}
	}
	r = run(t, dir, "status", "--json")
	var st struct {
		Running   bool     `json:"running"`
		PID       int      `json:"pid"`
		Listening []string `json:"listening"`
		Agents    []struct {
			ID string `json:"id"`
		} `json:"agents"`
	}
	if err := json.Unmarshal([]byte(r.stdout), &st); err != nil || !st.Running || st.PID != pid || len(st.Listening) != 2 || len(st.Agents) != 1 {
		t.Errorf("status --json: %v %+v\n%s", err, st, r.stdout)
	}
	// The same from another host, through the gateway.
	tok := strings.TrimSpace(run(t, dir, "token").stdout)
	r = runEnv(t, t.TempDir(), nil, "status", "--remote", url, "--token", tok)
	if r.code != 0 || !strings.Contains(r.stdout, "is running on "+url) || !strings.Contains(r.stdout, fmt.Sprint(pid)) {
		t.Errorf("status --remote: %+v", r)
	}

	// A daemon that died leaves its socket: it does not answer.
	d.kill()
	r = run(t, dir, "status")
	if r.code != 5 || !strings.Contains(r.stdout, "its socket does not answer") {
		t.Errorf("status after a crash: %+v", r)
	}
}

func TestDoctorCommand(t *testing.T) {
	addr := fake(t, "say ok\n")
	dir := dataDir(t, map[string]string{
		"agentd.yaml":   "gateway:\n  listen: off\n",
		"agents/a.yaml": openaiAgent(addr, ""),
	})
	check := func(t *testing.T, running bool) {
		r := run(t, dir, "doctor", "--probe")
		if r.code != 0 || !strings.Contains(flat(r.stdout), "OK model openai fake at http://"+addr) || !strings.Contains(r.stdout, "one-token call answered") {
			t.Errorf("doctor --probe: %+v", r)
		}
		r = run(t, dir, "doctor", "--json")
		var rep doctor.Report
		if err := json.Unmarshal([]byte(r.stdout), &rep); err != nil || r.code != 0 || rep.Running != running || rep.Data != dir {
			t.Errorf("doctor --json (running %v): %v %+v", running, err, rep)
		}
	}
	t.Run("not running", func(t *testing.T) { check(t, false) })
	d := serve(t, dir)
	t.Run("daemon", func(t *testing.T) {
		check(t, true)
		r := run(t, dir, "doctor")
		if !strings.Contains(r.stdout, fmt.Sprintf("agentd is running, pid %d", d.cmd.Process.Pid)) ||
			!strings.Contains(r.stdout, "held by the running agentd") {
			t.Errorf("doctor with a daemon: %+v", r)
		}
	})
	d.stop(t)

	// A broken agent file and a model that is down: exit 1, each with
	// what to do.
	bad := dataDir(t, map[string]string{
		"agentd.yaml":   "gateway:\n  listen: off\n",
		"agents/a.yaml": openaiAgent("127.0.0.1:1", ""),
		"agents/b.yaml": "name: B\nbudgets:\n  max_stepz: 3\n",
	})
	r := run(t, bad, "doctor")
	if r.code != 1 || !strings.Contains(flat(r.stdout), "FAIL agent b") || !strings.Contains(r.stdout, "max_stepz") ||
		!strings.Contains(flat(r.stdout), "FAIL model") || strings.Count(r.stdout, "→") < 2 || r.stderr != "" {
		t.Errorf("doctor on a broken setup: %+v", r)
	}
	// A mistyped directory.
	typo := filepath.Join(t.TempDir(), "nowhere")
	if r := run(t, typo, "doctor"); r.code != 1 || !strings.Contains(r.stdout, "does not exist") || !strings.Contains(r.stdout, "agentd init") {
		t.Errorf("doctor on a missing directory: %+v", r)
	}
}

// flat is s with every run of spaces one space, for tables.
func flat(s string) string { return strings.Join(strings.Fields(s), " ") }

// TestDoctorPostgres: with the store on PostgreSQL, doctor checks that
// database's schema (not a SQLite file the node never opens), says where
// without the password, and says what to fix when it does not answer.
func TestDoctorPostgres(t *testing.T) {
	db := pgtest.NewDB(t)
	dir := dataDir(t, map[string]string{"agentd.yaml": "gateway:\n  listen: off\n"})
	schema := func(r result) string {
		var rep doctor.Report
		if err := json.Unmarshal([]byte(r.stdout), &rep); err != nil {
			t.Fatalf("doctor --json: %v %+v", err, r)
		}
		for _, c := range rep.Checks {
			if c.Name == "schema" {
				return string(c.Status) + " " + c.Detail + " " + c.Fix
			}
		}
		return ""
	}
	if s := schema(run(t, dir, "doctor", "--json", "--store", db)); !strings.HasPrefix(s, "ok ") || !strings.Contains(s, "no tables yet") {
		t.Errorf("doctor on an empty database: %q", s)
	}
	run(t, dir, "send", "--store", db, "assistant", "hello")
	s := schema(runEnv(t, dir, []string{"AGENTD_STORE=" + db}, "doctor", "--json"))
	if !strings.HasPrefix(s, "ok ") || !strings.Contains(s, "(current)") || strings.Contains(s, "agentd:agentd@") {
		t.Errorf("doctor on the database agentd made: %q", s)
	}
	down := "postgres://agentd:secret@127.0.0.1:1/agentd?connect_timeout=2"
	r := run(t, dir, "doctor", "--store", down)
	if s := schema(run(t, dir, "doctor", "--json", "--store", down)); r.code != 1 || !strings.HasPrefix(s, "fail ") ||
		!strings.Contains(s, "store.url") || strings.Contains(r.stdout+s, "secret") {
		t.Errorf("doctor on a database that does not answer: %q\n%+v", s, r)
	}
}
