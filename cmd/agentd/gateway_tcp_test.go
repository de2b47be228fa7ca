package main

// The API on TCP through the binary: the token, the remote CLI, rotation
// while serving, and the refusals.

import (
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"
)

// serveListen starts agentd serve --listen addr and returns the daemon and
// the base URL it prints once it accepts.
func serveListen(t *testing.T, dir, addr string, env ...string) (*daemon, string) {
	t.Helper()
	return serveListenArgs(t, dir, addr, nil, env...)
}

// serveListenArgs is serveListen with more of the serve command's flags.
func serveListenArgs(t *testing.T, dir, addr string, flags []string, env ...string) (*daemon, string) {
	t.Helper()
	cmd := exec.Command(agentdBin, append([]string{"--data", dir, "serve", "--listen", addr}, flags...)...)
	cmd.Env = append(append(os.Environ(), storeEnv(cmd.Args)...), env...)
	d := &daemon{cmd: cmd, out: &syncBuffer{}, exited: make(chan error, 1)}
	cmd.Stdout, cmd.Stderr = d.out, d.out
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	go func() { d.exited <- cmd.Wait() }()
	t.Cleanup(d.kill)
	re := regexp.MustCompile(`listening on (https?://\S+) \(API and web console; token: `)
	deadline := time.Now().Add(20 * time.Second)
	for {
		if m := re.FindStringSubmatch(d.out.String()); m != nil {
			return d, m[1]
		}
		select {
		case err := <-d.exited:
			d.exited <- err
			t.Fatalf("agentd serve --listen %s exited early: %v\n%s", addr, err, d.out.String())
		default:
		}
		if time.Now().After(deadline) {
			t.Fatalf("agentd serve --listen %s did not say where it listens:\n%s", addr, d.out.String())
		}
		time.Sleep(5 * time.Millisecond)
	}
}

type httpResult struct {
	status int
	header http.Header
	body   string
}

// request is curl: method, URL, headers as "Name: value", body.
func request(t *testing.T, method, url, body string, headers ...string) httpResult {
	t.Helper()
	var rd io.Reader
	if body != "" {
		rd = strings.NewReader(body)
	}
	req, err := http.NewRequestWithContext(t.Context(), method, url, rd)
	if err != nil {
		t.Fatal(err)
	}
	for _, h := range headers {
		k, v, _ := strings.Cut(h, ": ")
		if k == "Host" {
			req.Host = v
			continue
		}
		req.Header.Add(k, v)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatalf("%s %s: %v", method, url, err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return httpResult{resp.StatusCode, resp.Header, string(b)}
}

func TestGatewayTCP(t *testing.T) {
	t.Parallel()
	dir := dataDir(t, map[string]string{"agents/tester.yaml": openaiAgent(fake(t, ""), "")})

	// The token is made on first use, 0600, and printed alone.
	tr := run(t, dir, "token")
	tok := strings.TrimSpace(tr.stdout)
	if tr.code != 0 || len(tok) < 24 || strings.ContainsAny(tok, " \n") {
		t.Fatalf("agentd token: %d %q %s", tr.code, tr.stdout, tr.stderr)
	}
	if fi, err := os.Stat(filepath.Join(dir, "gateway.token")); err != nil || fi.Mode().Perm() != 0o600 {
		t.Fatalf("gateway.token: %v %v", fi, err)
	}
	if again := run(t, dir, "token"); strings.TrimSpace(again.stdout) != tok {
		t.Errorf("a second agentd token printed another token")
	}

	d, base := serveListen(t, dir, "127.0.0.1:0")
	if !strings.HasPrefix(base, "http://127.0.0.1:") || strings.HasSuffix(base, ":0") {
		t.Fatalf("listening on %q", base)
	}
	auth := "Authorization: Bearer " + tok

	// Without the token: health only.
	if r := request(t, "GET", base+"/healthz", ""); r.status != 200 {
		t.Errorf("healthz: %d", r.status)
	}
	for _, p := range []string{"/v1/agents", "/v1/sessions", "/v1/stream", "/metrics", "/mcp", "/v1/agents?token=" + tok} {
		r := request(t, "GET", base+p, "")
		if r.status != 401 || !strings.Contains(r.body, `"code":"unauthorized"`) || r.header.Get("WWW-Authenticate") == "" {
			t.Errorf("GET %s without the token: %d %s", p, r.status, r.body)
		}
	}
	r := request(t, "GET", base+"/v1/agents", "", auth)
	if r.status != 200 || !strings.Contains(r.body, `"tester"`) {
		t.Fatalf("GET /v1/agents with the token: %d %s", r.status, r.body)
	}
	// DNS rebinding: the token does not help a foreign Host.
	if r := request(t, "GET", base+"/v1/agents", "", auth, "Host: localhost.evil.com"); r.status != 403 {
		t.Errorf("foreign Host: %d %s", r.status, r.body)
	}
	// Bodies over the limits: a message's (16 MiB, for images) and every
	// other route's (1 MiB).
	if r := request(t, "POST", base+"/v1/sessions/tester/k/messages", `{"text":"`+strings.Repeat("x", 16<<20)+`"}`, auth); r.status != 413 || !strings.Contains(r.body, "too_large") {
		t.Errorf("large message: %d %s", r.status, r.body)
	}
	if r := request(t, "POST", base+"/v1/approvals/x/deny", `{"reason":"`+strings.Repeat("x", 1<<20)+`"}`, auth); r.status != 413 || !strings.Contains(r.body, "too_large") {
		t.Errorf("large body: %d %s", r.status, r.body)
	}

	// The CLI on another host: a data directory of its own, no socket.
	elsewhere := dataDir(t, nil)
	sr := run(t, elsewhere, "send", "--remote", base, "--token", tok, "tester", "hello", "from", "afar")
	if sr.code != 0 || strings.TrimSpace(sr.stdout) != "hello from afar" {
		t.Fatalf("send --remote: %d %q %s", sr.code, sr.stdout, sr.stderr)
	}
	sr = runEnv(t, elsewhere, []string{"AGENTD_TOKEN=" + tok}, "send", "--remote", base, "tester", "by", "env")
	if sr.code != 0 || strings.TrimSpace(sr.stdout) != "by env" {
		t.Errorf("send --remote with AGENTD_TOKEN: %d %q %s", sr.code, sr.stdout, sr.stderr)
	}
	cr := runInput(t, elsewhere, []string{"AGENTD_TOKEN=" + tok}, "hi over tcp\n/quit\n", "chat", "--remote", base, "tester")
	if cr.code != 0 || !strings.Contains(cr.stdout, "hi over tcp") {
		t.Errorf("chat --remote: %d %q %s", cr.code, cr.stdout, cr.stderr)
	}
	sr = run(t, elsewhere, "send", "--remote", base, "--token", strings.Repeat("wrong", 6), "tester", "hi")
	if sr.code == 0 || !strings.Contains(sr.stderr, "refused the token") || !strings.Contains(sr.stderr, "agentd token") {
		t.Errorf("send --remote with a wrong token: %d %s", sr.code, sr.stderr)
	}
	if sr := runEnv(t, elsewhere, []string{"AGENTD_TOKEN="}, "send", "--remote", base, "tester", "hi"); sr.code != 2 || !strings.Contains(sr.stderr, "AGENTD_TOKEN") {
		t.Errorf("send --remote without a token: %d %s", sr.code, sr.stderr)
	}
	if _, err := os.Stat(filepath.Join(elsewhere, "agentd.db")); err == nil {
		t.Error("send --remote opened the local data directory")
	}

	// The console's login cookie.
	lr := request(t, "POST", base+"/v1/auth/login", `{"token":"`+tok+`"}`)
	cookies := (&http.Response{Header: lr.header}).Cookies()
	if lr.status != 200 || len(cookies) != 1 || !cookies[0].HttpOnly {
		t.Fatalf("login: %d %v", lr.status, lr.header)
	}
	cookie := "Cookie: " + cookies[0].Name + "=" + cookies[0].Value
	if r := request(t, "GET", base+"/v1/agents", "", cookie); r.status != 200 {
		t.Errorf("with the cookie: %d", r.status)
	}

	// Rotate while serving: the old token and the cookie stop working at
	// once, the new token works.
	rr := run(t, dir, "token", "rotate")
	fresh := strings.TrimSpace(rr.stdout)
	if rr.code != 0 || fresh == tok || len(fresh) < 24 {
		t.Fatalf("agentd token rotate: %d %q %s", rr.code, rr.stdout, rr.stderr)
	}
	if r := request(t, "GET", base+"/v1/agents", "", auth); r.status != 401 {
		t.Errorf("old token after rotate: %d", r.status)
	}
	if r := request(t, "GET", base+"/v1/agents", "", cookie); r.status != 401 {
		t.Errorf("old cookie after rotate: %d", r.status)
	}
	if r := request(t, "GET", base+"/v1/agents", "", "Authorization: Bearer "+fresh); r.status != 200 {
		t.Errorf("new token: %d %s", r.status, r.body)
	}
	if sr := run(t, elsewhere, "send", "--remote", base, "--token", fresh, "tester", "rotated"); sr.code != 0 || strings.TrimSpace(sr.stdout) != "rotated" {
		t.Errorf("send --remote with the new token: %d %q %s", sr.code, sr.stdout, sr.stderr)
	}

	d.stop(t)
	out := d.out.String()
	for _, secret := range []string{tok, fresh} {
		if strings.Contains(out, secret) {
			t.Errorf("agentd serve printed a token:\n%s", out)
		}
	}
}

// agentd serve refuses to start where it would not be safe, and says why.
func TestGatewayTCPRefusals(t *testing.T) {
	t.Parallel()
	// A data directory (agentd token refuses a directory without one).
	dir := dataDir(t, map[string]string{"agentd.yaml": "# defaults\n"})
	port := freePort(t)

	// Other machines could reach it, and the token is weak.
	r := runEnv(t, dir, []string{"AGENTD_TOKEN=short"}, "serve", "--listen", fmt.Sprintf("0.0.0.0:%d", port))
	if r.code == 0 || !strings.Contains(r.stderr, "not loopback") || !strings.Contains(r.stderr, "too weak") || !strings.Contains(r.stderr, "AGENTD_TOKEN") {
		t.Errorf("0.0.0.0 with a weak token: %d %s%s", r.code, r.stdout, r.stderr)
	}
	if c, err := net.Dial("tcp", fmt.Sprintf("127.0.0.1:%d", port)); err == nil {
		c.Close()
		t.Error("something listens on the refused port")
	}
	if _, err := os.Stat(filepath.Join(dir, "agentd.sock")); err == nil {
		t.Error("the refused agentd left its socket")
	}
	// A weak token on loopback is refused too.
	r = runEnv(t, dir, []string{"AGENTD_TOKEN=aaaaaaaaaaaaaaaaaaaaaaaaaaaaaa"}, "serve", "--listen", fmt.Sprintf("127.0.0.1:%d", port))
	if r.code == 0 || !strings.Contains(r.stderr, "too weak") {
		t.Errorf("loopback with a uniform token: %d %s", r.code, r.stderr)
	}
	// A token file others can read.
	if tr := run(t, dir, "token"); tr.code != 0 {
		t.Fatal(tr.stderr)
	}
	os.Chmod(filepath.Join(dir, "gateway.token"), 0o644)
	r = run(t, dir, "serve", "--listen", fmt.Sprintf("127.0.0.1:%d", port))
	if r.code == 0 || !strings.Contains(r.stderr, "readable by others") {
		t.Errorf("token file 0644: %d %s", r.code, r.stderr)
	}
	if tr := run(t, dir, "token", "rotate"); tr.code != 0 {
		t.Fatalf("rotate a bad token file: %s", tr.stderr)
	}
	// A bad address is a usage error; an address in use is an error.
	if r := run(t, dir, "serve", "--listen", "localhost"); r.code != 2 {
		t.Errorf("--listen localhost: %d %s", r.code, r.stderr)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	if r := run(t, dir, "serve", "--listen", ln.Addr().String()); r.code == 0 || !strings.Contains(r.stderr, "address in use: "+ln.Addr().String()) {
		t.Errorf("--listen on a taken port: %d %s", r.code, r.stderr)
	}
	// Rotating a token from the environment is refused.
	if r := runEnv(t, dir, []string{"AGENTD_TOKEN=" + strings.Repeat("0123456789abcdef", 2)}, "token", "rotate"); r.code == 0 || !strings.Contains(r.stderr, "AGENTD_TOKEN") {
		t.Errorf("rotate with AGENTD_TOKEN: %d %s", r.code, r.stderr)
	}
}

// gateway.listen: off serves the unix socket only.
func TestGatewayTCPOff(t *testing.T) {
	t.Parallel()
	dir := dataDir(t, map[string]string{"agentd.yaml": "gateway:\n  listen: off\n"})
	d := serve(t, dir)
	if r := run(t, dir, "agents"); r.code != 0 {
		t.Errorf("agents over the socket: %d %s", r.code, r.stderr)
	}
	d.stop(t)
	if out := d.out.String(); strings.Contains(out, "listening on http") {
		t.Errorf("serve with gateway.listen off listened on TCP:\n%s", out)
	}
	if _, err := os.Stat(filepath.Join(dir, "gateway.token")); err == nil {
		t.Error("a token was made though TCP is off")
	}
}

// Off loopback a token needs an estimated 128 bits: a long, varied but
// sequential AGENTD_TOKEN or token file is refused there, with the rule and
// how to make a good one; on loopback it still serves, and a generated
// token serves everywhere.
func TestGatewayTCPWeakTokenOffLoopback(t *testing.T) {
	t.Parallel()
	dir := dataDir(t, nil)
	weak := "abcdefghijklmnopqrstuvwx"
	wild := fmt.Sprintf("0.0.0.0:%d", freePort(t))
	refused := func(how string, r result) {
		t.Helper()
		if r.code == 0 || !strings.Contains(r.stderr, "not loopback") || !strings.Contains(r.stderr, "needs 128") ||
			!strings.Contains(r.stderr, "agentd token rotate") || !strings.Contains(r.stderr, "openssl rand -base64 32") {
			t.Errorf("%s on %s: %d %s", how, wild, r.code, r.stderr)
		}
	}
	refused("AGENTD_TOKEN="+weak, runEnv(t, dir, []string{"AGENTD_TOKEN=" + weak}, "serve", "--listen", wild))
	d, _ := serveListen(t, dir, "127.0.0.1:0", "AGENTD_TOKEN="+weak)
	d.stop(t)

	if err := os.WriteFile(filepath.Join(dir, "gateway.token"), []byte(weak+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	refused("a token file holding "+weak, run(t, dir, "serve", "--listen", wild))
	okRun(t, dir, "token", "rotate")
	d, _ = serveListen(t, dir, "0.0.0.0:0")
	d.stop(t)
}
