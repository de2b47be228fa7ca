package connector

import (
	"encoding/json"
	"errors"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/google/go-cmp/cmp"

	"agentd/internal/agentsys"
	"agentd/internal/extension"
	"agentd/internal/schema"
	"agentd/internal/testkit"
)

// TestCheck: what a connector row must be beyond its schema, each error
// under its JSON pointer.
func TestCheck(t *testing.T) {
	worker := testkit.Agent("worker")
	worker.Type = "background"
	m := New(nil, nil, nil, nil, map[string]Factory{"telegram": nil, "slack": nil}, &Options{
		Agents: defs{d: testkit.Agents{"assistant": testkit.Agent("assistant"), "worker": worker}, sys: new(atomic.Pointer[agentsys.System])}})
	for _, tc := range []struct {
		spec string
		want []string
	}{
		{`{"platform":"telegram","token_env":"TG","agent":"assistant"}`, nil},
		{`{"platform":"telegram","token":"${secret:TG}","agent":"assistant","mode":"webhook","public_url":"https://bot.example.org/h"}`, nil},
		{`{"platform":"telegram","token":"123456:AAE-literal","agent":"assistant"}`,
			[]string{"/spec/token: must be one secret reference such as ${secret:NAME} or ${env:NAME}; a token is never written in a row"}},
		{`{"platform":"telegram","token":"bot${env:TG}","agent":"assistant"}`,
			[]string{"/spec/token: must be one secret reference such as ${secret:NAME} or ${env:NAME}; a token is never written in a row"}},
		{`{"platform":"telegram","token_env":"TG","token":"${env:TG}","agent":"assistant"}`, []string{"/spec/token: give token_env or token, not both"}},
		{`{"platform":"telegram","agent":"assistant"}`, []string{"/spec/token_env: is required (or token, a secret reference)"}},
		{`{"platform":"telegram","token_env":"1TG","agent":"assistant"}`, []string{`/spec/token_env: "1TG" is not an environment variable's name`}},
		{`{"platform":"matrix","token_env":"TG","agent":"assistant"}`, []string{`/spec/platform: unknown platform "matrix" (this agentd knows slack, telegram)`}},
		{`{"platform":"telegram","token_env":"TG","agent":"nobody"}`, []string{`/spec/agent: no agent "nobody"`}},
		{`{"platform":"telegram","token_env":"TG","agent":"worker"}`, []string{"/spec/agent: worker is of type background: a connector talks to a user or swarm agent"}},
		{`{"platform":"telegram","token_env":"TG","agent":"assistant","api_url":"https://u:p@api.example.org"}`,
			[]string{"/spec/api_url: must not hold a user or password (use the token's reference)"}},
		{`{"platform":"telegram","token_env":"TG","agent":"assistant","api_url":"file:///etc"}`, []string{"/spec/api_url: must be an http(s) or ws(s) URL"}},
		{`{"platform":"telegram","token_env":"TG","agent":"assistant","mode":"webhook"}`,
			[]string{"/spec/public_url: the webhook mode needs the public URL the platform posts to"}},
		{`{"platform":"telegram","token_env":"TG","agent":"assistant","mode":"socket"}`, []string{`/spec/mode: telegram has no mode "socket" (it has polling, webhook)`}},
		{`{"platform":"slack","token_env":"SL","agent":"assistant"}`, []string{"/spec/app_token_env: the socket mode needs the app-level token's variable"}},
		{`{"platform":"telegram","token_env":"TG","agent":"assistant","stream":{"every":"100ms"}}`, []string{"/spec/stream/every: must be at least 300ms"}},
		{`{"platform":"telegram","token_env":"TG","agent":"assistant","colour":"red"}`, []string{`/spec: connector: spec: json: unknown field "colour"`}},
	} {
		var got []string
		for _, e := range m.Check(t.Context(), &extension.Doc{Type: "integration", Name: "x", Spec: json.RawMessage(tc.spec)}) {
			got = append(got, e.String())
		}
		if diff := cmp.Diff(tc.want, got); diff != "" {
			t.Errorf("%s (-want +got)\n%s", tc.spec, diff)
		}
	}
	// The schema's platform enum is the platforms' names.
	s, err := schema.Compile(m.Type().Schema)
	if err != nil {
		t.Fatal(err)
	}
	var v any
	json.Unmarshal([]byte(`{"platform":"discord","agent":"a"}`), &v)
	if errs := s.Validate(v); len(errs) != 1 || errs[0].Pointer != "/platform" {
		t.Errorf("schema errors = %v", errs)
	}
}

// TestTokenNeverShown: a platform's errors that quote the token reach the
// state, the logs and the row's error only with the reference in its
// place.
func TestTokenNeverShown(t *testing.T) {
	r := newRig(t, nil)
	calls := atomic.Int32{}
	r.m.platforms["fake"] = func(cfg Config, deps PlatformDeps) (Platform, Caps, error) {
		if calls.Add(1) == 1 {
			deps.State(StateDown, "", errors.New("GET https://api.example.org/bot"+cfg.Token+"/getMe: 401"))
			return nil, Caps{}, errors.New("dial https://api.example.org/bot" + cfg.Token + ": refused")
		}
		return r.p.factory(cfg, deps)
	}
	r.activate(`,"dm_policy":"open"`)
	waitFor(t, "the second try", func() bool { return calls.Load() >= 2 })
	st, _ := r.m.Get(t.Context(), "chat")
	noToken(t, "the state", st.LastError)
	if !strings.Contains(st.LastError, "${env:FAKE_TOKEN}") {
		t.Errorf("last error = %q", st.LastError)
	}
	noToken(t, "the logs", r.logs.String())
	js, _ := json.Marshal(r.m.List(t.Context()))
	noToken(t, "the list", string(js))
}
