package gateway_test

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"agentd/internal/agentsys"
	"agentd/internal/gateway"
	"agentd/internal/runtime"
	"agentd/internal/store"
)

// The instances of fakeAgents: a background agent a person started from
// the definition a, and the two sub-agents it started.
const (
	parentID = "p0000000000000000000000a"
	child1ID = "c1000000000000000000000a"
	child2ID = "c2000000000000000000000a"
)

var fakeTime = time.Date(2026, 11, 26, 8, 0, 0, 0, time.UTC)

// fakeAgents is a DynamicAgents of three agents that remembers what it was
// asked; a template or id named after an error returns it.
type fakeAgents struct {
	mu      sync.Mutex
	filters []store.AgentFilter
	starts  []agentsys.StartRequest
	stops   []string
	next    string
	ended   map[string]bool // the agents stopped
	// spent, if set, adds to each agent's cost what the store holds of
	// its usage.
	spent func(ids []string) map[string]float64
}

// asked returns what the fake was asked, and forgets it.
func (f *fakeAgents) asked() (filters []store.AgentFilter, starts []agentsys.StartRequest, stops []string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	filters, starts, stops = f.filters, f.starts, f.stops
	f.filters, f.starts, f.stops = nil, nil, nil
	return filters, starts, stops
}

// setNext sets the cursor List returns.
func (f *fakeAgents) setNext(c string) {
	f.mu.Lock()
	f.next = c
	f.mu.Unlock()
}

// infos are the fake's agents, those stopped in state stopped.
func (f *fakeAgents) infos() []agentsys.Info {
	f.mu.Lock()
	defer f.mu.Unlock()
	in := fakeInfos()
	var spent map[string]float64
	if f.spent != nil {
		spent = f.spent([]string{parentID, child1ID, child2ID})
	}
	for i := range in {
		if f.ended[in[i].ID] {
			in[i].State = store.AgentStopped
		}
		in[i].CostUSD += spent[in[i].ID]
	}
	return in
}

func fakeInfos() []agentsys.Info {
	return []agentsys.Info{
		{ID: child2ID, Name: "second", Type: store.InstanceSubagent, Template: "a", Parent: parentID, Root: parentID, Depth: 1,
			State: store.AgentRunning, Session: child2ID + "/main", Model: "m1", Dynamic: true, CostUSD: 0.125, CreatedAt: fakeTime.Add(2 * time.Second)},
		{ID: child1ID, Name: "first", Type: store.InstanceSubagent, Template: "a", Parent: parentID, Root: parentID, Depth: 1,
			State: store.AgentDone, Session: child1ID + "/main", Model: "m1", Dynamic: true, CostUSD: 0.25, CreatedAt: fakeTime.Add(time.Second),
			EndedAt: fakeTime.Add(3 * time.Second)},
		{ID: parentID, Name: "research", Type: store.InstanceBackground, Template: "a", Root: parentID, State: store.AgentRunning,
			Session: parentID + "/main", Model: "m1", Dynamic: true, LiveChildren: 1, CostUSD: 0.5, CreatedAt: fakeTime},
	}
}

// failing returns the error a template or id named after one stands for.
func failing(name string) error {
	switch name {
	case "missing":
		return fmt.Errorf("agent %s: %w", name, agentsys.ErrNotFound)
	case "notemplate":
		return fmt.Errorf("start: %s is a cron agent: %w", name, agentsys.ErrNotTemplate)
	case "full":
		return fmt.Errorf("start: %w: max_live 2", store.ErrLimit)
	case "far":
		return fmt.Errorf("stop: %w", agentsys.ErrReach)
	case "over":
		return fmt.Errorf("contact: %w", agentsys.ErrEnded)
	}
	return nil
}

func (f *fakeAgents) List(_ context.Context, fl store.AgentFilter) ([]agentsys.Info, string, error) {
	f.mu.Lock()
	f.filters = append(f.filters, fl)
	next := f.next
	f.mu.Unlock()
	return slices.DeleteFunc(f.infos(), func(in agentsys.Info) bool { return fl.Type != "" && in.Type != fl.Type }), next, nil
}

func (f *fakeAgents) Tree(_ context.Context, root string) ([]agentsys.Node, error) {
	if err := failing(root); err != nil {
		return nil, err
	}
	in := f.infos()
	return []agentsys.Node{{Info: in[2], CostTreeUSD: in[0].CostUSD + in[1].CostUSD + in[2].CostUSD, Children: []agentsys.Node{
		{Info: in[1], CostTreeUSD: in[1].CostUSD}, {Info: in[0], CostTreeUSD: in[0].CostUSD}}}}, nil
}

func (f *fakeAgents) Status(_ context.Context, id string) (agentsys.Status, error) {
	for _, in := range f.infos() {
		if in.ID == id {
			return agentsys.Status{Info: in, Result: "the answer", SessionState: store.StateIdle}, nil
		}
	}
	return agentsys.Status{}, fmt.Errorf("agent %s: %w", id, agentsys.ErrNotFound)
}

func (f *fakeAgents) Start(_ context.Context, req agentsys.StartRequest) (store.Instance, error) {
	if err := failing(req.Template); err != nil {
		return store.Instance{}, err
	}
	f.mu.Lock()
	f.starts = append(f.starts, req)
	f.mu.Unlock()
	return store.Instance{ID: parentID, Agent: parentID, Template: req.Template, Turn: 7}, nil
}

func (f *fakeAgents) Contact(_ context.Context, c agentsys.Contact) (store.Instance, runtime.Receipt, error) {
	if err := failing(c.Template); err != nil {
		return store.Instance{}, runtime.Receipt{}, err
	}
	return store.Instance{ID: child1ID, Agent: child1ID}, runtime.Receipt{Session: child1ID + "/main", SessionID: 3, Turn: 9}, nil
}

func (f *fakeAgents) Stop(_ context.Context, id, reason, by string) ([]string, error) {
	if err := failing(id); err != nil {
		return nil, err
	}
	f.mu.Lock()
	f.stops = append(f.stops, id+" "+reason+" "+by)
	stopped := []string{id}
	if id == parentID {
		stopped = []string{child2ID, id}
	}
	if f.ended == nil {
		f.ended = map[string]bool{}
	}
	for _, s := range stopped {
		f.ended[s] = true
	}
	f.mu.Unlock()
	return stopped, nil
}

// dynamicEnv is the API of testAgents' definitions with fakeAgents.
func dynamicEnv(t *testing.T) (*env, *fakeAgents) {
	f := &fakeAgents{}
	return newEnv(t, setup{options: func(o *gateway.Options) { o.DynamicAgents = f }}), f
}

func decodeJSON[T any](t *testing.T, what string, b []byte) T {
	t.Helper()
	var v T
	if err := json.Unmarshal(b, &v); err != nil {
		t.Fatalf("%s: %v: %s", what, err, b)
	}
	return v
}

// GET /v1/agents lists the definitions and the dynamic agents, passes its
// filters on, and pages the dynamic agents with the Agentd-Next header.
func TestAgentsListFilters(t *testing.T) {
	e, f := dynamicEnv(t)
	ids := func(list []gateway.AgentInfo) []string {
		var out []string
		for _, a := range list {
			out = append(out, a.ID)
		}
		return out
	}
	all := []string{"a", "b", child2ID, child1ID, parentID}
	dyn := []string{child2ID, child1ID, parentID}
	tests := []struct {
		query  string
		ids    []string
		filter *store.AgentFilter // nil: the dynamic agents were not asked
	}{
		{"", all, &store.AgentFilter{Live: true}},
		{"?all=1", all, &store.AgentFilter{}},
		{"?dynamic=true", dyn, &store.AgentFilter{Live: true}},
		{"?dynamic=false", []string{"a", "b"}, nil},
		{"?type=user", []string{"a"}, &store.AgentFilter{Type: "user", Live: true}},
		{"?type=cron", nil, nil},
		{"?type=subagent&parent=" + parentID, dyn[:2], &store.AgentFilter{Type: "subagent", Parent: parentID, Live: true}},
		{"?root=" + parentID + "&state=done", dyn, &store.AgentFilter{Root: parentID, State: "done"}},
		{"?state=ready", []string{"a", "b"}, nil},
		{"?limit=2&before=i1.x", dyn, &store.AgentFilter{Live: true, Limit: 2, Before: "i1.x"}},
	}
	for _, tt := range tests {
		f.asked()
		status, _, body := e.do("GET", "/v1/agents"+tt.query, "")
		if status != 200 {
			t.Errorf("GET /v1/agents%s: %d %s", tt.query, status, body)
			continue
		}
		if diff := cmp.Diff(tt.ids, ids(decodeJSON[[]gateway.AgentInfo](t, tt.query, body))); diff != "" {
			t.Errorf("GET /v1/agents%s (-want +got):\n%s", tt.query, diff)
		}
		var want []store.AgentFilter
		if tt.filter != nil {
			want = []store.AgentFilter{*tt.filter}
		}
		if filters, _, _ := f.asked(); !cmp.Equal(want, filters) {
			diff := cmp.Diff(want, filters)
			t.Errorf("GET /v1/agents%s: filter (-want +got):\n%s", tt.query, diff)
		}
	}

	// An instance's fields.
	_, _, body := e.do("GET", "/v1/agents?dynamic=true", "")
	got := decodeJSON[[]gateway.AgentInfo](t, "list", body)
	want := gateway.AgentInfo{ID: parentID, Name: "research", Type: "background", Model: "m1", State: "running", Dynamic: true,
		Template: "a", Root: parentID, Session: parentID + "/main", Children: 1, CostUSD: 0.5, CreatedAt: fakeTime}
	if diff := cmp.Diff(want, got[2]); diff != "" {
		t.Errorf("the parent as listed (-want +got):\n%s", diff)
	}
	if !strings.Contains(string(body), `"parent":"`+parentID+`"`) || !strings.Contains(string(body), `"ended_at":"2026-11-26T08:00:03Z"`) {
		t.Errorf("the children's JSON: %s", body)
	}

	// The next page's cursor, the array kept.
	f.setNext("i1.next")
	resp, err := e.http.Client().Get(e.http.URL + "/v1/agents?dynamic=true&limit=3")
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if got := resp.Header.Get(gateway.NextHeader); got != "i1.next" {
		t.Errorf("%s: %q, want i1.next", gateway.NextHeader, got)
	}
	// Through the client.
	c, stop := gateway.Pipe(e.srv)
	defer stop()
	list, next, err := c.ListAgents(t.Context(), gateway.AgentQuery{Dynamic: "true", Type: "subagent", Parent: parentID, Limit: 3, All: true})
	if err != nil || next != "i1.next" || len(list) != 2 {
		t.Errorf("ListAgents: %d agents, next %q, %v", len(list), next, err)
	}
	filters, _, _ := f.asked()
	if want := (store.AgentFilter{Type: "subagent", Parent: parentID, Limit: 3}); len(filters) == 0 || filters[len(filters)-1] != want {
		t.Errorf("ListAgents asked %+v, want %+v last", filters, want)
	}
}

// A bad query is a 400 that says what is wrong with it.
func TestAgentsListBadQuery(t *testing.T) {
	e, f := dynamicEnv(t)
	for _, tt := range []struct{ query, says string }{
		{"type=robot", `type "robot"`},
		{"state=sleeping", `state "sleeping"`},
		{"dynamic=maybe", `dynamic "maybe"`},
		{"all=yes", `all "yes"`},
		{"limit=0", `limit "0"`},
		{"limit=5001", `limit "5001"`},
		{"limit=x", `limit "x"`},
		{"parent=" + strings.Repeat("p", store.MaxInstanceText+1), "parent: longer than"},
	} {
		status, _, body := e.do("GET", "/v1/agents?"+tt.query, "")
		e := decodeJSON[gateway.Error](t, tt.query, body)
		if status != 400 || e.Code != "bad_request" || !strings.Contains(e.Error, tt.says) {
			t.Errorf("GET /v1/agents?%.40s: %d %+v, want 400 saying %s", tt.query, status, e, tt.says)
		}
	}
	if filters, _, _ := f.asked(); len(filters) != 0 {
		t.Errorf("a bad query reached the agent system: %+v", filters)
	}
}

// GET /v1/agents/tree is the forest, each node with its subtree's cost.
func TestAgentTree(t *testing.T) {
	e, _ := dynamicEnv(t)
	status, _, body := e.do("GET", "/v1/agents/tree", "")
	if status != 200 {
		t.Fatalf("tree: %d %s", status, body)
	}
	tree := decodeJSON[gateway.AgentTree](t, "tree", body)
	type node struct {
		ID       string
		Cost     float64
		Children []node
	}
	var walk func([]gateway.AgentNode) []node
	walk = func(ns []gateway.AgentNode) []node {
		var out []node
		for _, n := range ns {
			out = append(out, node{n.ID, n.CostTreeUSD, walk(n.Children)})
		}
		return out
	}
	want := []node{{parentID, 0.875, []node{{child1ID, 0.25, nil}, {child2ID, 0.125, nil}}}}
	if diff := cmp.Diff(want, walk(tree.Nodes)); diff != "" {
		t.Errorf("tree (-want +got):\n%s", diff)
	}
	if !strings.Contains(string(body), `"children":[]`) {
		t.Errorf("a leaf's children are not an empty list: %s", body)
	}
	c, stop := gateway.Pipe(e.srv)
	defer stop()
	if got, err := c.AgentTree(t.Context(), parentID); err != nil || len(got.Nodes) != 1 || len(got.Nodes[0].Children) != 2 {
		t.Errorf("AgentTree: %+v, %v", got, err)
	}
	if status, _, body := e.do("GET", "/v1/agents/tree?root=missing", ""); status != 404 {
		t.Errorf("tree of a missing root: %d %s", status, body)
	}
}

// GET /v1/agents/{id} of a dynamic agent shows its state; of a definition
// as before.
func TestAgentGetInstance(t *testing.T) {
	e, _ := dynamicEnv(t)
	c, stop := gateway.Pipe(e.srv)
	defer stop()
	d, err := c.AgentStatus(t.Context(), child1ID)
	if err != nil {
		t.Fatal(err)
	}
	if d.ID != child1ID || d.Instance == nil || d.Instance.State != store.AgentDone || d.Instance.Result != "the answer" || d.Instance.Parent != parentID {
		t.Errorf("status of a child: %+v", d)
	}
	d, err = c.AgentStatus(t.Context(), "a")
	if err != nil || d.Instance != nil || d.Definition["name"] != "Alpha" {
		t.Errorf("a definition: %+v, %v", d, err)
	}
	if status, _, body := e.do("GET", "/v1/agents/zzz", ""); status != 404 {
		t.Errorf("neither: %d %s", status, body)
	}
}

// Start, contact and stop pass their requests on and say each refusal of
// the agent system with its status.
func TestAgentStartContactStop(t *testing.T) {
	e, f := dynamicEnv(t)
	c, stop := gateway.Pipe(e.srv)
	defer stop()
	ctx := t.Context()
	res, err := c.StartAgent(ctx, "a", "req-1", gateway.StartAgentRequest{Prompt: "find out", Name: "research", ReportTo: "a/main"})
	if err != nil {
		t.Fatal(err)
	}
	if want := (gateway.StartAgentResponse{ID: parentID, Session: parentID + "/main", Turn: 7}); res != want {
		t.Errorf("start: %+v, want %+v", res, want)
	}
	wantReq := agentsys.StartRequest{Template: "a", Prompt: "find out", Name: "research", Detached: true, Key: "req-1", ReportTo: "a/main"}
	_, starts, _ := f.asked()
	if diff := cmp.Diff([]agentsys.StartRequest{wantReq}, starts); diff != "" {
		t.Errorf("the start asked (-want +got):\n%s", diff)
	}
	cr, err := c.Contact(ctx, "a", gateway.ContactRequest{Connector: "telegram", Channel: "42", User: "ann", Text: "hi"})
	if err != nil || cr.ID != child1ID || cr.Turn != 9 || cr.Session != child1ID+"/main" {
		t.Errorf("contact: %+v, %v", cr, err)
	}
	stopped, err := c.StopAgent(ctx, parentID, "enough")
	_, _, stops := f.asked()
	if err != nil || !slices.Equal(stopped, []string{child2ID, parentID}) || !slices.Equal(stops, []string{parentID + " enough api"}) {
		t.Errorf("stop: %v, %v; asked %q", stopped, err, stops)
	}

	for _, tt := range []struct {
		method, path, hdr, body string
		status                  int
		code, says              string
	}{
		{"POST", "/v1/agents/a/start", "", `{"prompt":" "}`, 400, "bad_request", "prompt"},
		{"POST", "/v1/agents/a/start", "", `{"prompt":"x","turbo":true}`, 400, "bad_request", "turbo"},
		{"POST", "/v1/agents/a/start", "", `{"prompt":"x","report_to":"nowhere"}`, 400, "bad_request", "report_to"},
		{"POST", "/v1/agents/a/start", "bad key", `{"prompt":"x"}`, 400, "bad_request", "Idempotency-Key"},
		{"POST", "/v1/agents/missing/start", "", `{"prompt":"x"}`, 404, "not_found", "missing"},
		{"POST", "/v1/agents/notemplate/start", "", `{"prompt":"x"}`, 400, "bad_request", "cron agent"},
		{"POST", "/v1/agents/full/start", "", `{"prompt":"x"}`, 429, "agent_limit", "max_live 2"},
		{"POST", "/v1/agents/a/contact", "", `{"connector":"telegram","channel":"42","user":"","text":"hi"}`, 400, "bad_request", "user"},
		{"POST", "/v1/agents/over/contact", "", `{"connector":"t","channel":"c","user":"u","text":"hi"}`, 409, "agent_ended", "ended"},
		{"POST", "/v1/agents/far/stop", "", `{}`, 403, "forbidden", "reach"},
		{"POST", "/v1/agents/missing/stop", "", `{"reason":"x"}`, 404, "not_found", "missing"},
		{"POST", "/v1/agents/a/stop", "", `{"reason":`, 400, "bad_request", "body"},
	} {
		req, _ := http.NewRequestWithContext(ctx, tt.method, e.http.URL+tt.path, strings.NewReader(tt.body))
		if tt.hdr != "" {
			req.Header.Set("Idempotency-Key", tt.hdr)
		}
		resp, err := e.http.Client().Do(req)
		if err != nil {
			t.Fatal(err)
		}
		var got gateway.Error
		json.NewDecoder(resp.Body).Decode(&got)
		resp.Body.Close()
		if resp.StatusCode != tt.status || got.Code != tt.code || !strings.Contains(got.Error, tt.says) {
			t.Errorf("%s %s %s: %d %+v, want %d %s saying %q", tt.method, tt.path, tt.body, resp.StatusCode, got, tt.status, tt.code, tt.says)
		}
	}
}

// Without dynamic agents the list holds the definitions as before and the
// other routes say they are not available here.
func TestAgentsWithoutDynamicAgents(t *testing.T) {
	e := newEnv(t, setup{})
	status, _, body := e.do("GET", "/v1/agents", "")
	if list := decodeJSON[[]gateway.AgentInfo](t, "list", body); status != 200 || len(list) != 2 {
		t.Errorf("list: %d %s", status, body)
	}
	if status, _, body := e.do("GET", "/v1/agents?dynamic=true", ""); status != 200 || string(body) != "[]\n" {
		t.Errorf("dynamic agents: %d %s", status, body)
	}
	for _, r := range []struct{ method, path, body string }{
		{"GET", "/v1/agents/tree", ""},
		{"POST", "/v1/agents/a/start", `{"prompt":"x"}`},
		{"POST", "/v1/agents/a/contact", `{"connector":"t","channel":"c","user":"u","text":"x"}`},
		{"POST", "/v1/agents/" + parentID + "/stop", `{}`},
	} {
		status, _, body := e.do(r.method, r.path, r.body)
		if got := decodeJSON[gateway.Error](t, r.path, body); status != 501 || got.Code != "not_available" {
			t.Errorf("%s %s: %d %s, want 501 not_available", r.method, r.path, status, body)
		}
	}
}

// The dynamic agents' routes need the token over TCP, and refuse another
// Host or a foreign Origin with it, before the agent system hears of them.
func TestAgentRoutesRefuseWithoutToken(t *testing.T) {
	f := &fakeAgents{}
	srv := gateway.New(&gateway.Options{Agents: testAgents(), DynamicAgents: f})
	tk, tok := authTokens(t)
	ts := httptest.NewServer(srv.Protect(&gateway.AuthOptions{Tokens: tk, Listen: "127.0.0.1:7420"}))
	defer ts.Close()
	routes := []struct{ method, path, body string }{
		{"GET", "/v1/agents?dynamic=true", ""},
		{"GET", "/v1/agents/tree", ""},
		{"GET", "/v1/agents/" + parentID, ""},
		{"POST", "/v1/agents/a/start", `{"prompt":"x"}`},
		{"POST", "/v1/agents/a/contact", `{"connector":"t","channel":"c","user":"u","text":"x"}`},
		{"POST", "/v1/agents/" + parentID + "/stop", `{}`},
	}
	for _, r := range routes {
		for _, tt := range []struct {
			name   string
			hdr    map[string][]string
			status int
		}{
			{"no token", nil, 401},
			{"wrong token", h("Authorization", "Bearer "+gateway.NewToken()), 401},
			{"token in the query", nil, 401},
			{"other host", h("Authorization", "Bearer "+tok, "Host", "evil.example"), 403},
			{"foreign origin", h("Authorization", "Bearer "+tok, "Origin", "http://evil.example"), 403},
		} {
			p := r.path
			if tt.name == "token in the query" {
				p += map[bool]string{true: "&", false: "?"}[strings.Contains(p, "?")] + "token=" + tok
			}
			req, _ := http.NewRequestWithContext(t.Context(), r.method, ts.URL+p, strings.NewReader(r.body))
			for k, v := range tt.hdr {
				if k == "Host" {
					req.Host = v[0]
					continue
				}
				req.Header[k] = v
			}
			resp, err := ts.Client().Do(req)
			if err != nil {
				t.Fatal(err)
			}
			resp.Body.Close()
			if resp.StatusCode != tt.status {
				t.Errorf("%s %s, %s: %d, want %d", r.method, r.path, tt.name, resp.StatusCode, tt.status)
			}
		}
	}
	if filters, starts, stops := f.asked(); len(filters)+len(starts)+len(stops) != 0 {
		t.Errorf("a refused request reached the agent system: %+v %+v %+v", filters, starts, stops)
	}
	// With the token, each is served.
	for _, r := range routes {
		req, _ := http.NewRequestWithContext(t.Context(), r.method, ts.URL+r.path, strings.NewReader(r.body))
		req.Header.Set("Authorization", "Bearer "+tok)
		resp, err := ts.Client().Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode >= 300 {
			t.Errorf("%s %s with the token: %d", r.method, r.path, resp.StatusCode)
		}
	}
}
