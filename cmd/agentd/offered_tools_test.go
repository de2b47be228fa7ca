package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"

	"agentd/internal/gateway"
	"agentd/internal/model/fakellm"
	"agentd/internal/title"
)

// recorder is fakellm behind a proxy that keeps every request body.
type recorder struct {
	addr   string
	mu     sync.Mutex
	bodies [][]byte
}

// fakeRec starts fakellm with script behind a recorder.
func fakeRec(t *testing.T, script string) *recorder {
	t.Helper()
	s, err := fakellm.ParseScript("test.fake", []byte(script))
	if err != nil {
		t.Fatal(err)
	}
	h := fakellm.New(s, nil)
	rec := &recorder{}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	rec.addr = ln.Addr().String()
	srv := &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		rec.mu.Lock()
		rec.bodies = append(rec.bodies, body)
		rec.mu.Unlock()
		r.Body = io.NopCloser(bytes.NewReader(body))
		h.ServeHTTP(w, r)
	})}
	go srv.Serve(ln)
	t.Cleanup(func() { srv.Shutdown(context.Background()) })
	return rec
}

// chatRequest is what the recorder reads of a chat completion request.
type chatRequest struct {
	Messages []struct{ Role, Content string } `json:"messages"`
	Tools    []struct {
		Function struct{ Name string } `json:"function"`
	} `json:"tools"`
}

// lastTurnRequest returns the last model request of a turn. (Under serve,
// a session's first reply is followed by a request for its title, which
// may come at any time.)
func (r *recorder) lastTurnRequest(t *testing.T) chatRequest {
	t.Helper()
	r.mu.Lock()
	defer r.mu.Unlock()
	isTitle := func(req *chatRequest) bool {
		return len(req.Messages) > 0 && req.Messages[0].Role == "system" && req.Messages[0].Content == title.Prompt
	}
	for i := len(r.bodies) - 1; i >= 0; i-- {
		var req chatRequest
		if err := json.Unmarshal(r.bodies[i], &req); err != nil {
			t.Fatal(err)
		}
		if !isTitle(&req) {
			return req
		}
	}
	t.Fatal("no model request of a turn")
	return chatRequest{}
}

// lastTools returns the tool names of the last model request of a turn,
// sorted.
func (r *recorder) lastTools(t *testing.T) []string {
	t.Helper()
	req := r.lastTurnRequest(t)
	names := []string{}
	for _, tl := range req.Tools {
		names = append(names, tl.Function.Name)
	}
	slices.Sort(names)
	return names
}

// The model is offered only the tools an agent may use: a fresh agent
// (agentd init's, and the built-in one) the default set; an allowlisted
// agent only what its allow list names; an agent with deny rules every
// safe tool but the denied ones (and search_all only where
// memory.search_all allows it, skill only where a skill may be loaded),
// with ask tools offered; and an MCP server's tools under the same rules.
// Checked on the requests the model receives, through `agentd serve`.
func TestOfferedTools(t *testing.T) {
	rec := fakeRec(t, "match *\nsay ok\n")
	model := fmt.Sprintf("  provider: openai\n  name: fake\n  base_url: http://%s/v1\n", rec.addr)
	skillMD := "---\nname: tea\ndescription: Sell tea.\n---\n# Tea\n"

	// agentd init, with the demo server and a skill added, and its
	// assistant pointed at the fake model.
	dir := filepath.Join(t.TempDir(), "data")
	if r := run(t, dir, "init"); r.code != 0 {
		t.Fatalf("init: %+v", r)
	}
	demo := fmt.Sprintf("mcp_servers:\n  demo:\n    command: %q\n    args: [mcp, demo]\n", agentdBin)
	edit(t, filepath.Join(dir, "agentd.yaml"), "mcp_servers: {}\n", demo)
	assistant := filepath.Join(dir, "agents", "assistant.yaml")
	edit(t, assistant, "  provider: echo\n  name: echo\n", "  provider: openai\n  name: fake\n")
	edit(t, assistant, "  base_url: \"\"\n", fmt.Sprintf("  base_url: http://%s/v1\n", rec.addr))
	write(t, filepath.Join(dir, "skills", "tea", "SKILL.md"), skillMD)
	for id, extra := range map[string]string{
		"allowlisted": "tools:\n  allow: [clock, \"demo__e*\"]\n",
		"denier":      "tools:\n  deny: [\"wm_*\", demo__counter]\n  ask: [demo__add]\nskills: []\n",
		"searcher":    "tools:\n  builtin: [clock, search_all]\nmemory:\n  search_all: true\n",
		"no-servers":  "tools:\n  builtin: [clock]\nservers: []\n",
		"misspelt":    "tools:\n  builtin: [clok]\n",
	} {
		write(t, filepath.Join(dir, "agents", id+".yaml"), "model:\n"+model+extra)
	}

	// The built-in agent: no agent file, the fake model as default_model.
	builtinDir := dataDir(t, map[string]string{
		"agentd.yaml":         "default_model:\n" + model + demo,
		"skills/tea/SKILL.md": skillMD,
	})

	defaults := []string{"clock", "recall", "remember", "search_history", "skill", "wm_delete", "wm_get", "wm_set"}
	demoModel := []string{"demo__add", "demo__change_tools", "demo__counter", "demo__echo", "demo__fill", "demo__whoami"}
	without := func(list []string, drop ...string) []string {
		return slices.DeleteFunc(slices.Clone(list), func(s string) bool { return slices.Contains(drop, s) })
	}
	sorted := func(lists ...[]string) []string {
		out := slices.Concat(lists...)
		slices.Sort(out)
		return out
	}
	tests := []struct {
		dir, agent string
		want       []string
	}{
		{dir, "assistant", sorted(defaults, demoModel)},
		{builtinDir, "assistant", sorted(defaults, demoModel)},
		{dir, "allowlisted", []string{"clock", "demo__echo"}},
		{dir, "denier", sorted([]string{"artifact", "calculator", "clock", "find_relevant", "forget", "get_thread", "list_threads",
			"mcp_get_prompt", "mcp_list_prompts", "mcp_list_resources", "mcp_read_resource", "recall", "relate",
			"remember", "search_history"}, without(demoModel, "demo__counter"))},
		{dir, "searcher", sorted([]string{"clock", "search_all"}, demoModel)},
		{dir, "no-servers", []string{"clock"}},
	}
	// In process, without a daemon, the same.
	if r := run(t, builtinDir, "send", "assistant", "hi"); r.code != 0 {
		t.Fatalf("send in process: %+v", r)
	}
	if got, want := rec.lastTools(t), tests[1].want; !slices.Equal(got, want) {
		t.Errorf("the built-in assistant in process is offered\n%q\nwant\n%q", got, want)
	}
	var daemons []*daemon
	for _, d := range []string{dir, builtinDir} {
		daemons = append(daemons, serve(t, d))
		waitDemo(t, d)
	}
	// A misspelt name is reported, not silently offered nothing.
	mustContain(t, daemons[0].out.String(), `msg="tools.builtin names no built-in tool" agent=misspelt`)
	for _, tt := range tests {
		if r := run(t, tt.dir, "send", tt.agent, "hi"); r.code != 0 {
			t.Fatalf("send %s: %+v", tt.agent, r)
		}
		if got := rec.lastTools(t); !slices.Equal(got, tt.want) {
			t.Errorf("%s (%s) is offered\n%q\nwant\n%q", tt.agent, filepath.Base(filepath.Dir(tt.dir)), got, tt.want)
		}
	}
	var list []gateway.ServerInfo
	decodeOut(t, okRun(t, dir, "mcp", "list", "--json"), &list)
	if len(list) != 1 || list[0].Tools != 10 {
		t.Errorf("the demo server's tools changed (%+v): update demoModel", list)
	}
}

// edit replaces old with new in the file name, which must hold old.
func edit(t *testing.T, name, old, new string) {
	t.Helper()
	b, err := os.ReadFile(name)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(b), old) {
		t.Fatalf("%s has no %q", name, old)
	}
	write(t, name, strings.Replace(string(b), old, new, 1))
}

func write(t *testing.T, name, content string) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(name), 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(name, []byte(content), 0o600); err != nil {
		t.Fatal(err)
	}
}
