package main

import (
	"bufio"
	"encoding/json"
	"net/http"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"agentd/approval"
	"agentd/internal/app"
	"agentd/internal/identity"
	"agentd/internal/store/postgres/pgtest"
)

// idServer is a running `agentd identity-server`.
type idServer struct {
	cmd    *exec.Cmd
	out    *syncBuffer
	exited chan error
	addr   string
}

// startIdentityServer starts `agentd identity-server` on its own data
// directory at listen and waits until it listens.
func startIdentityServer(t *testing.T, dir, listen string) *idServer {
	t.Helper()
	args := []string{"--data", dir, "identity-server", "--listen", listen}
	cmd := exec.Command(agentdBin, args...)
	cmd.Env = append(cmd.Environ(), storeEnv(args)...)
	s := &idServer{cmd: cmd, out: &syncBuffer{}, exited: make(chan error, 1)}
	pr, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	cmd.Stderr = s.out
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	line, err := bufio.NewReader(pr).ReadString('\n')
	if err != nil {
		cmd.Process.Kill()
		t.Fatalf("identity-server said nothing: %v\n%s", err, s.out.String())
	}
	go func() { s.exited <- cmd.Wait() }()
	rest, ok := strings.CutPrefix(strings.TrimSpace(line), "identity server listening on http://")
	if !ok {
		t.Fatalf("identity-server said %q", line)
	}
	s.addr = strings.TrimSuffix(rest, "/mcp")
	t.Cleanup(s.kill)
	return s
}

func (s *idServer) kill() {
	s.cmd.Process.Kill()
	<-s.exited
	s.exited <- nil
}

func (s *idServer) url() string { return "http://" + s.addr + "/mcp" }

// identityCall calls tool at the server as the holder of the key of
// agentID in dataDir's keyring; ok false when the server is not up.
func identityCall(t *testing.T, serverURL, dataDir, agentID, tool string, args func(pub string) string) (text string, ok bool) {
	t.Helper()
	keys, err := identity.Open(filepath.Join(dataDir, "keys"), nil)
	if err != nil {
		t.Fatal(err)
	}
	pub, found, err := keys.Public(agentID)
	if err != nil || !found {
		t.Fatalf("key of %s: %v %v", agentID, found, err)
	}
	cs, err := mcp.NewClient(&mcp.Implementation{Name: "test"}, nil).Connect(t.Context(),
		&mcp.StreamableClientTransport{Endpoint: serverURL, MaxRetries: -1, DisableStandaloneSSE: true}, nil)
	if err != nil {
		return "", false
	}
	defer cs.Close()
	raw := json.RawMessage(args(pub))
	now := time.Now()
	a, err := keys.Approve(agentID, approval.Message{Text: "read", CreatedAt: now, ID: "read-" + now.String()}, now, serverURL, tool, raw)
	if err != nil {
		t.Fatal(err)
	}
	res, err := cs.CallTool(t.Context(), &mcp.CallToolParams{Name: tool, Arguments: raw, Meta: mcp.Meta{approval.MetaKey: a}})
	if err != nil || res.IsError {
		t.Fatalf("%s: %v %+v", tool, err, res)
	}
	return res.Content[0].(*mcp.TextContent).Text, true
}

// identityLogs reads the log of the agent whose key is in dir's keyring
// from the server, as the key's holder, and returns the logged message
// ids in order (none when the server is not up).
func identityLogs(t *testing.T, serverURL, dataDir, agentID string) []int {
	t.Helper()
	var pub string
	text, up := identityCall(t, serverURL, dataDir, agentID, "logs", func(p string) string {
		pub = p
		return `{"pubkey":"` + p + `","limit":1000}`
	})
	if !up {
		return nil
	}
	var out struct {
		Logs []struct {
			Seq       int64 `json:"seq"`
			Lifecycle struct {
				MessageID    string `json:"messageId"`
				DaemonPubkey string `json:"daemonPubkey"`
				Output       string `json:"output"`
			} `json:"lifecycle"`
		} `json:"logs"`
	}
	if err := json.Unmarshal([]byte(text), &out); err != nil {
		t.Fatal(err)
	}
	var ids []int
	for i, l := range out.Logs {
		id, _ := strconv.Atoi(l.Lifecycle.MessageID)
		if l.Seq != int64(i+1) || l.Lifecycle.DaemonPubkey != pub || l.Lifecycle.Output == "" {
			t.Errorf("log %d = %+v; want seq %d, the agent's pubkey, its reply", i, l, i+1)
		}
		ids = append(ids, id)
	}
	return ids
}

// waitLogs polls the server until the agent's log holds n lifecycles.
func waitLogs(t *testing.T, s *idServer, dataDir, agentID string, n int, node *daemon) []int {
	t.Helper()
	deadline := time.Now().Add(90 * time.Second)
	for {
		ids := identityLogs(t, s.url(), dataDir, agentID)
		if len(ids) >= n {
			return ids
		}
		if time.Now().After(deadline) {
			t.Fatalf("the server logged %v of %s, want %d lifecycles\nnode:\n%s\nserver:\n%s", ids, agentID, n, node.out.String(), s.out.String())
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// Two agentd daemons share one identity server: each registers its agent
// and logs each message lifecycle there; while the server is down the
// lifecycles queue, and they arrive in order once it is back.
func TestIdentityServerTwoNodes(t *testing.T) {
	addr := fake(t, "")
	srvDir := dataDir(t, nil)
	srv := startIdentityServer(t, srvDir, "127.0.0.1:0")
	agentFile := func(name string) string {
		return openaiAgent(addr, "identity_server: "+srv.url()+"\nsystem_prompt: |\n  I am "+name+".\n\n  More about me.\n")
	}
	dirs := []string{dataDir(t, map[string]string{"agents/a.yaml": agentFile("one")}), dataDir(t, map[string]string{"agents/a.yaml": agentFile("two")})}
	var nodes []*daemon
	for i, dir := range dirs {
		nodes = append(nodes, serve(t, dir))
		if r := run(t, dir, "send", "a", "hello from node "+strconv.Itoa(i)); r.code != 0 {
			t.Fatalf("send: %+v", r)
		}
	}
	for i, dir := range dirs {
		ids := waitLogs(t, srv, dir, "a", 1, nodes[i])
		if len(ids) != 1 {
			t.Errorf("node %d: logged %v; want one lifecycle", i, ids)
		}
		// Its character file: name, key, the system prompt's first
		// paragraph, the model without the API key's variable.
		text, _ := identityCall(t, srv.url(), dir, "a", "get_character", func(p string) string { return `{"pubkey":"` + p + `"}` })
		for _, want := range []string{`"name":"Tester"`, `"identity_prompt":"I am ` + []string{"one", "two"}[i] + `."`, `"base_url":"http://` + addr + `/v1"`} {
			if !strings.Contains(text, want) {
				t.Errorf("node %d: character %s; want %s in it", i, text, want)
			}
		}
		if strings.Contains(text, "AGENTD_TEST_KEY") || strings.Contains(text, "api_key") {
			t.Errorf("node %d: character %s names its API key", i, text)
		}
	}

	// The server goes away; node 0's next lifecycles queue.
	srv.kill()
	for i := range 3 {
		if r := run(t, dirs[0], "send", "a", "while down "+strconv.Itoa(i)); r.code != 0 {
			t.Fatalf("send while the server is down: %+v", r)
		}
	}
	srv = startIdentityServer(t, srvDir, srv.addr)
	ids := waitLogs(t, srv, dirs[0], "a", 4, nodes[0])
	if len(ids) != 4 || !slices.IsSorted(ids) || slices.Compact(slices.Clone(ids))[3] != ids[3] {
		t.Errorf("node 0 logged %v; want 4 lifecycles in order, each once", ids)
	}
	if ids := identityLogs(t, srv.url(), dirs[1], "a"); len(ids) != 1 {
		t.Errorf("node 1 logged %v; want its one lifecycle", ids)
	}
	for _, d := range nodes {
		d.stop(t)
	}
}

// The identity server fails closed: it will not listen beyond loopback
// unless told which host clients name, and it refuses a request whose
// Host is not allowed (DNS rebinding) or that carries an Origin.
func TestIdentityServerGuards(t *testing.T) {
	dir := dataDir(t, nil)
	r := run(t, dir, "identity-server", "--listen", "0.0.0.0:0")
	if r.code != 2 || !strings.Contains(r.stderr, "--allow-host") {
		t.Errorf("identity-server --listen 0.0.0.0:0 = exit %d, %q; want a usage error naming --allow-host", r.code, r.stderr)
	}
	srv := startIdentityServer(t, dir, "127.0.0.1:0")
	body := `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"x","version":"1"}}}`
	for name, set := range map[string]func(*http.Request){
		"a foreign Host": func(r *http.Request) { r.Host = "evil.example:7400" },
		"an Origin":      func(r *http.Request) { r.Header.Set("Origin", "https://evil.example") },
	} {
		req, err := http.NewRequest("POST", srv.url(), strings.NewReader(body))
		if err != nil {
			t.Fatal(err)
		}
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Accept", "application/json, text/event-stream")
		set(req)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != http.StatusForbidden {
			t.Errorf("%s: status %d; want 403", name, resp.StatusCode)
		}
	}
}

// Two nodes on one PostgreSQL store, each with its own key of agent a:
// every turn, whichever node ran it, is logged at the identity server
// once, under the key of the node that ran it (each node delivers its
// key's rows).
func TestIdentityServerSharedStore(t *testing.T) {
	db := pgtest.NewDB(t)
	addr := fake(t, "")
	srv := startIdentityServer(t, dataDir(t, nil), "127.0.0.1:0")
	env := []string{app.StoreEnv + "=" + db}
	var dirs []string
	var nodes []*daemon
	for range 2 {
		dir := dataDir(t, map[string]string{"agents/a.yaml": openaiAgent(addr, "identity_server: "+srv.url()+"\n")})
		nodes = append(nodes, serve(t, dir, env...))
		dirs = append(dirs, dir)
	}
	const turns = 6
	for i := range turns {
		dir := dirs[i%2]
		if r := runEnv(t, dir, env, "send", "a", "--session", "s"+strconv.Itoa(i%3), "hello "+strconv.Itoa(i)); r.code != 0 {
			t.Fatalf("send: %+v", r)
		}
	}
	deadline := time.Now().Add(90 * time.Second)
	for {
		var all []int
		for _, dir := range dirs {
			all = append(all, identityLogs(t, srv.url(), dir, "a")...)
		}
		slices.Sort(all)
		if len(all) >= turns {
			if len(all) != turns || len(slices.Compact(all)) != turns {
				t.Errorf("logged %v; want %d turns, each once", all, turns)
			}
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("logged %v; want %d turns\n%s\n%s", all, turns, nodes[0].out.String(), nodes[1].out.String())
		}
		time.Sleep(100 * time.Millisecond)
	}
}
