package main

import (
	"encoding/json"
	"strings"
	"testing"

	"agentd/internal/event"
)

// refsScript's second step calls wm_get and, beside it, wm_set with
// arguments that refer to wm_get's result; its last step shows the system
// prompt, where working memory is.
const refsScript = `
match ^remember
call wm_set {"key": "cfg", "value": {"x": "blue", "n": 3}}
---
call wm_get {"key": "cfg"}
call wm_set {"key": "color", "value": "{{calls[0].data.x}}"}
call wm_set {"key": "label", "value": "n={{calls[0].data.n}}"}
call wm_set {"key": "bad", "value": "{{calls[0].data.nope}}"}
---
say {{system}}

match *
say {{system}}
`

// Template references and working memory in the prompt, through the
// binary and through agentd serve: a call's arguments take an earlier
// call's result, a bad reference is an error the model sees (its tool not
// called), the resolved arguments are in the log, and the model sees the
// working memory in its system prompt on the next step.
func TestTemplateRefsAndWorkingMemory(t *testing.T) {
	for _, mode := range []string{"binary", "daemon"} {
		t.Run(mode, func(t *testing.T) {
			addr := fake(t, refsScript)
			dir := dataDir(t, map[string]string{"agents/a.yaml": openaiAgent(addr, "")})
			if mode == "daemon" {
				serve(t, dir)
			}
			r := run(t, dir, "send", "a/s", "remember this")
			if r.code != 0 {
				t.Fatalf("send: %+v", r)
			}
			for _, want := range []string{"# Working memory", `cfg: {"x":"blue","n":3}`, `color: "blue"`, `label: "n=3"`} {
				mustContain(t, r.stdout, want)
			}
			if strings.Contains(r.stdout, "bad:") {
				t.Errorf("a call with a bad reference ran:\n%s", r.stdout)
			}
			r = run(t, dir, "log", "a/s", "--json")
			evs, _ := jsonEvents(t, r.stdout)
			results := map[string]event.ToolResultData{}
			var order []string
			for _, e := range evs {
				var d event.ToolResultData
				if e.Kind == event.ToolResult && json.Unmarshal(e.Data, &d) == nil {
					results[d.ID] = d
					order = append(order, d.ID)
				}
			}
			var resolved, refused int
			for _, id := range order {
				d := results[id]
				switch {
				case string(d.ResolvedArgs) == `{"key":"color","value":"blue"}`, string(d.ResolvedArgs) == `{"key":"label","value":"n=3"}`:
					resolved++
				case d.IsError && strings.Contains(d.Output, `{{calls[0].data.nope}}: calls[0].data has no member "nope"`):
					refused++
				}
			}
			if resolved != 2 || refused != 1 {
				t.Errorf("tool results %+v: want two with resolved args and one refused reference", results)
			}
		})
	}
}

// Working memory a person sets over the API (PUT …/working/{name}) is in
// the model's prompt at the next turn; agentd's own keys (_…), which the
// API refuses and only agentd writes, are not.
func TestWorkingMemoryPutShown(t *testing.T) {
	addr := fake(t, "match *\nsay {{system}}\n")
	dir := dataDir(t, map[string]string{"agents/a.yaml": openaiAgent(addr, "system_prompt: be brief\n")})
	if r := run(t, dir, "send", "a/w", "hi"); r.code != 0 || strings.Contains(r.stdout, "Working memory") {
		t.Fatalf("first send: %+v", r)
	}
	st := openDataStore(t, dir)
	s, err := st.SessionByAddress(t.Context(), "a", "w")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := st.SetWorking(t.Context(), s.ID, "_context_state", json.RawMessage(`{"secret":1}`)); err != nil {
		t.Fatal(err)
	}
	st.Close()
	serve(t, dir)
	hc := unixHTTP(dir)
	if a := call(t, hc, "PUT", "/v1/sessions/a/w/working/plan", `"paint the door"`); a.status/100 != 2 {
		t.Fatalf("PUT plan: %+v", a)
	}
	if a := call(t, hc, "PUT", "/v1/sessions/a/w/working/_context_state", `{"secret":2}`); a.status != 400 {
		t.Fatalf("PUT _context_state: %+v", a)
	}
	r := run(t, dir, "send", "a/w", "show")
	if r.code != 0 {
		t.Fatalf("send: %+v", r)
	}
	mustContain(t, r.stdout, "be brief")
	mustContain(t, r.stdout, `plan: "paint the door"`)
	if strings.Contains(r.stdout, "secret") {
		t.Errorf("agentd's own key was shown:\n%s", r.stdout)
	}
}
