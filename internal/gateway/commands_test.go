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

// extEnv is the API with the command standup (answered by the session's
// agent), ask (answered by agent b) and the job brief active.
func extEnv(t *testing.T) *env {
	t.Helper()
	router := command.NewRouter()
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

func TestCommandList(t *testing.T) {
	status, _, body := extEnv(t).do("GET", "/v1/commands", "")
	var got gateway.CommandList
	json.Unmarshal(body, &got)
	want := []command.Info{{Name: "ask", Usage: "/ask <q…>", Agent: "b"}, {Name: "standup", Usage: "/standup <team>", Description: "the standup"}}
	if diff := cmp.Diff(want, got.Commands); status != 200 || diff != "" {
		t.Fatalf("%d %s", status, diff)
	}
	status, _, body = newEnv(t, setup{}).do("GET", "/v1/commands", "")
	if status != 200 || string(body) != `{"commands":[]}`+"\n" {
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
