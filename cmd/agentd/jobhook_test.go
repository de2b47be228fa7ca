package main

import (
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"agentd/internal/job"
	"agentd/internal/store"
)

// hookSend posts a webhook request to the job name through c at base,
// signed under key at ts with the delivery id, and returns its status and
// body.
func hookSend(t *testing.T, c *http.Client, base, name, key, body, delivery string, ts time.Time) (int, string) {
	t.Helper()
	req, err := http.NewRequest("POST", base+"/hooks/"+name, strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	stamp := strconv.FormatInt(ts.Unix(), 10)
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("X-Agentd-Timestamp", stamp)
	req.Header.Set("X-Agentd-Signature", job.Sign([]byte(key), stamp, []byte(body)))
	req.Header.Set("X-Agentd-Delivery", delivery)
	resp, err := c.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b)
}

// A job's webhook through agentd serve, on TCP without the gateway's
// token and on the socket: a signed delivery runs the job once with the
// body as its payload, its replay is 409 (after a restart too), and so
// is the captured request sent again under a new delivery id; a bad
// signature, an old timestamp and a job without a webhook 401 (the last
// two alike, body and all), a body over 1 MiB 413; the daemon's log says
// each refusal, and why, without the secret or the body.
func TestJobWebhookThroughTheDaemon(t *testing.T) {
	dir := dataDir(t, map[string]string{
		"agents/assistant.yaml": openaiAgent(fake(t, "match .\nsay got: {{last_user}}\n"), ""),
		"extensions/job/gh.yaml": "type: job\nname: gh\nspec:\n  agent: assistant\n  prompt: \"push to {{payload.ref}}\"\n" +
			"  concurrency: allow\n  triggers: [{webhook: {secret_env: HOOK_SECRET}}]\n",
		"extensions/job/ref.yaml": "type: job\nname: ref\nspec:\n  agent: assistant\n  prompt: \"ref {{payload}}\"\n" +
			"  triggers: [{webhook: {secret: \"${secret:REF_HOOK}\"}}]\n",
		"secrets.env": "REF_HOOK=from-the-secrets-file\n",
	})
	addr := fmt.Sprintf("127.0.0.1:%d", freePort(t))
	d := serveArgs(t, dir, []string{"--listen", addr}, "HOOK_SECRET=s3cret-value")
	for deadline := time.Now().Add(20 * time.Second); ; {
		if c, err := net.Dial("tcp", addr); err == nil {
			c.Close()
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("the gateway does not listen on TCP")
		}
		time.Sleep(20 * time.Millisecond)
	}
	tcp, base := http.DefaultClient, "http://"+addr
	now := time.Now()
	status, body := hookSend(t, tcp, base, "gh", "s3cret-value", `{"ref":"main"}`, "delivery-1", now)
	if status != http.StatusAccepted {
		t.Fatalf("signed delivery: %d %s", status, body)
	}
	var first job.Result
	if err := json.Unmarshal([]byte(body), &first); err != nil || first.Run == "" || first.Session == "" {
		t.Fatalf("signed delivery: %s (%v)", body, err)
	}
	for _, tc := range []struct {
		name, key, body, delivery string
		ts                        time.Time
		status                    int
	}{
		{"replay", "s3cret-value", `{"ref":"main"}`, "delivery-1", now.Add(time.Second), http.StatusConflict},
		{"bad signature", "guess", `{"ref":"main"}`, "delivery-2", now, http.StatusUnauthorized},
		{"old timestamp", "s3cret-value", `{"ref":"main"}`, "delivery-3", now.Add(-10 * time.Minute), http.StatusUnauthorized},
		{"big body", "s3cret-value", `"` + strings.Repeat("x", 1<<20) + `"`, "delivery-4", now, http.StatusRequestEntityTooLarge},
	} {
		status, body := hookSend(t, tcp, base, "gh", tc.key, tc.body, tc.delivery, tc.ts)
		if status != tc.status {
			t.Errorf("%s: %d %s, want %d", tc.name, status, body, tc.status)
		}
	}
	if status, body := hookSend(t, tcp, base, "gh", "s3cret-value", `{}`, "delivery-1", now); status != http.StatusConflict || !strings.Contains(body, first.Run) {
		t.Errorf("replay: %d %s, want 409 naming run %s", status, body, first.Run)
	}
	for _, d := range []string{"delivery-new", ""} {
		if status, body := hookSend(t, tcp, base, "gh", "s3cret-value", `{"ref":"main"}`, d, now); status != http.StatusConflict || !strings.Contains(body, first.Run) {
			t.Errorf("the captured request sent again with delivery id %q: %d %s, want 409 naming run %s", d, status, body, first.Run)
		}
	}
	wrongStatus, wrong := hookSend(t, tcp, base, "gh", "guess", `{}`, "", now)
	if status, body := hookSend(t, tcp, base, "payroll", "guess", `{}`, "", now); status != wrongStatus || body != wrong {
		t.Errorf("no such job: %d %s; a wrong signature for gh: %d %s", status, body, wrongStatus, wrong)
	}
	// A secret referenced as ${secret:NAME}, from secrets.env.
	if status, body := hookSend(t, tcp, base, "ref", "from-the-secrets-file", `"hi"`, "r1", now); status != http.StatusAccepted {
		t.Errorf("a job whose secret is in secrets.env: %d %s", status, body)
	}
	if status, body := hookSend(t, tcp, base, "ref", "s3cret-value", `"hi"`, "r2", now); status != http.StatusUnauthorized {
		t.Errorf("another job's secret: %d %s, want 401", status, body)
	}
	waitRuns(t, dir, "ref", "the ref job's run to end", func(rs []job.Result) bool {
		return len(rs) == 1 && rs[0].Output == `got: ref "hi"`
	})
	runs := waitRuns(t, dir, "gh", "the delivery's run to end", allEnded)
	if len(runs) != 1 || runs[0].Status != store.RunDone || runs[0].Output != "got: push to main" || runs[0].Trigger != "webhook" {
		t.Fatalf("runs %+v, want one done with the payload", runs)
	}
	log := d.out.String()
	if strings.Contains(log, "s3cret-value") || strings.Contains(log, "from-the-secrets-file") || strings.Contains(log, "xxxxxxxx") {
		t.Errorf("the daemon's log tells the secret or a body:\n%s", log)
	}
	for _, r := range []struct{ job, reason string }{{"gh", "delivery taken before"}, {"gh", "signature does not match"},
		{"gh", "timestamp is more than"}, {"gh", "body larger than"}, {"payroll", "is not an active job"}} {
		if !regexp.MustCompile(`msg="job webhook refused" job=` + r.job + ` client=loopback reason="[^"\n]*` + r.reason).MatchString(log) {
			t.Errorf("the daemon's log does not say %q of %s:\n%s", r.reason, r.job, log)
		}
	}

	// After a restart, on the socket: the replay is still refused, a new
	// delivery runs.
	d.kill()
	serveArgs(t, dir, []string{"--listen", "off"}, "HOOK_SECRET=s3cret-value")
	sock := unixHTTP(dir)
	if status, body := hookSend(t, sock, "http://agentd", "gh", "s3cret-value", `{"ref":"main"}`, "delivery-1", time.Now()); status != http.StatusConflict {
		t.Errorf("replay after a restart: %d %s", status, body)
	}
	if status, body := hookSend(t, sock, "http://agentd", "gh", "s3cret-value", `{"ref":"main"}`, "delivery-6", now); status != http.StatusConflict || !strings.Contains(body, first.Run) {
		t.Errorf("the captured request under a new delivery id after a restart: %d %s, want 409 naming run %s", status, body, first.Run)
	}
	if status, body := hookSend(t, sock, "http://agentd", "gh", "s3cret-value", `{"ref":"dev"}`, "delivery-5", time.Now()); status != http.StatusAccepted {
		t.Errorf("a new delivery on the socket: %d %s", status, body)
	}
	runs = waitRuns(t, dir, "gh", "two runs done", func(rs []job.Result) bool { return countStatus(rs, store.RunDone) == 2 })
	if len(runs) != 2 || runs[0].Output != "got: push to dev" {
		t.Fatalf("runs %+v", runs)
	}
}
