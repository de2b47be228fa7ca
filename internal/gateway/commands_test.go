package gateway_test

import (
	"context"
	"encoding/json"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"agentd/internal/command"
	"agentd/internal/gateway"
	"agentd/internal/job"
	"agentd/internal/store"
	"agentd/internal/store/sqlite"
)

// directory is the agents a line may address: a and b (tagged helper),
// and c, which is disabled.
type directory struct{ agents }

func (directory) Disabled(_ context.Context, id string) bool { return id == "c" }

// extEnv is the API with the command standup (answered by the session's
// agent), ask (answered by agent b) and the job brief active; b is
// tagged helper, and c a disabled agent.
func extEnv(t *testing.T) *env {
	t.Helper()
	ags := testAgents()
	ags["b"].Tags = []string{"helper"}
	router := command.NewRouterWith(directory{ags})
	h := command.NewHandler(router, testAgents())
	for name, spec := range map[string]string{
		"standup": `{"description":"the standup","arguments":[{"name":"team","required":true}],"prompt":"Standup for {{team}}.","budget":{"max_steps":3}}`,
		"ask":     `{"arguments":[{"name":"q","rest":true,"required":true}],"prompt":"Q: {{q}}","agent":"b"}`,
	} {
		if err := h.Activate(context.Background(), &store.Extension{Type: "command", Name: name, Spec: json.RawMessage(spec)}); err != nil {
			t.Fatal(err)
		}
	}
	return newEnv(t, setup{options: func(o *gateway.Options) {
		o.Commands = router
		r := job.New(o.Runtime, o.Sessions.(*sqlite.Store), testAgents(), nil)
		t.Cleanup(r.Close)
		if err := r.Activate(context.Background(), &store.Extension{Type: "job", Name: "brief",
			Spec: json.RawMessage(`{"agent":"a","prompt":"brief on {{payload.topic}}"}`)}); err != nil {
			t.Fatal(err)
		}
		o.Jobs = r
	}})
}

func TestCommandInAMessage(t *testing.T) {
	e := extEnv(t)
	for _, tt := range []struct {
		name, body string
		status     int
		session    string
		reply      string
		err        string
	}{
		{"the session's agent", `{"text":"/standup platform"}`, 200, "a/k", "re: Standup for platform.", ""},
		{"another agent, in its own session", `{"text":"/ask why  not?"}`, 200, "b/a:k", "re: Q: why  not?", ""},
		{"literal", `{"text":"/standup platform","literal":true}`, 200, "a/k", "re: /standup platform", ""},
		{"not a command", `{"text":"/nope x"}`, 200, "a/k", "re: /nope x", ""},
		{"missing argument", `{"text":"/standup"}`, 400, "", "", "missing argument team; usage: /standup <team>"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			status, _, body := e.do("POST", "/v1/sessions/a/k/messages?wait=true", tt.body)
			if status != tt.status {
				t.Fatalf("status %d: %s", status, body)
			}
			if tt.err != "" {
				var f gateway.Error
				if json.Unmarshal(body, &f); !strings.Contains(f.Error, tt.err) || f.Code != "bad_request" {
					t.Fatalf("body %s, want %q", body, tt.err)
				}
				return
			}
			var resp gateway.MessageResponse
			if err := json.Unmarshal(body, &resp); err != nil {
				t.Fatal(err)
			}
			if resp.Session != tt.session || resp.End == nil || resp.End.Reply != tt.reply {
				t.Fatalf("answer %s; want session %s and reply %q", body, tt.session, tt.reply)
			}
		})
	}
	// The refused command started no turn and made no session.
	if status, _, body := e.do("POST", "/v1/sessions/a/fresh/messages", `{"text":"/standup"}`); status != 400 {
		t.Fatalf("status %d: %s", status, body)
	}
	if status, _, _ := e.do("GET", "/v1/sessions/a/fresh", ""); status != 404 {
		t.Fatalf("a refused command made its session: %d", status)
	}
	// The command's budget went with its input.
	_, _, body := e.do("POST", "/v1/sessions/a/k/messages", `{"text":"/standup infra"}`)
	var rc gateway.MessageResponse
	json.Unmarshal(body, &rc)
	it, err := e.st.InboxItem(context.Background(), rc.Turn)
	if err != nil || string(it.Options) != `{"budgets":{"max_steps":3}}` {
		t.Fatalf("options %s (%v)", it.Options, err)
	}
	e.wait(rc.Turn)
}

// The chat prefixes route a message to a command (! as /) or an agent
// (@id, #tag); a line that routes nowhere, a literal one or a system one
// is sent byte for byte as written.
func TestPrefixesInAMessage(t *testing.T) {
	e := extEnv(t)
	for _, tt := range []struct {
		name, body string
		status     int
		session    string
		reply      string
		err        string
	}{
		{"! as /", `{"text":"!standup platform"}`, 200, "a/k", "re: Standup for platform.", ""},
		{"@ another agent, in its own session", `{"text":"@b find  the notes"}`, 200, "b/a:k", "re: find  the notes", ""},
		{"@ the session's own agent", `{"text":"@a hello"}`, 200, "a/k", "re: hello", ""},
		{"# a tag", `{"text":"#helper what now?"}`, 200, "b/a:k", "re: what now?", ""},
		{"@ with nothing to say", `{"text":"@b  "}`, 400, "", "", "@b: nothing to say; usage: @b <text>"},
		{"# with nothing to say", `{"text":"#helper"}`, 400, "", "", "#helper: nothing to say"},
		{"! with a bad argument", `{"text":"!standup"}`, 400, "", "", "!standup: missing argument team; usage: !standup <team>"},
		{"@ no agent", `{"text":"@bob said hi"}`, 200, "a/k", "re: @bob said hi", ""},
		{"an email address", `{"text":"b@example.com wrote"}`, 200, "a/k", "re: b@example.com wrote", ""},
		{"@ mid-line", `{"text":"ask @b later"}`, 200, "a/k", "re: ask @b later", ""},
		{"# no tag", `{"text":"#1 priority"}`, 200, "a/k", "re: #1 priority", ""},
		{"! no command", `{"text":"!important"}`, 200, "a/k", "re: !important", ""},
		{"literal @", `{"text":"@b hi","literal":true}`, 200, "a/k", "re: @b hi", ""},
		{"literal #", `{"text":"#helper hi","literal":true}`, 200, "a/k", "re: #helper hi", ""},
		{"literal !", `{"text":"!standup x","literal":true}`, 200, "a/k", "re: !standup x", ""},
	} {
		t.Run(tt.name, func(t *testing.T) {
			status, _, body := e.do("POST", "/v1/sessions/a/k/messages?wait=true", tt.body)
			if status != tt.status {
				t.Fatalf("status %d: %s", status, body)
			}
			if tt.err != "" {
				var f gateway.Error
				if json.Unmarshal(body, &f); !strings.Contains(f.Error, tt.err) || f.Code != "bad_request" {
					t.Fatalf("body %s, want %q", body, tt.err)
				}
				return
			}
			var resp gateway.MessageResponse
			if err := json.Unmarshal(body, &resp); err != nil {
				t.Fatal(err)
			}
			if resp.Session != tt.session || resp.End == nil || resp.End.Reply != tt.reply {
				t.Fatalf("answer %s; want session %s and reply %q", body, tt.session, tt.reply)
			}
		})
	}
	// A system message is never routed.
	if status, _, body := e.do("POST", "/v1/sessions/a/sys/messages", `{"text":"@b hi","system":true}`); status != 202 {
		t.Fatalf("system: %d %s", status, body)
	}
	if status, _, _ := e.do("GET", "/v1/sessions/b/a:sys", ""); status != 404 {
		t.Fatalf("a system message was routed to b: %d", status)
	}
	// A disabled agent addressed with @ is refused as a post to its
	// session is, and the line does not reach the caller's agent.
	dStatus, _, direct := e.do("POST", "/v1/sessions/c/a:k/messages", `{"text":"hi"}`)
	status, _, body := e.do("POST", "/v1/sessions/a/k/messages", `{"text":"@c hi"}`)
	var df, f gateway.Error
	json.Unmarshal(direct, &df)
	json.Unmarshal(body, &f)
	if status != 404 || status != dStatus || f != df {
		t.Fatalf("@c: %d %s; a direct post: %d %s", status, body, dStatus, direct)
	}
}

func TestCommandList(t *testing.T) {
	status, _, body := extEnv(t).do("GET", "/v1/commands", "")
	var got gateway.CommandList
	json.Unmarshal(body, &got)
	want := gateway.CommandList{Commands: []command.Info{{Name: "ask", Usage: "/ask <q…>", Agent: "b"}, {Name: "standup", Usage: "/standup <team>", Description: "the standup"}},
		Prefixes: command.Prefixes, Tags: []command.Tag{{Tag: "helper", Agents: []string{"b"}}}}
	if diff := cmp.Diff(want, got); status != 200 || diff != "" {
		t.Fatalf("%d %s", status, diff)
	}
	if p := got.Prefixes; len(p) != 4 || p[0].Prefix != "/" || p[1].Prefix != "!" || p[2].Prefix != "@" || p[3].Prefix != "#" {
		t.Fatalf("prefixes %+v", p)
	}
	status, _, body = newEnv(t, setup{}).do("GET", "/v1/commands", "")
	if status != 200 || string(body) != `{"commands":[],"prefixes":[],"tags":[]}`+"\n" {
		t.Fatalf("without commands: %d %s", status, body)
	}
}

func TestJobRun(t *testing.T) {
	e := extEnv(t)
	status, _, body := e.do("POST", "/v1/jobs/brief/run?wait=true", `{"vars":{"topic":"rust"}}`)
	var res job.Result
	if err := json.Unmarshal(body, &res); err != nil || status != 200 || res.Status != store.RunDone || res.Output != "re: brief on rust" ||
		!strings.HasPrefix(res.Session, "a/job:brief:") {
		t.Fatalf("%d %s", status, body)
	}
	status, _, body = e.do("POST", "/v1/jobs/brief/run", "")
	res = job.Result{}
	if err := json.Unmarshal(body, &res); err != nil || status != 202 || res.Status != store.RunRunning || res.Turn == 0 {
		t.Fatalf("%d %s", status, body)
	}
	if end := e.wait(res.Turn); end.Reply != "re: brief on " {
		t.Fatalf("end %+v", end)
	}
	if status, _, body = e.do("POST", "/v1/jobs/nope/run", ""); status != 404 || !strings.Contains(string(body), `no such job \"nope\"`) {
		t.Fatalf("unknown job: %d %s", status, body)
	}
	if status, _, body = newEnv(t, setup{}).do("POST", "/v1/jobs/brief/run", ""); status != 501 {
		t.Fatalf("without jobs: %d %s", status, body)
	}
}
