package main

// Shutdown through agentd serve: clients waiting for a turn get its reply
// when it ends within the grace period, and otherwise a 503 they may send
// again; nothing queued starts during the grace period, and nothing is
// lost across the restart.

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"agentd/internal/event"
	"agentd/internal/model/fakellm"
)

// gatedModel is fakellm behind a gate: a request whose body holds "gated"
// waits until the gate opens (or its client gives up).
type gatedModel struct {
	addr    string
	arrived chan struct{} // one value per gated request that reached the gate
	release chan struct{}
	once    sync.Once
}

func gatedFake(t *testing.T, script string) *gatedModel {
	t.Helper()
	s, err := fakellm.ParseScript("gated.fake", []byte(script))
	if err != nil {
		t.Fatal(err)
	}
	g := &gatedModel{arrived: make(chan struct{}, 64), release: make(chan struct{})}
	fl := fakellm.New(s, nil)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	hs := &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		if bytes.Contains(body, []byte("gated")) {
			g.arrived <- struct{}{}
			select {
			case <-g.release:
			case <-r.Context().Done():
				return
			}
		}
		r.Body = io.NopCloser(bytes.NewReader(body))
		fl.ServeHTTP(w, r)
	})}
	go hs.Serve(ln)
	t.Cleanup(func() { g.open(); hs.Close() })
	g.addr = ln.Addr().String()
	return g
}

func (g *gatedModel) open() { g.once.Do(func() { close(g.release) }) }

// waitArrivals waits until n gated requests have reached the gate.
func (g *gatedModel) waitArrivals(t *testing.T, n int) {
	t.Helper()
	for range n {
		select {
		case <-g.arrived:
		case <-time.After(30 * time.Second):
			t.Fatal("the model calls never reached the gate")
		}
	}
}

type answer struct {
	status int
	header http.Header
	body   string
}

// call is one request to the daemon's socket.
func call(t *testing.T, hc *http.Client, method, path, body string) answer {
	var rd io.Reader
	if body != "" {
		rd = strings.NewReader(body)
	}
	req, err := http.NewRequest(method, "http://agentd"+path, rd)
	if err != nil {
		t.Error(err)
		return answer{}
	}
	resp, err := hc.Do(req)
	if err != nil {
		t.Errorf("%s %s: %v", method, path, err)
		return answer{}
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return answer{resp.StatusCode, resp.Header, string(b)}
}

// callLater makes a call in the background.
func callLater(t *testing.T, hc *http.Client, method, path, body string) <-chan answer {
	ch := make(chan answer, 1)
	go func() { ch <- call(t, hc, method, path, body) }()
	return ch
}

func wait[T any](t *testing.T, what string, ch <-chan T) T {
	t.Helper()
	select {
	case v := <-ch:
		return v
	case <-time.After(60 * time.Second):
		t.Fatalf("timed out waiting for %s", what)
	}
	var zero T
	return zero
}

// turnOf reads the turn id of a 202 receipt.
func turnOf(t *testing.T, a answer) int64 {
	t.Helper()
	var rc struct {
		Turn int64 `json:"turn"`
	}
	if a.status != 202 || json.Unmarshal([]byte(a.body), &rc) != nil || rc.Turn == 0 {
		t.Fatalf("receipt: %d %s", a.status, a.body)
	}
	return rc.Turn
}

// checkShuttingDown checks a retryable 503 shutting_down.
func checkShuttingDown(t *testing.T, what string, a answer) {
	t.Helper()
	if a.status != 503 || !strings.Contains(a.body, `"code":"shutting_down"`) || a.header.Get("Retry-After") == "" {
		t.Errorf("%s: %d %s (Retry-After %q), want a 503 shutting_down with Retry-After", what, a.status, a.body, a.header.Get("Retry-After"))
	}
}

// waitShuttingDown waits until /readyz says agentd is shutting down.
func waitShuttingDown(t *testing.T, hc *http.Client) {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for {
		a := call(t, hc, "GET", "/readyz", "")
		if a.status == 503 && strings.Contains(a.body, "shutting down") {
			return
		}
		if a.status == 0 {
			t.Fatal("the API stopped answering at the signal")
		}
		if time.Now().After(deadline) {
			t.Fatalf("readyz never said shutting down: %d %s", a.status, a.body)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// waitExit waits for the daemon to exit and checks it exited cleanly.
func (d *daemon) waitExit(t *testing.T) {
	t.Helper()
	select {
	case err := <-d.exited:
		d.exited <- err
		if err != nil {
			t.Fatalf("agentd serve exited with %v:\n%s", err, d.out.String())
		}
	case <-time.After(60 * time.Second):
		t.Fatalf("agentd serve did not stop:\n%s", d.out.String())
	}
}

// turnEnds counts the turn_end events of each turn in a session's log.
func turnEnds(t *testing.T, dir, addr string) map[int64]int {
	t.Helper()
	r := run(t, dir, "log", addr, "--json")
	evs, _ := jsonEvents(t, r.stdout)
	out := map[int64]int{}
	for _, e := range evs {
		if e.Kind == event.TurnEnd {
			out[e.Turn]++
		}
	}
	return out
}

const gatedScript = "match gated\nsay done: {{last_user}}\n\nmatch *\nsay {{last_user}}\n"

// At SIGTERM, clients waiting for a turn (?wait=true, GET /v1/turns/{id}
// with wait, ?stream=true) get the reply when the turn ends within the
// grace period; a queued input does not start then, and its waiter gets a
// 503 shutting_down with Retry-After; new input is refused the same way.
// The queued input runs at the next start; every turn ends once.
func TestShutdownAnswersWaitingClients(t *testing.T) {
	t.Parallel()
	g := gatedFake(t, gatedScript)
	dir := dataDir(t, map[string]string{"agents/a.yaml": openaiAgent(g.addr, "")})
	d := serveArgs(t, dir, []string{"--listen", "off", "--grace", "60s"})
	hc := unixHTTP(dir)

	waited := callLater(t, hc, "POST", "/v1/sessions/a/s1/messages?wait=true", `{"text":"gated a"}`)
	tb := turnOf(t, call(t, hc, "POST", "/v1/sessions/a/s2/messages", `{"text":"gated b"}`))
	polled := callLater(t, hc, "GET", "/v1/turns/"+itoa(tb)+"?wait=60s", "")
	streamed := callLater(t, hc, "POST", "/v1/sessions/a/s3/messages?stream=true", `{"text":"gated c"}`)
	g.waitArrivals(t, 3)
	td := turnOf(t, call(t, hc, "POST", "/v1/sessions/a/s1/messages", `{"text":"queued d"}`))
	queued := callLater(t, hc, "GET", "/v1/turns/"+itoa(td)+"?wait=60s", "")

	d.cmd.Process.Signal(syscall.SIGTERM)
	waitShuttingDown(t, hc)
	checkShuttingDown(t, "a new message", call(t, hc, "POST", "/v1/sessions/a/s4/messages", `{"text":"new"}`))
	checkShuttingDown(t, "a new message with wait", call(t, hc, "POST", "/v1/sessions/a/s4/messages?wait=true", `{"text":"new"}`))
	g.open()

	if a := wait(t, "the waiting message", waited); a.status != 200 || !strings.Contains(a.body, `"reply":"done: gated a"`) {
		t.Errorf("?wait=true: %d %s", a.status, a.body)
	}
	if a := wait(t, "the turn poll", polled); a.status != 200 || !strings.Contains(a.body, `"done":true`) || !strings.Contains(a.body, "done: gated b") {
		t.Errorf("GET /v1/turns/%d?wait: %d %s", tb, a.status, a.body)
	}
	if a := wait(t, "the stream", streamed); a.status != 200 || !strings.Contains(lastLine(a.body), `"reply":"done: gated c"`) {
		t.Errorf("?stream=true: %d %s", a.status, a.body)
	}
	checkShuttingDown(t, "the queued input's waiter", wait(t, "the queued turn's poll", queued))
	if t.Failed() {
		t.Log(d.out.String())
	}
	d.waitExit(t)

	// The queued input runs at the next start, once.
	serve(t, dir)
	if a := call(t, hc, "GET", "/v1/turns/"+itoa(td)+"?wait=60s", ""); a.status != 200 || !strings.Contains(a.body, `"reply":"queued d"`) {
		t.Errorf("the queued turn after the restart: %d %s", a.status, a.body)
	}
	for _, s := range []string{"a/s1", "a/s2", "a/s3"} {
		for turn, n := range turnEnds(t, dir, s) {
			if n != 1 {
				t.Errorf("%s turn %d ended %d times", s, turn, n)
			}
		}
	}
	if ends := turnEnds(t, dir, "a/s1"); len(ends) != 2 {
		t.Errorf("a/s1 turn ends %v, want two turns", ends)
	}
	if r := run(t, dir, "sessions"); strings.Contains(r.stdout, "a/s4") {
		t.Errorf("a refused message made a session:\n%s", r.stdout)
	}
}

// A turn that does not end within the grace period is cancelled, to go on
// at the next start: its waiting clients get a 503 shutting_down with
// Retry-After (a stream that has started ends with that error), and after
// the restart the turn ends once.
func TestShutdownGraceExpires(t *testing.T) {
	t.Parallel()
	g := gatedFake(t, gatedScript)
	dir := dataDir(t, map[string]string{"agents/a.yaml": openaiAgent(g.addr, "")})
	d := serveArgs(t, dir, []string{"--listen", "off", "--grace", "500ms"})
	hc := unixHTTP(dir)

	waited := callLater(t, hc, "POST", "/v1/sessions/a/s1/messages?wait=true", `{"text":"gated a"}`)
	streamed := callLater(t, hc, "POST", "/v1/sessions/a/s2/messages?stream=true", `{"text":"gated b"}`)
	g.waitArrivals(t, 2)
	d.cmd.Process.Signal(syscall.SIGTERM)
	checkShuttingDown(t, "?wait=true past the grace period", wait(t, "the waiting message", waited))
	if a := wait(t, "the stream", streamed); a.status != 200 || !strings.Contains(lastLine(a.body), `"code":"shutting_down"`) {
		t.Errorf("?stream=true past the grace period: %d %s", a.status, a.body)
	}
	d.waitExit(t)

	g.open()
	serve(t, dir)
	for _, s := range []string{"a/s1", "a/s2"} {
		r := run(t, dir, "log", s)
		deadline := time.Now().Add(30 * time.Second)
		for !strings.Contains(r.stdout, "turn_end") && time.Now().Before(deadline) {
			time.Sleep(20 * time.Millisecond)
			r = run(t, dir, "log", s)
		}
		ends := turnEnds(t, dir, s)
		if len(ends) != 1 {
			t.Fatalf("%s: turn ends %v after the restart, want one turn ended once:\n%s", s, ends, r.stdout)
		}
		for turn, n := range ends {
			if n != 1 {
				t.Errorf("%s turn %d ended %d times", s, turn, n)
			}
		}
		mustContain(t, r.stdout, "done: gated")
	}
}

func lastLine(s string) string {
	var last string
	sc := bufio.NewScanner(strings.NewReader(s))
	sc.Buffer(nil, 1<<20)
	for sc.Scan() {
		if l := strings.TrimSpace(sc.Text()); l != "" {
			last = l
		}
	}
	return last
}

func itoa(n int64) string { return strconv.FormatInt(n, 10) }

// The official openai npm client, whose turn does not end within the grace
// period: the 503 it gets carries Retry-After and no x-should-retry: false,
// so it sends the request again by itself; agentd is back by then, and the
// retry (same Idempotency-Key) gets the first request's turn's answer, that
// turn having gone on after the restart.
func TestShutdownOpenAIClientRetries(t *testing.T) {
	t.Parallel()
	node, modules := npmDeps(t)
	if _, err := os.Stat(filepath.Join(modules, "openai", "package.json")); err != nil {
		if os.Getenv("AGENTD_INTEROP") == "1" {
			t.Fatalf("the openai npm package is missing: %v", err)
		}
		t.Skip("skipping: the openai npm package is not installed")
	}
	g := gatedFake(t, gatedScript)
	dir := dataDir(t, map[string]string{"agents/a.yaml": openaiAgent(g.addr, "")})
	listen := fmt.Sprintf("127.0.0.1:%d", freePort(t))
	d, base := serveListenArgs(t, dir, listen, []string{"--grace", "500ms"})
	tok := strings.TrimSpace(run(t, dir, "token").stdout)

	script := t.TempDir()
	src, err := os.ReadFile(filepath.Join("testdata", "shutdown_client.mjs"))
	if err != nil {
		t.Fatal(err)
	}
	os.WriteFile(filepath.Join(script, "client.mjs"), src, 0o600)
	if err := os.Symlink(modules, filepath.Join(script, "node_modules")); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(node, filepath.Join(script, "client.mjs"), base+"/v1", tok, "a", "gated from node", "node-shutdown-1")
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	exited := make(chan error, 1)
	go func() { exited <- cmd.Wait() }()
	t.Cleanup(func() { cmd.Process.Kill() })

	g.waitArrivals(t, 1)
	d.cmd.Process.Signal(syscall.SIGTERM)
	d.waitExit(t)
	g.open()
	serveListenArgs(t, dir, listen, nil)
	if err := wait(t, "the node client", exited); err != nil {
		t.Fatalf("node: %v\n%s", err, stderr.String())
	}
	var out struct {
		Content  string `json:"content"`
		Failed   bool   `json:"failed"`
		Attempts []struct {
			Status      int    `json:"status"`
			RetryAfter  string `json:"retryAfter"`
			ShouldRetry string `json:"shouldRetry"`
			Error       string `json:"error"`
		} `json:"attempts"`
	}
	if err := json.Unmarshal(stdout.Bytes(), &out); err != nil {
		t.Fatalf("node printed %q: %v\n%s", stdout.String(), err, stderr.String())
	}
	t.Logf("attempts: %+v", out.Attempts)
	if out.Failed || out.Content != "done: gated from node" {
		t.Fatalf("the client's answer: %s", stdout.String())
	}
	first := out.Attempts[0]
	if first.Status != 503 || first.RetryAfter == "" || first.ShouldRetry == "false" {
		t.Errorf("the first attempt: %+v, want a 503 with Retry-After and no x-should-retry: false", first)
	}
	if last := out.Attempts[len(out.Attempts)-1]; last.Status != 200 {
		t.Errorf("the last attempt: %+v", last)
	}
	r := run(t, dir, "sessions", "--json")
	var sessions []struct {
		Address string `json:"address"`
	}
	json.Unmarshal([]byte(r.stdout), &sessions)
	if len(sessions) != 1 {
		t.Fatalf("sessions %s, want the one the first attempt made", r.stdout)
	}
	ends := turnEnds(t, dir, sessions[0].Address)
	if len(ends) != 1 {
		t.Errorf("turns ended %v, want one turn ended once", ends)
	}
}

// agentd send whose turn does not end within the grace period says that
// agentd is shutting down and that the turn goes on at the next start,
// and exits 5 (unavailable: send again later), not 1 with an internal
// error; so does a send refused while agentd stops.
func TestShutdownSendSaysSo(t *testing.T) {
	t.Parallel()
	g := gatedFake(t, gatedScript)
	dir := dataDir(t, map[string]string{"agents/a.yaml": openaiAgent(g.addr, "")})
	d := serveArgs(t, dir, []string{"--listen", "off", "--grace", "500ms"})
	sent := make(chan result, 1)
	go func() { sent <- run(t, dir, "send", "a", "--session", "s", "gated a") }()
	g.waitArrivals(t, 1)
	d.cmd.Process.Signal(syscall.SIGTERM)
	r := wait(t, "agentd send", sent)
	if r.code != 5 || !strings.Contains(r.stderr, "agentd is shutting down") || !strings.Contains(r.stderr, "goes on when agentd starts again") || strings.Contains(r.stderr, "internal error") {
		t.Errorf("agentd send cut off by a shutdown: %+v, want exit 5 saying agentd is shutting down", r)
	}
	d.waitExit(t)
}
