package main

import (
	"net/http"
	"net/http/httptest"
	"regexp"
	"strings"
	"sync"
	"testing"

	"agentd/internal/job"
	"agentd/internal/store"
)

// deliveryReceiver is a webhook receiver outside agentd for job
// deliveries: it records each request's delivery id, and answers
// answer's status (which may block until the test lets it go).
type deliveryReceiver struct {
	mu     sync.Mutex
	ids    []string
	answer func(n int) int
	srv    *httptest.Server
}

func receiveDeliveries(t *testing.T, answer func(n int) int) *deliveryReceiver {
	rc := &deliveryReceiver{answer: answer}
	rc.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		rc.mu.Lock()
		rc.ids = append(rc.ids, r.Header.Get(job.DeliveryHeader))
		n := len(rc.ids)
		rc.mu.Unlock()
		w.WriteHeader(rc.answer(n))
	}))
	t.Cleanup(rc.srv.Close)
	return rc
}

func (rc *deliveryReceiver) got() []string {
	rc.mu.Lock()
	defer rc.mu.Unlock()
	return append([]string(nil), rc.ids...)
}

// deliverFiles are a data directory with the job "report", delivering
// its output to url.
func deliverFiles(model, url string) map[string]string {
	return map[string]string{
		"agentd.yaml":           "tools:\n  http_fetch:\n    allow_networks: [\"127.0.0.1/32\"]\n",
		"agents/assistant.yaml": openaiAgent(model, ""),
		"extensions/job/report.yaml": "type: job\nname: report\nspec:\n  agent: assistant\n  prompt: \"report\"\n" +
			"  deliver: {webhook: \"" + url + "/in\"}\n",
	}
}

// A run whose webhook delivery fails every try shows it through the
// daemon: `agentd jobs run` says it was not delivered, and the run
// history records when it was given up and why.
func TestJobDeliveryFailureRecorded(t *testing.T) {
	rc := receiveDeliveries(t, func(int) int { return http.StatusBadGateway })
	dir := dataDir(t, deliverFiles(fake(t, "match .\nsay done\n"), rc.srv.URL))
	serve(t, dir)
	r := run(t, dir, "jobs", "run", "report")
	if r.code != 0 || !strings.Contains(r.stderr, "not delivered: webhook answered 502") {
		t.Fatalf("jobs run: %+v", r)
	}
	runs := jobRuns(t, dir, "report")
	if len(runs) != 1 || runs[0].Status != store.RunDone || runs[0].Delivered.IsZero() ||
		!strings.Contains(runs[0].DeliveryError, "502") {
		t.Fatalf("the run history: %+v; want the run done, its delivery given up with its reason", runs)
	}
	if table := run(t, dir, "jobs", "runs", "report"); !strings.Contains(table.stdout, "DELIVERED") ||
		!regexp.MustCompile(runs[0].Run+`\s+manual\s+done\s.*\sfailed\s+done`).MatchString(table.stdout) {
		t.Errorf("agentd jobs runs: %+v; want the run shown done, its delivery failed", table)
	}
	ids := rc.got()
	if len(ids) != 3 || ids[0] != "report:"+runs[0].Run || ids[2] != ids[0] {
		t.Errorf("the tries' delivery ids %q, want 3 of report:%s", ids, runs[0].Run)
	}
}

// A run done while its delivery was under way when agentd was killed is
// delivered by the next start, once recorded: the receiver is sent it
// again with the same delivery id, and the run history shows it
// delivered.
func TestJobDeliveredAfterRestart(t *testing.T) {
	hold := make(chan struct{})
	entered := make(chan struct{}, 1)
	rc := receiveDeliveries(t, func(n int) int {
		if n == 1 {
			entered <- struct{}{}
			<-hold // agentd is killed while it waits for the answer
		}
		return http.StatusNoContent
	})
	defer close(hold)
	dir := dataDir(t, deliverFiles(fake(t, "match .\nsay done\n"), rc.srv.URL))
	d := serve(t, dir)
	if r := run(t, dir, "jobs", "run", "report", "--no-wait"); r.code != 0 {
		t.Fatalf("jobs run: %+v", r)
	}
	<-entered
	d.kill()
	runs := jobRuns(t, dir, "report")
	if len(runs) != 1 || runs[0].Status != store.RunDone || !runs[0].Delivered.IsZero() {
		t.Fatalf("the run after the kill: %+v; want it done, its delivery pending", runs)
	}
	if table := run(t, dir, "jobs", "runs", "report"); !regexp.MustCompile(runs[0].Run + `\s.*\spending\s+done`).MatchString(table.stdout) {
		t.Errorf("agentd jobs runs after the kill: %+v; want the run shown pending", table)
	}
	serve(t, dir)
	runs = waitRuns(t, dir, "report", "the run delivered", func(rs []job.Result) bool {
		return len(rs) == 1 && !rs[0].Delivered.IsZero()
	})
	if runs[0].DeliveryError != "" {
		t.Errorf("the run delivered after the restart: %+v", runs[0])
	}
	if table := run(t, dir, "jobs", "runs", "report"); !regexp.MustCompile(runs[0].Run + `\s.*\syes\s+done`).MatchString(table.stdout) {
		t.Errorf("agentd jobs runs: %+v; want the run shown delivered", table)
	}
	want := "report:" + runs[0].Run
	if ids := rc.got(); len(ids) != 2 || ids[0] != want || ids[1] != want {
		t.Errorf("the deliveries' ids %q, want %q twice (the one the kill cut short, then the one recorded)", ids, want)
	}
}
