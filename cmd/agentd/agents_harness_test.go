package main

// The harness of the many-agents tests (agents_types_test.go,
// agents_tools_test.go): the models of the agents, each a fakellm script
// of testdata/agents.txtar, and the reads of the dynamic agents and their
// logs through the binary.

import (
	"encoding/json"
	"io"
	"net/http"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"agentd/internal/event"
	"agentd/internal/gateway"
	"agentd/internal/txtar"
)

// agentModel starts fakellm with the script name.fake of
// testdata/agents.txtar and returns its address.
func agentModel(t *testing.T, name string) string {
	t.Helper()
	return fake(t, mustScript(t, name))
}

// mustScript is the script name.fake of testdata/agents.txtar.
func mustScript(t *testing.T, name string) string {
	t.Helper()
	a, err := txtar.ParseFile(filepath.Join("testdata", "agents.txtar"))
	if err != nil {
		t.Fatal(err)
	}
	s, ok := a.Get(name + ".fake")
	if !ok {
		t.Fatalf("testdata/agents.txtar has no %s.fake", name)
	}
	return s
}

// agentOn is an agent file on the model at addr with extra YAML.
func agentOn(addr, extra string) string {
	return "model:\n  provider: openai\n  name: fake\n  base_url: http://" + addr + "/v1\n  retries: 3\n" + extra
}

// way is one way through the binary: in process (every command opens
// agentd on the data directory and closes it, so every command is a
// restart from the log) or through `agentd serve`.
type way struct {
	dir    string
	daemon *daemon // nil in process
}

// restart restarts the daemon; in process every command is one already.
func (w *way) restart(t *testing.T) {
	t.Helper()
	if w.daemon != nil {
		w.daemon.stop(t)
		w.daemon = serve(t, w.dir)
	}
}

// eachWay runs check in process on a data directory made of files, then
// through the daemon on another.
func eachWay(t *testing.T, files map[string]string, check func(t *testing.T, w *way)) {
	t.Run("in process", func(t *testing.T) { check(t, &way{dir: dataDir(t, files)}) })
	t.Run("daemon", func(t *testing.T) {
		w := &way{dir: dataDir(t, files)}
		w.daemon = serve(t, w.dir)
		check(t, w)
		w.daemon.stop(t)
	})
}

// dynamicAgents lists the dynamic agents, those that ended too, with
// agentd agents' filters args.
func dynamicAgents(t *testing.T, dir string, args ...string) []gateway.AgentInfo {
	t.Helper()
	var list, out []gateway.AgentInfo
	decodeOut(t, okRun(t, dir, append([]string{"agents", "--all", "--json"}, args...)...), &list)
	for _, a := range list {
		if a.Dynamic {
			out = append(out, a)
		}
	}
	return out
}

// waitAgents polls the dynamic agents until ok holds of them. In process
// each poll runs agentd once: the work left queued goes on there.
func waitAgents(t *testing.T, dir, what string, ok func([]gateway.AgentInfo) bool) []gateway.AgentInfo {
	t.Helper()
	deadline := time.Now().Add(60 * time.Second)
	for {
		list := dynamicAgents(t, dir)
		if ok(list) {
			return list
		}
		if time.Now().After(deadline) {
			t.Fatalf("waited for %s; the dynamic agents: %+v", what, list)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// allEndedAgents reports whether every dynamic agent (at least n) ended.
func allEndedAgents(n int) func([]gateway.AgentInfo) bool {
	return func(list []gateway.AgentInfo) bool {
		if len(list) < n {
			return false
		}
		for _, a := range list {
			if !a.EndedAt.IsZero() || a.State == "done" || a.State == "failed" || a.State == "stopped" {
				continue
			}
			return false
		}
		return true
	}
}

// byType returns the agents of type typ.
func byType(list []gateway.AgentInfo, typ string) []gateway.AgentInfo {
	var out []gateway.AgentInfo
	for _, a := range list {
		if a.Type == typ {
			out = append(out, a)
		}
	}
	return out
}

// sessionLog reads a session's log through agentd log --json.
func sessionLog(t *testing.T, dir, addr string) []event.Event {
	t.Helper()
	evs, _ := jsonEvents(t, okRun(t, dir, "log", "--json", addr))
	return evs
}

// sendTurn sends text to a session through agentd send --json and
// returns the turn's events and end, whatever the exit code.
func sendTurn(t *testing.T, dir, agent, text string, args ...string) ([]event.Event, *event.TurnEndData) {
	t.Helper()
	r := run(t, dir, append([]string{"send", "--json", agent, text}, args...)...)
	evs, end := jsonEvents(t, r.stdout)
	if end == nil {
		t.Fatalf("agentd send %s %q: exit %d, no end\n%s\n%s", agent, text, r.code, r.stdout, r.stderr)
	}
	return evs, end
}

// inputs returns the inputs and system messages of a log, in order; of
// system messages from origin only when origin is not "".
func systemMessages(evs []event.Event, origin string) []event.InputData {
	var out []event.InputData
	for _, e := range evs {
		var d event.InputData
		if e.Kind == event.SystemMessage && e.Decode(&d) == nil && (origin == "" || d.Origin == origin) {
			out = append(out, d)
		}
	}
	return out
}

// agentEvents returns the agent events of a log with op ("" any).
func agentEvents(evs []event.Event, op string) []event.AgentData {
	var out []event.AgentData
	for _, e := range evs {
		var d event.AgentData
		if e.Kind == event.Agent && e.Decode(&d) == nil && (op == "" || d.Op == op) {
			out = append(out, d)
		}
	}
	return out
}

// said reports whether an agent's text in evs contains text.
func said(evs []event.Event, text string) bool {
	return slices.ContainsFunc(evs, func(e event.Event) bool {
		var d event.TextData
		return e.Kind == event.Text && e.Decode(&d) == nil && strings.Contains(d.Text, text)
	})
}

// waitLog polls a session's log until ok holds of it.
func waitLog(t *testing.T, dir, addr, what string, ok func([]event.Event) bool) []event.Event {
	t.Helper()
	deadline := time.Now().Add(60 * time.Second)
	for {
		r := run(t, dir, "log", "--json", addr)
		var evs []event.Event
		if r.code == 0 {
			evs, _ = jsonEvents(t, r.stdout)
			if ok(evs) {
				return evs
			}
		}
		if time.Now().After(deadline) {
			t.Fatalf("waited for %s in %s: exit %d\n%s%s", what, addr, r.code, r.stdout, r.stderr)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// daemonDo makes an HTTP request of the daemon over its socket and
// returns the status and body.
func daemonDo(t *testing.T, dir, method, path, body string, headers ...string) (int, string) {
	t.Helper()
	req, err := http.NewRequestWithContext(t.Context(), method, "http://agentd"+path, strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	for _, h := range headers {
		k, v, _ := strings.Cut(h, ": ")
		req.Header.Set(k, v)
	}
	resp, err := unixHTTP(dir).Do(req)
	if err != nil {
		t.Fatalf("%s %s: %v", method, path, err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b)
}

// contact is a person's message through a connector to a user or swarm
// template: POST /v1/agents/{template}/contact over the daemon's socket.
func contact(t *testing.T, dir, template, user, text string) gateway.ContactResponse {
	t.Helper()
	body, _ := json.Marshal(gateway.ContactRequest{Connector: "telegram", Channel: "dm", User: user, Text: text})
	code, out := daemonDo(t, dir, "POST", "/v1/agents/"+template+"/contact", string(body))
	if code != http.StatusAccepted {
		t.Fatalf("contact %s as %s: %d %s", template, user, code, out)
	}
	var r gateway.ContactResponse
	if err := json.Unmarshal([]byte(out), &r); err != nil {
		t.Fatal(err)
	}
	return r
}
