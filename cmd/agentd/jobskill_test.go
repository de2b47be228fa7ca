package main

import (
	"encoding/json"
	"fmt"
	"io"
	"log"
	"maps"
	"math/rand/v2"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"regexp"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"agentd/internal/job"
	"agentd/internal/store"
	"agentd/internal/store/postgres/pgtest"
)

// The jobs of the kill tests, each `every: 1s`: skip (the default
// concurrency) delivers each run to a webhook counter outside agentd;
// all catches every missed fire up, so that no fire may be missing
// between its first run and its last; allow runs while its runs run.
var killJobs = []struct{ name, catchUp, spec string }{
	{"skip", "once", "  deliver: {webhook: \"http://%s/hook\"}\n"},
	{"all", "all", "  concurrency: queue\n  deliver: {none: true}\n"},
	{"allow", "skip", "  concurrency: allow\n  deliver: {none: true}\n"},
}

// jobPromptRE is a kill-test job's prompt: "<job> <fired_at>".
var jobPromptRE = regexp.MustCompile(`^(skip|all|allow) (\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ)$`)

// requestLog is a proxy in front of a fake model that records when each
// job prompt was passed on, by "<job> <fired_at>".
type requestLog struct {
	mu   sync.Mutex
	sent map[string][]time.Time
	srv  *httptest.Server
}

func logRequests(t *testing.T, addr string) *requestLog {
	l := &requestLog{sent: map[string][]time.Time{}}
	proxy := httputil.NewSingleHostReverseProxy(&url.URL{Scheme: "http", Host: addr})
	proxy.ErrorLog = log.New(io.Discard, "", 0) // requests a kill cut short
	l.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		r.Body = io.NopCloser(strings.NewReader(string(b)))
		var req struct {
			Messages []struct {
				Role    string `json:"role"`
				Content any    `json:"content"`
			} `json:"messages"`
		}
		if json.Unmarshal(b, &req) == nil && len(req.Messages) > 0 {
			last := req.Messages[len(req.Messages)-1]
			if text, ok := last.Content.(string); ok && last.Role == "user" && jobPromptRE.MatchString(text) {
				l.mu.Lock()
				l.sent[text] = append(l.sent[text], time.Now())
				l.mu.Unlock()
			}
		}
		proxy.ServeHTTP(w, r)
	}))
	t.Cleanup(l.srv.Close)
	return l
}

// jobKillFiles are the data directory files of the job kill tests.
func jobKillFiles(model, hook string) map[string]string {
	files := map[string]string{
		"agentd.yaml":           "tools:\n  http_fetch:\n    allow_networks: [\"127.0.0.1/32\"]\n",
		"agents/assistant.yaml": openaiAgent(model, ""),
	}
	for _, j := range killJobs {
		spec := j.spec
		if strings.Contains(spec, "%s") {
			spec = fmt.Sprintf(spec, hook)
		}
		files["extensions/job/"+j.name+".yaml"] = "type: job\nname: " + j.name + "\nspec:\n  agent: assistant\n" +
			"  prompt: \"" + j.name + " {{fired_at}}\"\n  triggers: [{every: 1s, catch_up: " + j.catchUp + "}]\n" + spec
	}
	return files
}

// TestJobsKill proves that a job's scheduled fire runs exactly once
// whatever the moment agentd serve is SIGKILLed: three `every: 1s` jobs
// (skip, queue with catch_up all, allow) run against a fake model behind
// a proxy that records each request, the skip job delivering each run to
// a webhook counter outside agentd; the daemon is killed at random
// moments around fire times and started again. See checkJobKills for
// what must hold. AGENTD_KILLS sets the kills (divided by 4; default 8,
// 3 with -short).
func TestJobsKill(t *testing.T) {
	kills := killCount(t, 8, 4, 3)
	hook := newCounter(t)
	m := logRequests(t, fake(t, "match .\ndelay 150ms\nsay done {{last_user}}\n"))
	dir := dataDir(t, jobKillFiles(strings.TrimPrefix(m.srv.URL, "http://"), hook.ln.Addr().String()))
	rng := rand.New(rand.NewPCG(uint64(time.Now().UnixNano()), 21))
	var killed []time.Time
	for range kills {
		d := serve(t, dir)
		killed = append(killed, killAround(rng, d.kill))
	}
	d := serve(t, dir)
	checkJobKills(t, []string{dir}, m, hook, killed, func() { d.stop(t) })
}

// TestJobsClusterKill is TestJobsKill with three agentd serve on one
// PostgreSQL database, random nodes SIGKILLed around fire times and
// started again: the one scheduler of the cluster moves between nodes,
// and each fire still runs once. AGENTD_NODE_KILLS sets the kills
// (default 20, 3 with -short).
func TestJobsClusterKill(t *testing.T) {
	db := pgtest.NewDB(t)
	kills := nodeKills(t)
	hook := newCounter(t)
	m := logRequests(t, fake(t, "match .\ndelay 150ms\nsay done {{last_user}}\n"))
	files := jobKillFiles(strings.TrimPrefix(m.srv.URL, "http://"), hook.ln.Addr().String())
	dirs := make([]string, 3)
	ds := make([]*daemon, 3)
	for i := range dirs {
		dirs[i] = dataDir(t, files)
		pgDirs.Store(dirs[i], db)
		ds[i] = serve(t, dirs[i])
	}
	rng := rand.New(rand.NewPCG(uint64(time.Now().UnixNano()), 23))
	var killed []time.Time
	for range kills {
		i := rng.IntN(len(ds))
		killed = append(killed, killAround(rng, ds[i].kill))
		ds[i] = serve(t, dirs[i])
	}
	checkJobKills(t, dirs, m, hook, killed, func() {
		for _, d := range ds {
			d.stop(t)
		}
	})
}

// killAround calls kill at a random moment from 250 ms before to 350 ms
// after one of the next three fire times (whole seconds), and returns
// when it did.
func killAround(rng *rand.Rand, kill func()) time.Time {
	next := time.Now().Truncate(time.Second).Add(time.Duration(1+rng.IntN(3)) * time.Second)
	at := next.Add(time.Duration(rng.IntN(600)-250) * time.Millisecond)
	time.Sleep(time.Until(at))
	kill()
	return time.Now()
}

// checkJobKills lets the jobs run on for a few fires after the last
// kill, pauses them, waits for their runs to end, stops the daemons
// (stop) and checks that
//   - no scheduled time of a job has two runs, and every run's scheduled
//     time is a whole second;
//   - the catch_up all job has a run for every second from its first run
//     to its last: no fire was lost, whether it was due while a node was
//     up or down;
//   - every done run took one step, and the model was asked for it once,
//     or again only across a kill (a request the kill cut short, sent
//     again when the runtime resumed the turn);
//   - the model was asked for no fire that has no run;
//   - every run that ended done or error has its delivery recorded, and
//     made (no delivery_error);
//   - the webhook counter saw each done run of the skip job delivered,
//     none missing, and only those: every request carried the delivery
//     id "skip:<run>" of one, and the distinct ids are the done runs. A
//     run's delivery sent again (a kill between the counter's answer and
//     the delivery's record) carries the same id: a receiver drops it.
func checkJobKills(t *testing.T, dirs []string, m *requestLog, hook *counter, killed []time.Time, stop func()) {
	t.Helper()
	last := killed[len(killed)-1]
	dir := dirs[0]
	waitRuns(t, dir, "all", "fires after the last kill", func(rs []job.Result) bool {
		return len(rs) > 0 && rs[0].Scheduled.After(last.Add(3*time.Second))
	})
	for _, j := range killJobs {
		if r := run(t, dir, "jobs", "pause", j.name); r.code != 0 {
			t.Fatalf("pause %s: %+v", j.name, r)
		}
	}
	runs := map[string][]job.Result{}
	for _, j := range killJobs {
		runs[j.name] = waitRuns(t, dir, j.name, j.name+" runs ended", allEnded)
	}
	stop()

	m.mu.Lock()
	defer m.mu.Unlock()
	hook.mu.Lock()
	defer hook.mu.Unlock()
	for body := range hook.hits {
		var res job.Result
		if err := json.Unmarshal([]byte(body), &res); err != nil {
			t.Fatalf("a delivery %q: %v", body, err)
		}
		if res.Status != store.RunDone || res.Job != "skip" {
			t.Errorf("a delivery of a %s run of %s: %+v", res.Status, res.Job, res)
		}
	}
	ids := maps.Clone(hook.ids)
	asked := map[string]bool{}
	figures := map[string]int{}
	for _, j := range killJobs {
		rs := runs[j.name]
		seen := map[time.Time]bool{}
		for _, r := range rs {
			figures[r.Status]++
			if seen[r.Scheduled] {
				t.Errorf("%s: scheduled time %v has two runs", j.name, r.Scheduled)
			}
			seen[r.Scheduled] = true
			if !r.Scheduled.Equal(r.Scheduled.Truncate(time.Second)) {
				t.Errorf("%s: run %s is not at a fire time", j.name, r.Run)
			}
			prompt := j.name + " " + r.Scheduled.UTC().Format(time.RFC3339)
			asked[prompt] = true
			sent := m.sent[prompt]
			switch r.Status {
			case store.RunDone:
				if r.Steps != 1 || len(sent) == 0 {
					t.Errorf("%s: done run %s took %d steps, the model was asked %d times", j.name, r.Run, r.Steps, len(sent))
				}
				for i := 1; i < len(sent); i++ {
					if !slices.ContainsFunc(killed, func(k time.Time) bool { return k.After(sent[i-1]) && k.Before(sent[i]) }) {
						t.Errorf("%s: run %s: the model was asked again at %s with no kill since %s", j.name, r.Run,
							sent[i].Format("15:04:05.000"), sent[i-1].Format("15:04:05.000"))
					}
				}
				figures["model requests"] += len(sent)
			case store.RunSkipped:
				if len(sent) != 0 {
					t.Errorf("%s: skipped run %s was sent to the model", j.name, r.Run)
				}
			default:
				t.Errorf("%s: run %s ended %s: %s", j.name, r.Run, r.Status, r.Error)
			}
			if (r.Status == store.RunDone || r.Status == store.RunError) && (r.Delivered.IsZero() || r.DeliveryError != "") {
				t.Errorf("%s: run %s ended %s: delivery recorded at %v, error %q; want it delivered", j.name, r.Run, r.Status,
					r.Delivered, r.DeliveryError)
			}
			if j.name == "skip" && r.Status == store.RunDone {
				id := "skip:" + r.Run
				switch n := ids[id]; {
				case n == 0:
					t.Errorf("skip: run %s done, never delivered", r.Run)
				case n > 1:
					figures["repeats"] += n - 1 // a kill between the counter's answer and the record
				}
				figures["deliveries"] += ids[id]
				delete(ids, id)
			}
		}
		if j.name == "all" && len(rs) > 0 {
			first, lastRun := rs[len(rs)-1].Scheduled, rs[0].Scheduled
			for at := first; !at.After(lastRun); at = at.Add(time.Second) {
				if !seen[at] {
					t.Errorf("all: no run for the fire at %s (runs from %s to %s)", at.Format(time.RFC3339), first.Format(time.RFC3339), lastRun.Format(time.RFC3339))
				}
			}
		}
		figures["runs"] += len(rs)
	}
	for prompt := range m.sent {
		if !asked[prompt] {
			t.Errorf("the model was asked for %q, which has no run", prompt)
		}
	}
	for id, n := range ids {
		t.Errorf("the counter was sent %d deliveries of id %q, not a done run of skip", n, id)
	}
	t.Logf("%d kills on %d nodes: %d runs (%d done, %d skipped), %d model requests, %d webhook deliveries (%d sent again with the same id)",
		len(killed), len(dirs), figures["runs"], figures[store.RunDone], figures[store.RunSkipped], figures["model requests"], figures["deliveries"], figures["repeats"])
}
