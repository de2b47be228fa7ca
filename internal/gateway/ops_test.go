package gateway_test

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"agentd/internal/agent"
	"agentd/internal/gateway"
	"agentd/internal/metrics"
	"agentd/internal/runtime"
	"agentd/internal/store"
	"agentd/internal/store/sqlite"
)

// storeReady is ready while the store answers, as the node's readiness is
// once its runtime has started.
type storeReady struct{ st *sqlite.Store }

func (r storeReady) Ready(ctx context.Context) error {
	if err := r.st.Ping(ctx); err != nil {
		return errors.New("the store does not answer")
	}
	return nil
}

// storeNamed is a readiness that names its store.
type storeNamed struct {
	storeReady
	kind string
}

func (r storeNamed) StoreKind() string { return r.kind }

// A readiness that names the node's store has /readyz say which it is,
// ready or not.
func TestReadyzNamesTheStore(t *testing.T) {
	e := newEnv(t, setup{})
	srv := gateway.New(&gateway.Options{Runtime: e.rt, Sessions: e.st, Agents: testAgents(), Ready: storeNamed{storeReady{e.st}, "postgres"}})
	e.http.Close()
	e.http = httptest.NewServer(srv)
	status, _, body := e.do("GET", "/readyz", "")
	if want := `{"ready":true,"store":"postgres"}`; status != 200 || strings.TrimSpace(string(body)) != want {
		t.Errorf("ready: %d %s, want 200 %s", status, body, want)
	}
	e.st.Close()
	status, _, body = e.do("GET", "/readyz", "")
	var rr gateway.ReadyResponse
	decodeStrict(t, body, &rr)
	if status != 503 || rr.Store != "postgres" {
		t.Errorf("not ready: %d %s, want 503 naming postgres", status, body)
	}
}

// opsEnv serves the operator's routes over a real runtime and store, a
// metrics collector on the runtime's bus, and a registry of agent files in
// dir/agents.
type opsEnv struct {
	*env
	reg *agent.Registry
	dir string
}

func newOpsEnv(t testing.TB) *opsEnv {
	t.Helper()
	e := newEnv(t, setup{})
	dir := t.TempDir()
	reg, err := agent.NewRegistry(dir, nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	c := metrics.New(e.rt.Bus(), &metrics.Options{Sessions: e.st, Queue: e.st, States: e.st, Version: "v1.2.3"})
	done := make(chan struct{})
	go func() {
		defer close(done)
		c.Run(context.Background())
	}()
	t.Cleanup(func() {
		c.Close()
		<-done
	})
	srv := gateway.New(&gateway.Options{Runtime: e.rt, Sessions: e.st, Agents: reg, Version: "v1.2.3",
		Ready: storeReady{e.st}, Metrics: c, Usage: e.st, AgentFiles: reg})
	e.http.Close()
	e.http = httptest.NewServer(srv)
	return &opsEnv{env: e, reg: reg, dir: dir}
}

// doCT sends a request with a content type.
func (e *env) doCT(method, path, ctype, body string) (int, []byte) {
	e.t.Helper()
	return e.doCTT(e.t, method, path, ctype, body)
}

// doCTT is doCT for a test other than the one that made e (a fuzz target's).
func (e *env) doCTT(t testing.TB, method, path, ctype, body string) (int, []byte) {
	t.Helper()
	req, err := http.NewRequestWithContext(t.Context(), method, e.http.URL+path, strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	if ctype != "" {
		req.Header.Set("Content-Type", ctype)
	}
	resp, err := e.http.Client().Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	return resp.StatusCode, b
}

func TestReadyz(t *testing.T) {
	e := newOpsEnv(t)
	status, ctype, body := e.do("GET", "/readyz", "")
	if status != 200 || ctype != "application/json" || strings.TrimSpace(string(body)) != `{"ready":true}` {
		t.Errorf("ready: %d %s %s", status, ctype, body)
	}
	e.st.Close()
	status, _, body = e.do("GET", "/readyz", "")
	var rr gateway.ReadyResponse
	decodeStrict(t, body, &rr)
	if status != 503 || rr.Ready || rr.Code != "not_ready" || rr.Error != "the store does not answer" {
		t.Errorf("store closed: %d %s", status, body)
	}

	// Without a readiness check agentd never says it is ready.
	plain := newEnv(t, setup{})
	status, _, body = plain.do("GET", "/readyz", "")
	if status != 503 || !strings.Contains(string(body), `"not_ready"`) {
		t.Errorf("no readiness: %d %s", status, body)
	}
	for _, path := range []string{"/metrics", "/v1/usage"} {
		checkError(t, plain, "GET", path, "", 501, "not_available")
	}
	checkError(t, plain, "PUT", "/v1/agents/a", "name: A\n", 501, "not_available")
	checkError(t, plain, "POST", "/v1/agents/reload", "", 501, "not_available")
	checkError(t, plain, "POST", "/v1/agents/a/reload", "", 501, "not_available")
}

func TestMetricsRoute(t *testing.T) {
	e := newOpsEnv(t)
	if _, _, err := e.rt.Send(t.Context(), runtime.Input{Session: "a/k", Text: "hi"}); err != nil {
		t.Fatal(err)
	}
	// The collector counts in its own goroutine: scrape until it has
	// counted the turn.
	want := []string{
		`agentd_turns_total{agent="a",status="done"} 1`,
		`agentd_tokens_total{agent="a",model="m1",direction="input"} 3`,
		`agentd_tokens_total{agent="a",model="m1",direction="output"} 2`,
		`agentd_model_latency_seconds_count{provider="test",model="m1"} 1`,
		"agentd_queue_depth 0",
		`agentd_sessions{state="idle"} 1`,
		`agentd_info{version="v1.2.3"} 1`,
		"go_goroutines ",
	}
	deadline := time.Now().Add(waitLimit)
	for {
		status, ctype, body := e.do("GET", "/metrics", "")
		if status != 200 || ctype != gateway.MetricsContentType {
			t.Fatalf("metrics: %d %s", status, ctype)
		}
		missing := ""
		for _, w := range want {
			if !strings.Contains(string(body), w) {
				missing = w
				break
			}
		}
		if missing == "" {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("metrics never showed %s:\n%s", missing, body)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

func TestUsageRoute(t *testing.T) {
	e := newOpsEnv(t)
	ctx := t.Context()
	day := time.Date(2026, 11, 20, 0, 0, 0, 0, time.UTC)
	for _, u := range []struct {
		agent, key, model string
		in, out           int
		cost              float64
		at                time.Duration
	}{
		{"a", "one", "m1", 100, 10, 0.5, time.Hour},
		{"a", "two", "m2", 200, 20, 0.25, 25 * time.Hour},
		{"b", "one", "m1", 300, 30, 1, 26 * time.Hour},
	} {
		sess, _, err := e.st.Session(ctx, u.agent, u.key)
		if err != nil {
			t.Fatal(err)
		}
		if err := e.st.Commit(ctx, &store.Batch{Usage: []store.Usage{{Session: sess.ID, Agent: u.agent, Model: u.model,
			InputTokens: u.in, OutputTokens: u.out, CostUSD: u.cost, Time: day.Add(u.at)}}}); err != nil {
			t.Fatal(err)
		}
	}
	row := func(key string, in, out int64, cost float64, calls int64) gateway.UsageRow {
		return gateway.UsageRow{Key: key, UsageTotals: gateway.UsageTotals{InputTokens: in, OutputTokens: out, CostUSD: cost, Calls: calls}}
	}
	all := gateway.UsageTotals{InputTokens: 600, OutputTokens: 60, CostUSD: 1.75, Calls: 3}
	since, until := day.Add(24*time.Hour), day.Add(26*time.Hour)
	for _, tc := range []struct {
		query string
		want  gateway.UsagePage
	}{
		{"", gateway.UsagePage{Group: "day", Total: all, Rows: []gateway.UsageRow{row("2026-11-20", 100, 10, 0.5, 1), row("2026-11-21", 500, 50, 1.25, 2)}}},
		{"?group=agent", gateway.UsagePage{Group: "agent", Total: all, Rows: []gateway.UsageRow{row("b", 300, 30, 1, 1), row("a", 300, 30, 0.75, 2)}}},
		{"?group=model&agent=a", gateway.UsagePage{Group: "model", Total: gateway.UsageTotals{InputTokens: 300, OutputTokens: 30, CostUSD: 0.75, Calls: 2},
			Rows: []gateway.UsageRow{row("m1", 100, 10, 0.5, 1), row("m2", 200, 20, 0.25, 1)}}},
		{"?group=session&session=a/two", gateway.UsagePage{Group: "session", Total: gateway.UsageTotals{InputTokens: 200, OutputTokens: 20, CostUSD: 0.25, Calls: 1},
			Rows: []gateway.UsageRow{row("a/two", 200, 20, 0.25, 1)}}},
		{"?group=session&limit=1", gateway.UsagePage{Group: "session", Total: all, Truncated: true, Rows: []gateway.UsageRow{row("b/one", 300, 30, 1, 1)}}},
		{"?group=agent&since=2026-11-21T00:00:00Z&until=2026-11-21T02:00:00Z", gateway.UsagePage{Group: "agent", Since: &since, Until: &until,
			Total: gateway.UsageTotals{InputTokens: 200, OutputTokens: 20, CostUSD: 0.25, Calls: 1}, Rows: []gateway.UsageRow{row("a", 200, 20, 0.25, 1)}}},
		{"?agent=nobody", gateway.UsagePage{Group: "day", Rows: []gateway.UsageRow{}}},
	} {
		status, _, body := e.do("GET", "/v1/usage"+tc.query, "")
		if status != 200 {
			t.Errorf("%s: %d %s", tc.query, status, body)
			continue
		}
		var got gateway.UsagePage
		decodeStrict(t, body, &got)
		if d := cmp.Diff(tc.want, got); d != "" {
			t.Errorf("%s (-want +got)\n%s", tc.query, d)
		}
	}
	// A duration counts back from now.
	status, _, body := e.do("GET", "/v1/usage?since=1h", "")
	var recent gateway.UsagePage
	decodeStrict(t, body, &recent)
	if status != 200 || recent.Since == nil || time.Since(*recent.Since) < time.Hour || len(recent.Rows) != 0 {
		t.Errorf("since=1h: %d %s", status, body)
	}

	for _, tc := range []struct{ query, reason string }{
		{"?group=week", "group"},
		{"?since=yesterday", "since"},
		{"?since=-5h", "since"},
		{"?until=2026-13-01T00:00:00Z", "until"},
		{"?since=2026-11-21T00:00:00Z&until=2026-11-20T00:00:00Z", "until must be after since"},
		{"?limit=0", "limit"},
		{"?limit=many", "limit"},
		{"?limit=10001", "limit"},
		{"?session=no-key", "session"},
		{"?session=a/b%0Ac", "session"},
		{"?agent=../x", "agent"},
		{"?agent=a&session=b/one", "session"},
	} {
		er := checkError(t, e.env, "GET", "/v1/usage"+tc.query, "", 400, "bad_request")
		if !strings.Contains(er.Error, tc.reason) || showsInternals(er.Error) {
			t.Errorf("%s: %q, want a reason naming %s", tc.query, er.Error, tc.reason)
		}
	}
}

func getAgent(t *testing.T, e *opsEnv, id string) gateway.AgentDetail {
	t.Helper()
	status, _, body := e.do("GET", "/v1/agents/"+id, "")
	if status != 200 {
		t.Fatalf("GET agent %s: %d %s", id, status, body)
	}
	var d gateway.AgentDetail
	decodeStrict(t, body, &d)
	return d
}

func TestAgentPutAndGet(t *testing.T) {
	e := newOpsEnv(t)
	checkError(t, e.env, "GET", "/v1/agents/writer", "", 404, "not_found")

	// Create from YAML: 201, the file as sent, mode 0600.
	yml := "# drafts\nname: Writer\nmodel:\n  provider: openai\n  name: gpt-4o-mini\n  api_key_env: OPENAI_API_KEY\nbudgets:\n  max_steps: 3\n"
	status, body := e.doCT("PUT", "/v1/agents/writer", "application/yaml", yml)
	if status != 201 {
		t.Fatalf("create: %d %s", status, body)
	}
	var created gateway.AgentDetail
	decodeStrict(t, body, &created)
	file := filepath.Join(e.dir, "agents", "writer.yaml")
	if created.ID != "writer" || created.File != file || created.Definition["name"] != "Writer" {
		t.Errorf("create answered %s", body)
	}
	if b, _ := os.ReadFile(file); string(b) != yml {
		t.Errorf("file holds %q", b)
	}
	if fi, _ := os.Stat(file); fi.Mode().Perm() != 0o600 {
		t.Errorf("file mode %v", fi.Mode().Perm())
	}
	d := getAgent(t, e, "writer")
	model := d.Definition["model"].(map[string]any)
	if model["api_key_env"] != "OPENAI_API_KEY" || d.Definition["budgets"].(map[string]any)["max_steps"] != 3.0 {
		t.Errorf("GET shows %v", d.Definition)
	}
	if _, ok := d.Definition["file"]; ok {
		t.Error("the definition shows file, which an agent file cannot hold")
	}

	// Update from JSON (no content type is fine too): 200.
	status, body = e.doCT("PUT", "/v1/agents/writer", "application/json; charset=utf-8", `{"name": "Writer 2", "model": {"provider": "echo"}}`)
	if status != 200 || !strings.Contains(string(body), `"Writer 2"`) {
		t.Fatalf("update: %d %s", status, body)
	}
	if def, _ := e.reg.Get("writer"); def.Name != "Writer 2" || def.Budgets.MaxSteps != agent.DefaultMaxSteps {
		t.Errorf("registry after update: %+v", def)
	}
	for _, ct := range []string{"", "text/plain", "application/x-www-form-urlencoded"} {
		status, body = e.doCT("PUT", "/v1/agents/writer", ct, "name: Writer 3\n# a comment & a=b\n")
		if status != 200 {
			t.Errorf("update as %q: %d %s", ct, status, body)
		}
	}
	if b, _ := os.ReadFile(file); string(b) != "name: Writer 3\n# a comment & a=b\n" {
		t.Errorf("a body sent as a form was not written as it is: %q", b)
	}
}

func TestAgentPutRefuses(t *testing.T) {
	e := newOpsEnv(t)
	if _, err := e.reg.PutFile("writer", []byte("name: Writer\n")); err != nil {
		t.Fatal(err)
	}
	file := filepath.Join(e.dir, "agents", "writer.yaml")
	before, _ := os.ReadFile(file)
	for _, tc := range []struct {
		name, ctype, body string
		line              int
		field             string
	}{
		{"bad provider", "application/yaml", "name: W\nmodel:\n  provider: nope\n", 3, "model.provider"},
		{"unknown field", "application/yaml", "name: W\nbudget:\n  max_steps: 2\n", 2, "budget"},
		{"wrong type in JSON", "application/json", "{\"name\": \"W\",\n  \"budgets\": {\"max_steps\": \"lots\"}}", 2, "budgets.max_steps"},
		{"another agent's id", "", "id: reader\nname: W\n", 1, "id"},
		{"a key pasted as its variable", "", "model:\n  provider: openai\n  name: m\n  api_key_env: sk-proj-abcdefghijklmnop\n", 4, "model.api_key_env"},
		{"not YAML", "", "name: [\n", 1, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			status, body := e.doCT("PUT", "/v1/agents/writer", tc.ctype, tc.body)
			var ae gateway.AgentError
			decodeStrict(t, body, &ae)
			if status != 400 || ae.Code != "bad_request" || len(ae.Problems) == 0 {
				t.Fatalf("%d %s", status, body)
			}
			if p := ae.Problems[0]; p.Line != tc.line || p.Field != tc.field || p.File != "" {
				t.Errorf("first problem %+v, want line %d field %q", p, tc.line, tc.field)
			}
			if tc.field != "" && !strings.Contains(ae.Error.Error, tc.field) {
				t.Errorf("error %q does not name %s", ae.Error.Error, tc.field)
			}
			if strings.Contains(string(body), "sk-proj") {
				t.Errorf("the answer echoes the key: %s", body)
			}
			if after, _ := os.ReadFile(file); string(after) != string(before) {
				t.Error("a refused body changed the file")
			}
		})
	}
	checkError(t, e.env, "PUT", "/v1/agents/writer", "", 400, "bad_request")
	checkError(t, e.env, "PUT", "/v1/agents/writer", "name: "+strings.Repeat("x", gateway.MaxBody)+"\n", 413, "too_large")
	if status, body := e.doCT("PUT", "/v1/agents/writer", "multipart/form-data; boundary=x", "name: W\n"); status != 415 {
		t.Errorf("form body: %d %s", status, body)
	}
	// Ids that are not file names never reach the disk.
	for _, id := range []string{"%2E%2E%2Fescape", "a%2Fb", ".hidden", "x%00y", strings.Repeat("x", 65)} {
		checkError(t, e.env, "PUT", "/v1/agents/"+id, "name: X\n", 400, "bad_request")
	}
	entries, _ := os.ReadDir(e.dir)
	for _, en := range entries {
		if en.Name() != "agents" {
			t.Errorf("a PUT wrote %s outside agents/", en.Name())
		}
	}
	if after, _ := os.ReadFile(file); string(after) != string(before) {
		t.Error("a refused request changed the file")
	}
}

// GET never shows an MCP server's env or header values, nor its URL's
// credentials or query; writing the placeholders back is refused.
func TestAgentSecretsHidden(t *testing.T) {
	e := newOpsEnv(t)
	secrets := []string{"supersecret-env", "supersecret-header", "supersecret-user", "supersecret-pass", "supersecret-query"}
	yml := `name: Keeper
model:
  provider: openai
  name: gpt-4o-mini
  api_key_env: OPENAI_API_KEY
mcp_servers:
  files:
    command: files-server
    env:
      FILES_TOKEN: supersecret-env
  search:
    url: https://supersecret-user:supersecret-pass@search.example/mcp?key=supersecret-query&mode=x
    headers:
      Authorization: Bearer supersecret-header
    headers_env:
      X-Api-Key: SEARCH_KEY
`
	if status, body := e.doCT("PUT", "/v1/agents/keeper", "application/yaml", yml); status != 201 {
		t.Fatalf("create: %d %s", status, body)
	}
	_, _, body := e.do("GET", "/v1/agents/keeper", "")
	for _, s := range secrets {
		if strings.Contains(string(body), s) {
			t.Errorf("GET shows %s: %s", s, body)
		}
	}
	d := getAgent(t, e, "keeper")
	servers := d.Definition["mcp_servers"].(map[string]any)
	files := servers["files"].(map[string]any)
	search := servers["search"].(map[string]any)
	if files["env"].(map[string]any)["FILES_TOKEN"] != gateway.Hidden ||
		search["headers"].(map[string]any)["Authorization"] != gateway.Hidden ||
		search["headers_env"].(map[string]any)["X-Api-Key"] != "SEARCH_KEY" {
		t.Errorf("servers shown as %v", servers)
	}
	if u := search["url"].(string); !strings.HasPrefix(u, "https://%3Chidden%3E@search.example/mcp?") {
		t.Errorf("url shown as %s", u)
	}

	// What GET shows, written back, would replace the secrets with the
	// placeholder: refused, naming each place.
	view, _ := json.Marshal(d.Definition)
	status, body := e.doCT("PUT", "/v1/agents/keeper", "application/json", string(view))
	var ae gateway.AgentError
	decodeStrict(t, body, &ae)
	var fields []string
	for _, p := range ae.Problems {
		fields = append(fields, p.Field)
	}
	want := []string{"mcp_servers.files.env.FILES_TOKEN", "mcp_servers.search.headers.Authorization", "mcp_servers.search.url"}
	if status != 400 || !cmp.Equal(want, fields) {
		t.Errorf("PUT of the GET view: %d %s", status, body)
	}
	if b, _ := os.ReadFile(filepath.Join(e.dir, "agents", "keeper.yaml")); string(b) != yml {
		t.Error("the refused PUT changed the file")
	}
}

// Secrets elsewhere in a definition: server arguments, the model's base
// URL (and its fallbacks'), extra provider parameters, bootstrap arguments.
func TestAgentSecretsHiddenEverywhere(t *testing.T) {
	e := newOpsEnv(t)
	yml := `name: Keeper
model:
  provider: openai
  name: gpt-4o-mini
  base_url: https://llm.example/v1?api-key=sk-live-SECRET1
  params:
    extra:
      auth: SECRET5
  fallbacks:
    - provider: openai
      name: other
      base_url: https://backup.example/v1?key=SECRET6
mcp_servers:
  gh:
    command: gh-server
    args: [--token, ghp_SECRET2]
bootstrap:
  - tool: gh__login
    args:
      password: SECRET4
`
	if status, body := e.doCT("PUT", "/v1/agents/keeper", "application/yaml", yml); status != 201 {
		t.Fatalf("create: %d %s", status, body)
	}
	_, _, body := e.do("GET", "/v1/agents/keeper", "")
	for _, s := range []string{"SECRET1", "SECRET2", "SECRET4", "SECRET5", "SECRET6"} {
		if strings.Contains(string(body), s) {
			t.Errorf("GET shows %s: %s", s, body)
		}
	}
	d := getAgent(t, e, "keeper")
	view, _ := json.Marshal(d.Definition)
	if status, body := e.doCT("PUT", "/v1/agents/keeper", "application/json", string(view)); status != 400 {
		t.Errorf("PUT of the GET view: %d %s", status, body)
	}
	if b, _ := os.ReadFile(filepath.Join(e.dir, "agents", "keeper.yaml")); string(b) != yml {
		t.Error("the refused PUT changed the file")
	}
}

// What GET shows, written back, means the same agent, including an empty
// servers list (none) that a missing one (all) would turn into all.
func TestAgentRoundTrip(t *testing.T) {
	e := newOpsEnv(t)
	yml := "name: Quiet\nservers: []\nskills: []\ntools:\n  deny: [\"http_fetch\"]\n  timeout: 30s\nmemory:\n  recall: -1\n"
	if status, body := e.doCT("PUT", "/v1/agents/quiet", "application/yaml", yml); status != 201 {
		t.Fatalf("create: %d %s", status, body)
	}
	first, _ := e.reg.Get("quiet")
	d := getAgent(t, e, "quiet")
	view, _ := json.Marshal(d.Definition)
	if status, body := e.doCT("PUT", "/v1/agents/quiet", "application/json", string(view)); status != 200 {
		t.Fatalf("PUT of the GET view: %d %s", status, body)
	}
	again, _ := e.reg.Get("quiet")
	if d := cmp.Diff(first, again); d != "" {
		t.Errorf("round trip changed the agent (-before +after)\n%s", d)
	}
	if again.Servers == nil || len(again.Servers) != 0 || again.Skills == nil {
		t.Errorf("empty lists became %v %v", again.Servers, again.Skills)
	}
}

func TestAgentReloadRoutes(t *testing.T) {
	e := newOpsEnv(t)
	for id, body := range map[string]string{"good": "name: Good\n", "soon-bad": "name: Soon\n"} {
		if _, err := e.reg.PutFile(id, []byte(body)); err != nil {
			t.Fatal(err)
		}
	}
	// Edited by hand: one file breaks, a new one appears.
	if err := os.WriteFile(filepath.Join(e.dir, "agents", "soon-bad.yaml"), []byte("name: Soon\nbudgets:\n  max_steps: -2\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(e.dir, "agents", "fresh.yaml"), []byte("name: Fresh\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	status, _, body := e.do("POST", "/v1/agents/reload", "")
	var rr gateway.ReloadResponse
	decodeStrict(t, body, &rr)
	want := gateway.ReloadResponse{Agents: []string{"fresh", "good", "soon-bad"}, Problems: map[string][]gateway.Problem{
		"soon-bad": {{File: "agents/soon-bad.yaml", Line: 3, Field: "budgets.max_steps", Message: "must not be negative, got -2"}}}}
	if d := cmp.Diff(want, rr); status != 200 || d != "" {
		t.Errorf("reload all: %d (-want +got)\n%s", status, d)
	}

	// One agent: loaded (the last good definition stays) with its problems.
	status, _, body = e.do("POST", "/v1/agents/soon-bad/reload", "")
	var st gateway.AgentState
	decodeStrict(t, body, &st)
	if status != 200 || !st.Loaded || len(st.Problems) != 1 || st.Problems[0].Field != "budgets.max_steps" {
		t.Errorf("reload soon-bad: %d %s", status, body)
	}
	if d := getAgent(t, e, "soon-bad"); d.Definition["name"] != "Soon" || len(d.Problems) != 1 {
		t.Errorf("GET of a broken agent: %+v", d)
	}
	status, _, body = e.do("POST", "/v1/agents/fresh/reload", "")
	if status != 200 || strings.TrimSpace(string(body)) != `{"agent":"fresh","loaded":true}` {
		t.Errorf("reload fresh: %d %s", status, body)
	}
	checkError(t, e.env, "POST", "/v1/agents/nobody/reload", "", 404, "not_found")

	// A file that never loaded: not loaded, with its problem.
	if err := os.WriteFile(filepath.Join(e.dir, "agents", "broken.yaml"), []byte("type: robot\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	status, _, body = e.do("POST", "/v1/agents/broken/reload", "")
	decodeStrict(t, body, &st)
	if status != 200 || st.Loaded || len(st.Problems) != 1 || st.Problems[0].Field != "type" {
		t.Errorf("reload broken: %d %s", status, body)
	}
	checkError(t, e.env, "GET", "/v1/agents/broken", "", 404, "not_found")
}

// FuzzUsageQuery sends arbitrary queries to /v1/usage: each is answered
// with a report or refused with a 400 that says why, never a server error.
func FuzzUsageQuery(f *testing.F) {
	for _, q := range []string{"", "group=agent", "group=session&session=a/k&since=24h", "since=2026-01-02T03:04:05Z&until=1h",
		"group=day&limit=5", "group=x", "since=-1h", "session=%00", "agent=a&session=b/k", "limit=99999999999999999999"} {
		f.Add(q)
	}
	e := newOpsEnv(f)
	f.Fuzz(func(t *testing.T, query string) {
		v, err := url.ParseQuery(query)
		if err != nil {
			t.Skip("not a query")
		}
		status, body := e.doCTT(t, "GET", "/v1/usage?"+v.Encode(), "", "")
		switch status {
		case 200:
			var p gateway.UsagePage
			if err := json.Unmarshal(body, &p); err != nil || p.Rows == nil {
				t.Fatalf("200 %s: %v", body, err)
			}
		case 400:
			var er gateway.Error
			if err := json.Unmarshal(body, &er); err != nil || er.Code != "bad_request" || showsInternals(er.Error) {
				t.Fatalf("400 %s: %v", body, err)
			}
		default:
			t.Fatalf("query %q: %d %s", query, status, body)
		}
	})
}

// FuzzAgentPutBody puts arbitrary bodies as an agent file: each is
// accepted (and then shown by GET) or refused with a 400 naming its
// problems, never a server error; a refused body changes nothing.
func FuzzAgentPutBody(f *testing.F) {
	for _, b := range []string{"name: A\n", `{"name": "A"}`, "name: [\n", "id: other\n", "---\n---\n", "",
		"mcp_servers:\n  s:\n    command: x\n    env: {K: <hidden>}\n", `{"model": {"provider": "openai"}}`, "\x00", "&a [*a]"} {
		f.Add(b)
	}
	e := newOpsEnv(f)
	file := filepath.Join(e.dir, "agents", "fz.yaml")
	f.Fuzz(func(t *testing.T, body string) {
		before, _ := os.ReadFile(file)
		status, b := e.doCTT(t, "PUT", "/v1/agents/fz", "application/yaml", body)
		switch status {
		case 200, 201:
			var d gateway.AgentDetail
			if err := json.Unmarshal(b, &d); err != nil || d.ID != "fz" || d.Definition == nil {
				t.Fatalf("%d %s: %v", status, b, err)
			}
		case 400:
			var ae gateway.AgentError
			if err := json.Unmarshal(b, &ae); err != nil || ae.Code != "bad_request" || (len(ae.Problems) == 0 && strings.TrimSpace(body) != "") {
				t.Fatalf("400 %s: %v", b, err)
			}
			if after, _ := os.ReadFile(file); string(after) != string(before) {
				t.Fatalf("refused body %q changed the file", body)
			}
		default:
			t.Fatalf("body %q: %d %s", body, status, b)
		}
	})
}

// Over TCP, the token alone cannot write an agent definition (whose MCP
// servers are commands this machine would start): that needs
// gateway.remote_admin. The local socket (no Protect) always can.
func TestAdminRoutesOverTCP(t *testing.T) {
	for _, admin := range []bool{false, true} {
		e := newOpsEnv(t)
		dir := t.TempDir()
		tk, err := gateway.OpenTokens(dir, &gateway.TokenOptions{Create: true})
		if err != nil {
			t.Fatal(err)
		}
		tok, _ := tk.Token()
		srv := gateway.New(&gateway.Options{Runtime: e.rt, Sessions: e.st, Agents: e.reg, Version: "v", AgentFiles: e.reg})
		ts := httptest.NewServer(srv.Protect(&gateway.AuthOptions{Tokens: tk, Listen: "127.0.0.1:7420", RemoteAdmin: admin}))
		put := func(path string) int {
			req, _ := http.NewRequest("PUT", ts.URL+path, strings.NewReader("name: Shell\nmcp_servers:\n  p:\n    command: /bin/sh\n    args: [-c, \"touch /tmp/owned\"]\n"))
			req.Host = "127.0.0.1:7420"
			req.Header.Set("Authorization", "Bearer "+tok)
			req.Header.Set("Content-Type", "application/yaml")
			resp, err := ts.Client().Do(req)
			if err != nil {
				t.Fatal(err)
			}
			resp.Body.Close()
			return resp.StatusCode
		}
		got := put("/v1/agents/shell")
		if !admin && got != http.StatusForbidden {
			t.Errorf("remote_admin off: PUT an agent over TCP: %d, want 403", got)
		}
		if admin && got != http.StatusCreated {
			t.Errorf("remote_admin on: PUT an agent over TCP: %d, want 201", got)
		}
		if _, err := os.Stat(filepath.Join(e.dir, "agents", "shell.yaml")); (err == nil) != admin {
			t.Errorf("remote_admin %v: agent file written: %v", admin, err == nil)
		}
		// Odd spellings reach the same route or none.
		for _, p := range []string{"//v1/agents/shell2", "/v1/agents/./shell2", "/v1/agents/shell2/"} {
			if c := put(p); c == http.StatusCreated && !admin {
				t.Errorf("%s: %d", p, c)
			}
		}
		ts.Close()
	}
}

// degradedReady is storeReady with optional parts off.
type degradedReady struct {
	storeReady
	parts []gateway.Degraded
}

func (r degradedReady) Degraded() []gateway.Degraded { return r.parts }

// Optional parts that are off are listed by /readyz, which stays 200 for
// them alone (the console shows them); the list is absent when none is.
func TestReadyzDegraded(t *testing.T) {
	e := newEnv(t, setup{})
	off := []gateway.Degraded{{Part: "memory", Reason: "its database could not be opened"}}
	srv := gateway.New(&gateway.Options{Runtime: e.rt, Sessions: e.st, Agents: testAgents(), Ready: degradedReady{storeReady{e.st}, off}})
	e.http.Close()
	e.http = httptest.NewServer(srv)
	status, _, body := e.do("GET", "/readyz", "")
	want := `{"ready":true,"degraded":[{"part":"memory","reason":"its database could not be opened"}]}`
	if status != 200 || strings.TrimSpace(string(body)) != want {
		t.Errorf("degraded: %d %s, want 200 %s", status, body, want)
	}
	e.st.Close()
	status, _, body = e.do("GET", "/readyz", "")
	var rr gateway.ReadyResponse
	decodeStrict(t, body, &rr)
	if status != 503 || rr.Ready || len(rr.Degraded) != 1 {
		t.Errorf("degraded and not ready: %d %s", status, body)
	}
}
