package openaiapi_test

import (
	"bufio"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"agentd/internal/agent"
	"agentd/internal/event"
	"agentd/internal/gateway"
	"agentd/internal/gateway/openaiapi"
	"agentd/internal/runtime"
	"agentd/internal/store"
	"agentd/internal/store/sqlite"
	"agentd/internal/testkit"
	"agentd/internal/tool"
)

// agents is a fixed set of agent definitions.
type agents = testkit.Agents

// script is what the fake model answers.
const script = `
match (?m)^history
say n={{n_messages}} last={{last_user}}

match ^tool
say Let me look.
call lookup {}
---
say Found: {{tool_result}}

match ^slow
delay 300ms
say finished slowly

match ^fail
fail 400

match ^long
chunks 5
say one two three four five six seven eight nine ten

match (?m)^picture
say I see {{images}} image(s).

match *
usage 7 3
say You said: {{last_user}}
`

// token is the bearer token the test server wants, standing for the
// gateway's authentication.
const token = "test-Wq3xP9kZr7Lm2Vb8Nc4Ty6Hd5Jf"

// env is the API served over HTTP by a runtime built from real parts
// (testkit): a SQLite store, the engine, the OpenAI model client and
// fakellm.
type env struct {
	t    testing.TB
	st   *sqlite.Store
	rt   *runtime.Runtime
	http *httptest.Server
}

func newEnv(t testing.TB) *env {
	t.Helper()
	return newEnvOf(t, envOptions{})
}

// newEnvWith is newEnv with the runtime's store wrapped by wrap.
func newEnvWith(t testing.TB, wrap func(store.Store) store.Store) *env {
	t.Helper()
	return newEnvOf(t, envOptions{wrap: wrap})
}

// envOptions configure newEnvOf; the zero value gives newEnv's env.
type envOptions struct {
	wrap func(store.Store) store.Store // wraps the runtime's store
	// gateway serves the API as agentd serve does, mounted in the gateway
	// behind its authentication (with the token token), rather than alone
	// behind a stand-in; changes the gateway's options.
	gateway func(*gateway.Options)
}

// brokenFile is why the file of the agent broken does not load.
var brokenFile = &agent.ConfigError{Errors: []agent.FieldError{
	{File: "agents/broken.yaml", Line: 5, Field: "model.params.temperature", Msg: `must be a number, got "hot"`},
	{File: "agents/broken.yaml", Line: 7, Field: "budgets.max_steps", Msg: "must not be negative, got -3"},
}}

// withFiles is agents whose files may not load (errs by id).
type withFiles struct {
	agents
	errs map[string]error
}

func (a withFiles) FileError(id string) error { return a.errs[id] }

// newEnvOf returns the API served over HTTP by a runtime built from real
// parts: a SQLite store, the engine, the OpenAI model client and fakellm.
// The agents are assistant and helper, and broken, whose file is invalid.
func newEnvOf(t testing.TB, o envOptions) *env {
	t.Helper()
	model := agent.Model{Provider: agent.ProviderOpenAI, Name: "fake"}
	defs := agents{
		"assistant": {ID: "assistant", Name: "Assistant", Description: "Answers questions.", Type: agent.TypeUser, Model: model},
		"helper":    {ID: "helper", Name: "Helper", Type: agent.TypeUser, Model: model},
	}
	lookup := tool.Func(tool.Spec{Name: "lookup", Description: "Looks something up.", InputSchema: json.RawMessage(`{"type":"object"}`), ReadOnly: true},
		func(context.Context, *tool.Call) (tool.Result, error) { return tool.Result{Output: "42"}, nil })
	files := withFiles{defs, map[string]error{"broken": brokenFile}}
	k := testkit.New(t, &testkit.Options{Agents: files, Script: script, Tools: []tool.Tool{lookup}, Wrap: o.wrap})
	api := openaiapi.New(k.Runtime, files, &openaiapi.Options{Created: time.Unix(1700000000, 0)})
	var h http.Handler
	if o.gateway != nil {
		h = throughGateway(t, k.Runtime, k.Store, files, api, o.gateway)
	} else {
		h = http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			if r.Header.Get("Authorization") != "Bearer "+token {
				http.Error(w, "unauthorized", http.StatusUnauthorized)
				return
			}
			api.ServeHTTP(w, r)
		})
	}
	e := &env{t: t, st: k.Store, rt: k.Runtime, http: httptest.NewServer(h)}
	// Cleanups run last first: the server closes before the Kit.
	t.Cleanup(func() {
		e.http.CloseClientConnections()
		e.http.Close()
	})
	return e
}

// throughGateway mounts api in the gateway, as agentd serve does, behind
// its authentication with the token token.
func throughGateway(t testing.TB, rt *runtime.Runtime, st *sqlite.Store, defs withFiles, api http.Handler, change func(*gateway.Options)) http.Handler {
	t.Helper()
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, gateway.TokenFile), []byte(token+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	tk, err := gateway.OpenTokens(dir, nil)
	if err != nil {
		t.Fatal(err)
	}
	o := &gateway.Options{Runtime: rt, Sessions: st, Agents: defs, OpenAI: api}
	change(o)
	return gateway.New(o).Protect(&gateway.AuthOptions{Tokens: tk, Listen: "127.0.0.1:0"})
}

// response is an answer read whole.
type response struct {
	status int
	header http.Header
	body   []byte
}

// post sends a chat completion request with the given extra headers.
func (e *env) post(t testing.TB, body string, headers ...string) response {
	t.Helper()
	return e.do(t, "POST", "/v1/chat/completions", body, headers...)
}

func (e *env) do(t testing.TB, method, path, body string, headers ...string) response {
	t.Helper()
	req, err := http.NewRequestWithContext(t.Context(), method, e.http.URL+path, strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Authorization", "Bearer "+token)
	req.Header.Set("Content-Type", "application/json")
	for i := 0; i+1 < len(headers); i += 2 {
		req.Header.Set(headers[i], headers[i+1])
	}
	resp, err := e.http.Client().Do(req)
	if err != nil {
		t.Fatalf("%s %s: %v", method, path, err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	return response{status: resp.StatusCode, header: resp.Header, body: b}
}

// sse splits a server-sent event stream into its data fields.
func sse(t testing.TB, body []byte) []string {
	t.Helper()
	var out []string
	sc := bufio.NewScanner(strings.NewReader(string(body)))
	sc.Buffer(nil, 1<<20)
	for sc.Scan() {
		line := sc.Text()
		switch {
		case line == "":
		case strings.HasPrefix(line, "data: "):
			out = append(out, strings.TrimPrefix(line, "data: "))
		default:
			t.Fatalf("unexpected line in event stream: %q", line)
		}
	}
	return out
}

// inputs returns the texts of a session's input events.
func (e *env) inputs(t testing.TB, addr string) []string {
	t.Helper()
	_, evs, err := e.rt.Events(t.Context(), addr, 0, 1000)
	if err != nil {
		t.Fatalf("events of %s: %v", addr, err)
	}
	var out []string
	for _, ev := range evs {
		if ev.Kind == event.Input {
			var d event.InputData
			if err := ev.Decode(&d); err != nil {
				t.Fatal(err)
			}
			out = append(out, d.Text)
		}
	}
	return out
}
