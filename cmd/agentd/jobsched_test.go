package main

import (
	"bufio"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"agentd/internal/job"
	"agentd/internal/store"
)

// modelCounter is a proxy in front of a fake model that counts the job
// prompts "tick <fired_at>" it passes on, by fire time.
type modelCounter struct {
	mu    sync.Mutex
	ticks map[string]int
	srv   *httptest.Server
}

var tickRE = regexp.MustCompile(`^tick (\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ)$`)

func countModel(t *testing.T, addr string) *modelCounter {
	m := &modelCounter{ticks: map[string]int{}}
	proxy := httputil.NewSingleHostReverseProxy(&url.URL{Scheme: "http", Host: addr})
	m.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		r.Body = io.NopCloser(strings.NewReader(string(b)))
		// A run's request ends with its input, the prompt alone (other
		// requests, such as a session's title, quote it among other text).
		var req struct {
			Messages []struct {
				Role    string `json:"role"`
				Content any    `json:"content"`
			} `json:"messages"`
		}
		if json.Unmarshal(b, &req) == nil && len(req.Messages) > 0 {
			last := req.Messages[len(req.Messages)-1]
			if text, ok := last.Content.(string); ok && last.Role == "user" {
				if mm := tickRE.FindStringSubmatch(text); mm != nil {
					m.mu.Lock()
					m.ticks[mm[1]]++
					m.mu.Unlock()
				}
			}
		}
		proxy.ServeHTTP(w, r)
	}))
	t.Cleanup(m.srv.Close)
	return m
}

func (m *modelCounter) addr() string { return strings.TrimPrefix(m.srv.URL, "http://") }

// jobRuns is `agentd jobs runs NAME --json`.
func jobRuns(t *testing.T, dir, name string) []job.Result {
	t.Helper()
	r := run(t, dir, "jobs", "runs", name, "--json", "--limit", "1000")
	if r.code != 0 {
		t.Fatalf("jobs runs: %+v", r)
	}
	var out []job.Result
	sc := bufio.NewScanner(strings.NewReader(r.stdout))
	for sc.Scan() {
		var res job.Result
		if err := json.Unmarshal(sc.Bytes(), &res); err != nil || res.Run == "" || res.Status == "" || res.Started.IsZero() {
			t.Fatalf("run line %q: %v", sc.Text(), err)
		}
		out = append(out, res)
	}
	return out
}

// waitRuns polls the job's runs until ok says they are as wanted.
func waitRuns(t *testing.T, dir, name, what string, ok func([]job.Result) bool) []job.Result {
	t.Helper()
	deadline := time.Now().Add(60 * time.Second)
	for {
		runs := jobRuns(t, dir, name)
		if ok(runs) {
			return runs
		}
		if time.Now().After(deadline) {
			t.Fatalf("waiting for %s: runs %+v", what, runs)
		}
		time.Sleep(200 * time.Millisecond)
	}
}

func countStatus(runs []job.Result, status string) int {
	n := 0
	for _, r := range runs {
		if r.Status == status {
			n++
		}
	}
	return n
}

func allEnded(runs []job.Result) bool {
	for _, r := range runs {
		if r.Ended.IsZero() {
			return false
		}
	}
	return true
}

// A job `every: 1s` fires on its own while agentd serve runs (and not in
// a command run in process), its output
// delivered to a session; `agentd jobs runs --json` lists its runs;
// pause stops the fires, resume starts them again; after a SIGKILL and a
// new start, no scheduled time ran twice: each run's scheduled time is
// its own, and the model was asked once per scheduled time.
func TestJobsFireThroughTheDaemon(t *testing.T) {
	m := countModel(t, fake(t, "match .\nsay got: {{last_user}}\n"))
	dir := dataDir(t, map[string]string{
		"agents/assistant.yaml": openaiAgent(m.addr(), ""),
		"extensions/job/tick.yaml": "type: job\nname: tick\nspec:\n  agent: assistant\n  prompt: \"tick {{fired_at}}\"\n" +
			"  triggers: [{every: 1s}]\n  deliver: {session: assistant/inbox}\n",
	})
	// In process, nothing fires; a job that does not exist is not found.
	if rs := jobRuns(t, dir, "tick"); len(rs) != 0 {
		t.Fatalf("runs before the daemon: %+v", rs)
	}
	if r := run(t, dir, "jobs", "runs", "nope"); r.code != 3 || !strings.Contains(r.stderr, "no job nope") {
		t.Fatalf("an unknown job: %+v", r)
	}
	d := serve(t, dir)
	waitRuns(t, dir, "tick", "3 runs done", func(rs []job.Result) bool { return countStatus(rs, store.RunDone) >= 3 })

	r := run(t, dir, "jobs", "list", "--json")
	var info struct {
		Name    string
		Enabled bool
		Next    time.Time
	}
	if err := json.Unmarshal([]byte(r.stdout), &info); err != nil || info.Name != "tick" || !info.Enabled || info.Next.IsZero() {
		t.Fatalf("jobs list: %+v (%v)", r, err)
	}
	if r := run(t, dir, "log", "assistant/inbox"); r.code != 0 || !strings.Contains(r.stdout, "got: tick ") {
		t.Fatalf("the delivery session: %+v", r)
	}

	// Paused, it fires no more.
	if r := run(t, dir, "jobs", "pause", "tick"); r.code != 0 || !strings.Contains(r.stdout, "paused") {
		t.Fatalf("pause: %+v", r)
	}
	paused := waitRuns(t, dir, "tick", "the runs under way to end", allEnded)
	time.Sleep(2500 * time.Millisecond) // two fire times and a half
	if after := jobRuns(t, dir, "tick"); len(after) != len(paused) {
		t.Fatalf("paused, the job ran: %d runs, then %d", len(paused), len(after))
	}
	if r := run(t, dir, "jobs", "resume", "tick"); r.code != 0 {
		t.Fatalf("resume: %+v", r)
	}
	waitRuns(t, dir, "tick", "runs after resume", func(rs []job.Result) bool {
		return countStatus(rs, store.RunDone) >= countStatus(paused, store.RunDone)+2
	})

	// SIGKILL, start again: the fires go on, none twice.
	d.kill()
	before := jobRuns(t, dir, "tick")
	serve(t, dir)
	waitRuns(t, dir, "tick", "runs after the restart", func(rs []job.Result) bool {
		return countStatus(rs, store.RunDone) >= countStatus(before, store.RunDone)+3 && allEnded(rs[1:])
	})
	run(t, dir, "jobs", "pause", "tick")
	runs := waitRuns(t, dir, "tick", "all runs ended", allEnded)
	seen := map[time.Time]bool{}
	for _, r := range runs {
		if seen[r.Scheduled] {
			t.Errorf("scheduled time %v ran twice", r.Scheduled)
		}
		seen[r.Scheduled] = true
		if r.Status == store.RunError {
			t.Errorf("run failed: %+v", r)
		}
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	for at, n := range m.ticks {
		if n != 1 {
			t.Errorf("the model was asked %d times for the fire at %s", n, at)
		}
	}
	if len(m.ticks) != countStatus(runs, store.RunDone) {
		t.Errorf("the model was asked for %d fires; %d runs are done", len(m.ticks), countStatus(runs, store.RunDone))
	}
}
