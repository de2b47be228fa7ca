package main

// The web console end to end: agentd serves it on TCP against the scripted
// model, and test/console/console.spec.mjs drives it in headless Chromium
// (Debian's chromium package, driven by playwright-core from test/npm):
// log in with the token, chat with streamed replies and tool cards, grant
// and deny approvals inline, reload, survive a restart of agentd, visit
// every screen, on a desktop and a phone. With AGENTD_SCREENSHOTS=1 it
// writes screenshots of the main screens to docs/screenshots (another
// value names another folder); without it, it writes nothing in the tree,
// and a failing step's screenshot goes to a temporary folder it names.
// Without Chromium, node or playwright-core the test is skipped, unless
// AGENTD_INTEROP=1, which makes that a failure.

import (
	"bufio"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"
)

// consoleScript is the model: a tool call to a built-in tool with a reply
// in markdown, a tool the agent's policy asks a person about, a refusal
// of its API key, and the title agentd asks for after a chat's first
// reply.
const consoleScript = `
match ^Conversation to name
say Arithmetic with the calculator

match (?i)^flaky
fail 401

match (?i)calculat|sum
say Let me work that out with the calculator.
call calculator {"expression": "(17 + 25) * 3"}
chunks 6
---
say The result is **{{tool_result}}**.
say
say Here is how I got there:
say
say 1. Added ` + "`17 + 25`" + ` to get 42
say 2. Multiplied by 3
say
say | step | value |
say |------|------:|
say | sum | 42 |
say | × 3 | {{tool_result}} |
say
say ` + "```python" + `
say print((17 + 25) * 3)
say ` + "```" + `
chunks 12

match (?i)time
call clock {"timezone": "UTC"}
---
say The clock says: ` + "`{{tool_result}}`" + `
chunks 5

match *
say You said: *{{last_user}}*. Ask me to **calculate** something, or for the **time**.
chunks 8
`

// consoleDeps finds Chromium, node and playwright-core, or skips.
func consoleDeps(t *testing.T) (chromium, node string) {
	t.Helper()
	missing := func(what string) {
		if os.Getenv("AGENTD_INTEROP") == "1" {
			t.Fatalf("the console test needs %s (apt-get install -y chromium; npm ci --prefix test/npm)", what)
		}
		t.Skipf("skipping: %s (apt-get install -y chromium; npm ci --prefix test/npm)", what)
	}
	chromium = os.Getenv("CHROMIUM")
	if chromium == "" {
		chromium = "/usr/bin/chromium"
	}
	if _, err := os.Stat(chromium); err != nil {
		missing("Chromium at " + chromium)
	}
	node, err := exec.LookPath("node")
	if err != nil {
		missing("node")
	}
	if _, err := os.Stat(filepath.Join("..", "..", "test", "npm", "node_modules", "playwright-core", "package.json")); err != nil {
		missing("playwright-core")
	}
	return chromium, node
}

// tcpDaemon is `agentd serve --listen` on a fixed address, restartable.
type tcpDaemon struct {
	t    *testing.T
	dir  string
	addr string
	cmd  *exec.Cmd
	out  *syncBuffer
	done chan error
}

func (d *tcpDaemon) start() {
	t := d.t
	t.Helper()
	d.cmd = exec.Command(agentdBin, "--data", d.dir, "serve", "--listen", d.addr)
	d.cmd.Env = append(os.Environ(), storeEnv(d.cmd.Args)...)
	d.cmd.Stdout, d.cmd.Stderr = d.out, d.out
	if err := d.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	d.done = make(chan error, 1)
	go func(c *exec.Cmd, done chan error) { done <- c.Wait() }(d.cmd, d.done)
	deadline := time.Now().Add(30 * time.Second)
	for {
		res, err := http.Get("http://" + d.addr + "/healthz")
		if err == nil {
			res.Body.Close()
			if res.StatusCode == 200 {
				return
			}
		}
		select {
		case err := <-d.done:
			d.done <- err
			t.Fatalf("agentd serve --listen exited early: %v\n%s", err, d.out.String())
		default:
		}
		if time.Now().After(deadline) {
			t.Fatalf("agentd serve --listen %s did not answer:\n%s", d.addr, d.out.String())
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// stop stops it gracefully.
func (d *tcpDaemon) stop() {
	d.cmd.Process.Signal(os.Interrupt)
	select {
	case err := <-d.done:
		d.done <- err
	case <-time.After(30 * time.Second):
		d.cmd.Process.Kill()
		d.t.Fatalf("agentd serve did not stop:\n%s", d.out.String())
	}
}

func (d *tcpDaemon) kill() {
	if d.cmd == nil || d.cmd.Process == nil {
		return
	}
	d.cmd.Process.Kill()
	err := <-d.done
	d.done <- err
}

func TestConsole(t *testing.T) {
	chromium, node := consoleDeps(t)
	if r := run(t, dataDir(t, nil), "serve", "--help"); !strings.Contains(r.stdout+r.stderr, "--listen") {
		if os.Getenv("AGENTD_INTEROP") == "1" {
			t.Fatal("agentd serve has no --listen: the console cannot be served")
		}
		t.Skip("skipping: agentd serve has no --listen yet")
	}
	addr := fake(t, consoleScript)
	dir := dataDir(t, nil)
	files := map[string]string{
		"agentd.yaml": "prices:\n  fake:\n    input: 3\n    output: 15\n",
		"agents/assistant.yaml": "name: Assistant\ndescription: A helpful assistant on the scripted model.\n" +
			strings.TrimPrefix(openaiAgent(addr, "tools:\n  ask: [\"clock\"]\nbudgets:\n  max_steps: 10\n  max_usd_per_day: 5\n"), "name: Tester\n"),
		"agents/researcher.yaml": strings.Replace(demoAgent(addr, dir, ""), "name: Tester", "name: Researcher\ndescription: Uses the demo MCP server.", 1),
		// A file with a mistake: the console lists it with its problem.
		"agents/draft.yaml": "name: Draft\nmodel:\n  provider: echo\nbudgets:\n  max_steps: many\n",
		// The built-in echo model: the console says how to configure a real one.
		"agents/offline.yaml": "name: Offline\nmodel:\n  provider: echo\n",
	}
	d, token := serveConsole(t, dir, files)
	runSpec(t, d, token, chromium, node, "console.spec.mjs")
}

// serveConsole writes files into the data directory dir and starts
// `agentd serve --listen` on it; it returns the daemon and the gateway's
// token, or skips when this agentd cannot serve the console (fails under
// AGENTD_INTEROP=1).
func serveConsole(t *testing.T, dir string, files map[string]string) (*tcpDaemon, string) {
	t.Helper()
	for name, content := range files {
		p := filepath.Join(dir, name)
		if err := os.MkdirAll(filepath.Dir(p), 0o700); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(content), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	tok := run(t, dir, "token")
	if tok.code != 0 {
		if os.Getenv("AGENTD_INTEROP") == "1" {
			t.Fatalf("agentd token: exit %d: %s", tok.code, tok.stderr)
		}
		t.Skipf("skipping: agentd token: %s", tok.stderr)
	}
	fields := strings.Fields(tok.stdout)
	if len(fields) == 0 {
		t.Fatalf("agentd token printed nothing")
	}
	token := fields[len(fields)-1]

	d := &tcpDaemon{t: t, dir: dir, addr: fmt.Sprintf("127.0.0.1:%d", freePort(t)), out: &syncBuffer{}}
	d.start()
	t.Cleanup(d.kill)
	res, err := http.Get("http://" + d.addr + "/")
	if err != nil {
		t.Fatal(err)
	}
	res.Body.Close()
	if res.StatusCode != 200 || !strings.HasPrefix(res.Header.Get("Content-Type"), "text/html") {
		if os.Getenv("AGENTD_INTEROP") == "1" {
			t.Fatalf("agentd does not serve the console at /: status %d", res.StatusCode)
		}
		t.Skip("skipping: this agentd does not serve the console at / yet")
	}
	return d, token
}

// runSpec runs a spec of test/console against the daemon d in Chromium,
// restarting d when the spec asks, and fails t unless every step passed.
func runSpec(t *testing.T, d *tcpDaemon, token, chromium, node, name string) {
	t.Helper()
	shots, failures := screenshotDirs(t)
	docShots := filepath.Join("..", "..", "docs", "screenshots")
	tracked := dirDigest(t, docShots)
	spec, _ := filepath.Abs(filepath.Join("..", "..", "test", "console", name))

	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, node, spec)
	cmd.Env = append(os.Environ(), "URL=http://"+d.addr, "TOKEN="+token, "SCREENSHOT_DIR="+shots, "FAILURE_DIR="+failures, "CHROMIUM="+chromium)
	stdin, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	var stderr syncBuffer
	cmd.Stderr = &stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	var wg sync.WaitGroup
	var mu sync.Mutex
	var summary string
	wg.Go(func() {
		sc := bufio.NewScanner(stdout)
		for sc.Scan() {
			line := sc.Text()
			if line == "@@restart" {
				d.stop()
				d.start()
				io.WriteString(stdin, "restarted\n")
				continue
			}
			t.Log(line)
			if strings.HasSuffix(line, " failed") && strings.Contains(line, " passed, ") {
				mu.Lock()
				summary = line
				mu.Unlock()
			}
		}
	})
	wg.Wait()
	err = cmd.Wait()
	stdin.Close()
	mu.Lock()
	defer mu.Unlock()
	if shots == "" && dirDigest(t, docShots) != tracked {
		t.Errorf("the test changed %s without AGENTD_SCREENSHOTS=1", docShots)
	}
	if err != nil || !strings.HasSuffix(summary, " 0 failed") {
		t.Fatalf("the console test failed (%v); the failing step's screenshot is in %s\nnode stderr:\n%s\nagentd:\n%s", err, failures, stderr.String(), tail(d.out.String(), 4000))
	}
}

// screenshotDirs says where the console test writes its screenshots: ""
// (none) unless AGENTD_SCREENSHOTS asks for them, docs/screenshots for
// AGENTD_SCREENSHOTS=1, else the folder it names; and where a failing
// step's screenshot goes: that folder, or one under the system's temporary
// directory, made only when a step fails, that outlives the test.
func screenshotDirs(t *testing.T) (shots, failures string) {
	t.Helper()
	switch v := os.Getenv("AGENTD_SCREENSHOTS"); v {
	case "":
	case "1":
		shots = filepath.Join("..", "..", "docs", "screenshots")
	default:
		shots = v
	}
	if shots != "" {
		abs, err := filepath.Abs(shots)
		if err != nil {
			t.Fatal(err)
		}
		return abs, abs
	}
	return "", filepath.Join(os.TempDir(), "agentd-console-failures")
}

// dirDigest is a digest of the names and contents of the files in dir.
func dirDigest(t *testing.T, dir string) string {
	t.Helper()
	entries, err := os.ReadDir(dir)
	if err != nil && !os.IsNotExist(err) {
		t.Fatal(err)
	}
	h := sha256.New()
	for _, e := range entries {
		b, err := os.ReadFile(filepath.Join(dir, e.Name()))
		if err != nil {
			t.Fatal(err)
		}
		fmt.Fprintf(h, "%s %d\n", e.Name(), len(b))
		h.Write(b)
	}
	return hex.EncodeToString(h.Sum(nil))
}

func tail(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return "…" + s[len(s)-n:]
}
