package main

// Interoperability with MCP software agentd did not write: the reference
// servers from npm (@modelcontextprotocol/server-everything and
// server-memory) driven by an agent over stdio and streamable HTTP,
// including crashes, and agentd's own MCP server driven by the Go SDK
// client over the daemon's socket and by the TypeScript SDK client over
// stdio. .ci/run installs the npm packages and sets AGENTD_INTEROP=1, which
// turns a missing dependency from a skip into a failure.

import (
	"context"
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// npmDeps returns node and the test/npm/node_modules folder.
func npmDeps(t *testing.T) (node, modules string) {
	t.Helper()
	missing := func(what string) {
		if os.Getenv("AGENTD_INTEROP") == "1" {
			t.Fatalf("interop test needs %s (run .ci/run, or npm ci --prefix test/npm)", what)
		}
		t.Skipf("skipping: %s (set up with npm ci --prefix test/npm)", what)
	}
	node, err := exec.LookPath("node")
	if err != nil {
		missing("node")
	}
	modules, _ = filepath.Abs(filepath.Join("..", "..", "test", "npm", "node_modules"))
	for _, p := range []string{"@modelcontextprotocol/server-everything", "@modelcontextprotocol/server-memory", "@modelcontextprotocol/sdk"} {
		if _, err := os.Stat(filepath.Join(modules, p, "package.json")); err != nil {
			missing(p)
		}
	}
	return node, modules
}

func freePort(t *testing.T) int {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	return ln.Addr().(*net.TCPAddr).Port
}

// startHTTPEverything runs server-everything over streamable HTTP on port.
func startHTTPEverything(t *testing.T, node, modules string, port int) *exec.Cmd {
	t.Helper()
	cmd := exec.Command(node, filepath.Join(modules, "@modelcontextprotocol/server-everything/dist/index.js"), "streamableHttp")
	cmd.Env = append(os.Environ(), fmt.Sprintf("PORT=%d", port))
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL); cmd.Wait() })
	deadline := time.Now().Add(20 * time.Second)
	for {
		if c, err := net.Dial("tcp", fmt.Sprintf("127.0.0.1:%d", port)); err == nil {
			c.Close()
			return cmd
		}
		if time.Now().After(deadline) {
			t.Fatal("server-everything (streamable HTTP) did not start")
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// unixHTTP is an HTTP client of the daemon's socket.
func unixHTTP(dir string) *http.Client {
	sock := filepath.Join(dir, "agentd.sock")
	return &http.Client{Transport: &http.Transport{DialContext: func(ctx context.Context, _, _ string) (net.Conn, error) {
		var d net.Dialer
		return d.DialContext(ctx, "unix", sock)
	}}}
}

type serverState struct {
	Name     string `json:"name"`
	State    string `json:"state"`
	Tools    int    `json:"tools"`
	Restarts int    `json:"restarts"`
	PID      int    `json:"pid"`
}

// servers reads GET /v1/mcp/servers from the daemon.
func servers(t *testing.T, dir string) map[string]serverState {
	t.Helper()
	resp, err := unixHTTP(dir).Get("http://agentd/v1/mcp/servers")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var list []serverState
	if err := json.NewDecoder(resp.Body).Decode(&list); err != nil {
		t.Fatal(err)
	}
	out := map[string]serverState{}
	for _, s := range list {
		out[s.Name] = s
	}
	return out
}

// waitServers polls until ok holds for the servers' states.
func waitServers(t *testing.T, dir string, what string, ok func(map[string]serverState) bool) map[string]serverState {
	t.Helper()
	deadline := time.Now().Add(60 * time.Second)
	for {
		s := servers(t, dir)
		if ok(s) {
			return s
		}
		if time.Now().After(deadline) {
			t.Fatalf("servers never %s: %+v", what, s)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

func TestMCPInterop(t *testing.T) {
	node, modules := npmDeps(t)
	port := freePort(t)
	httpSrv := startHTTPEverything(t, node, modules, port)

	addr := fake(t, `
match echo please
call everything__echo {"message": "interop works"}
---
say echo said: {{tool_result}}

match remember
call memory__create_entities {"entities":[{"name":"Ada","entityType":"person","observations":["likes green tea"]}]}
---
call memory__search_nodes {"query":"Ada"}
---
say found: {{tool_result}}

match sum over http
call web__get-sum {"a": 2, "b": 40}
---
say sum: {{tool_result}}
`)
	mem := filepath.Join(t.TempDir(), "memory.jsonl")
	everything := filepath.Join(modules, "@modelcontextprotocol/server-everything/dist/index.js")
	memory := filepath.Join(modules, "@modelcontextprotocol/server-memory/dist/index.js")
	cfg := fmt.Sprintf(`mcp_servers:
  everything:
    command: %q
    args: [%q, stdio]
  memory:
    command: %q
    args: [%q]
    env: {MEMORY_FILE_PATH: %q}
  web:
    url: http://127.0.0.1:%d/mcp
    allow_networks: ["127.0.0.1/32"]
`, node, everything, node, memory, mem, port)
	dir := dataDir(t, map[string]string{"agentd.yaml": cfg, "agents/a.yaml": openaiAgent(addr, "")})
	d := serve(t, dir)
	all := func(s map[string]serverState) bool {
		return s["everything"].State == "connected" && s["memory"].State == "connected" && s["web"].State == "connected"
	}
	st := waitServers(t, dir, "connected", all)
	if st["everything"].Tools < 5 || st["memory"].Tools < 5 || st["web"].Tools < 5 {
		t.Fatalf("tools %+v", st)
	}

	send := func(msg, want string) {
		t.Helper()
		r := run(t, dir, "send", "a", msg)
		if r.code != 0 {
			t.Fatalf("send %q: exit %d\n%s%s\ndaemon:\n%s", msg, r.code, r.stdout, r.stderr, d.out.String())
		}
		mustContain(t, r.stdout, want)
	}
	send("echo please", "interop works")
	send("remember Ada", "likes green tea")
	send("sum over http", "42")

	// A stdio server that dies is restarted, and its tools work again.
	pid := st["everything"].PID
	if pid == 0 {
		t.Fatal("no pid for the stdio server")
	}
	syscall.Kill(pid, syscall.SIGKILL)
	waitServers(t, dir, "reconnected after the crash", func(s map[string]serverState) bool {
		return s["everything"].State == "connected" && s["everything"].Restarts >= 1 && s["everything"].PID != pid
	})
	send("echo please", "interop works")

	// An HTTP server that goes away and comes back.
	syscall.Kill(-httpSrv.Process.Pid, syscall.SIGKILL)
	httpSrv.Wait()
	waitServers(t, dir, "down", func(s map[string]serverState) bool { return s["web"].State != "connected" })
	startHTTPEverything(t, node, modules, port)
	waitServers(t, dir, "reconnected over HTTP", func(s map[string]serverState) bool {
		return s["web"].State == "connected" && s["web"].Restarts >= 1
	})
	send("sum over http", "42")

	// agentd as an MCP server, over the daemon's socket, with the Go SDK client.
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	client := mcp.NewClient(&mcp.Implementation{Name: "e2e", Version: "1"}, nil)
	cs, err := client.Connect(ctx, &mcp.StreamableClientTransport{Endpoint: "http://agentd/mcp", HTTPClient: unixHTTP(dir)}, nil)
	if err != nil {
		t.Fatalf("connect to /mcp: %v", err)
	}
	defer cs.Close()
	tools, err := cs.ListTools(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, tl := range tools.Tools {
		names = append(names, tl.Name)
	}
	if !strings.Contains(strings.Join(names, ","), "ask_a") {
		t.Fatalf("facade tools %v", names)
	}
	res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "ask_a", Arguments: map[string]any{"message": "echo please", "session": "via-mcp"}})
	if err != nil || res.IsError {
		t.Fatalf("ask_a: %v %+v", err, res)
	}
	if txt := res.Content[0].(*mcp.TextContent).Text; !strings.Contains(txt, "interop works") {
		t.Fatalf("ask_a replied %q", txt)
	}
	d.stop(t)
}

// The TypeScript SDK client drives `agentd mcp serve` over stdio.
func TestMCPFacadeTypeScript(t *testing.T) {
	node, modules := npmDeps(t)
	addr := fake(t, "match *\nsay pong: {{last_user}}\n")
	dir := dataDir(t, map[string]string{"agents/a.yaml": openaiAgent(addr, "")})
	script, _ := filepath.Abs(filepath.Join("..", "..", "internal", "mcpserver", "testdata", "ts-client.mjs"))
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, node, script, "stdio", agentdBin, "--data", dir, "mcp", "serve")
	cmd.Env = append(append(os.Environ(), storeEnv(cmd.Args)...), "NODE_PATH="+modules)
	out, err := cmd.Output()
	if err != nil {
		var stderr string
		if ee, ok := err.(*exec.ExitError); ok {
			stderr = string(ee.Stderr)
		}
		t.Fatalf("ts client: %v\n%s\n%s", err, out, stderr)
	}
	var got struct {
		Tools []struct{ Name string } `json:"tools"`
		Ask   struct {
			Text    string `json:"text"`
			IsError bool   `json:"isError"`
		} `json:"ask"`
	}
	if err := json.Unmarshal(out, &got); err != nil {
		t.Fatalf("ts client output %s: %v", out, err)
	}
	var names []string
	for _, tl := range got.Tools {
		names = append(names, tl.Name)
	}
	if !strings.Contains(strings.Join(names, ","), "ask_a") || !strings.Contains(strings.Join(names, ","), "read_session_log") {
		t.Errorf("tools %v", names)
	}
	if got.Ask.IsError || !strings.HasPrefix(got.Ask.Text, "pong:") {
		t.Errorf("ask_a answered %+v", got.Ask)
	}
}
