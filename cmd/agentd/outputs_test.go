package main

import (
	"encoding/json"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"

	"agentd/internal/event"
)

// outputScript is the model of the outputs' tests: a memory output; an
// invalid one the model fixes at its next step after seeing the error;
// a message to a chat the connector allows and one to a chat it does not.
const outputScript = `match ^note
call output {"type":"memory","content":{"text":"the lighthouse ships in March"}}
---
say noted

match ^fix
call output {"type":"memory","content":{"txt":"the harbour opens in May"}}
---
call output {"type":"memory","content":{"text":"the harbour opens in May"}}
---
say fixed

match ^announce
call output {"type":"message","content":{"connector":"tg","chat":"-100777","text":"Deploy done"}}
call output {"type":"message","content":{"connector":"tg","chat":"-100999","text":"Deploy done"}}
---
say announced

match *
say ok
`

// outputsAgent is an agent on the model at addr that has the built-in
// output types.
func outputsAgent(addr, extra string) string {
	return openaiAgent(addr, "tools:\n  builtin: [output, recall]\n"+extra)
}

// ignoreCallIDs compares outputs without their call ids (the engine's).
var ignoreCallIDs = cmpopts.IgnoreFields(event.OutputRef{}, "CallID", "Error")

// Outputs route to their handlers, through the binary and through the
// daemon: a memory output is in long-term memory after the turn; an
// invalid output is an error result the model sees, and its next step's
// valid one is stored; the turn's end lists each output with its status,
// then the text reply (agentd send --json, POST …/messages?wait=true).
func TestOutputs(t *testing.T) {
	for _, mode := range []string{"binary", "daemon"} {
		t.Run(mode, func(t *testing.T) {
			dir := dataDir(t, map[string]string{"agents/a.yaml": outputsAgent(fake(t, outputScript), "")})
			if mode == "daemon" {
				serve(t, dir)
			}
			evs, end := sendTurn(t, dir, "a", "note the date", "--session", "one")
			want := []event.OutputRef{{Type: "memory", Status: "ok"}, {Type: "text", Status: "ok"}}
			if diff := cmp.Diff(want, end.Outputs, ignoreCallIDs); diff != "" {
				t.Errorf("outputs (-want +got):\n%s", diff)
			}
			if rs := toolResultsOf(evs, "output"); len(rs) != 1 || rs[0].IsError || !strings.HasPrefix(rs[0].Output, "remembered") {
				t.Errorf("the output's result: %+v", rs)
			}
			if end.Outputs[0].CallID == "" {
				t.Error("an output call without its call id")
			}

			evs, end = sendTurn(t, dir, "a", "fix the date", "--session", "one")
			rs := toolResultsOf(evs, "output")
			if len(rs) != 2 || !rs[0].IsError || !strings.Contains(rs[0].Output, "the content does not match the type's schema") ||
				!strings.Contains(rs[0].Output, "/content/text") || rs[1].IsError {
				t.Fatalf("the invalid output and its fix: %+v", rs)
			}
			want = []event.OutputRef{{Type: "memory", Status: "error"}, {Type: "memory", Status: "ok"}, {Type: "text", Status: "ok"}}
			if diff := cmp.Diff(want, end.Outputs, ignoreCallIDs); diff != "" {
				t.Errorf("outputs (-want +got):\n%s", diff)
			}
			if end.Outputs[0].Error != rs[0].Output {
				t.Errorf("the error output says %q, its result %q", end.Outputs[0].Error, rs[0].Output)
			}

			for _, q := range []string{"lighthouse march", "harbour may"} {
				r := run(t, dir, "memory", "search", "a", q)
				if r.code != 0 || !strings.Contains(r.stdout, "insight") {
					t.Errorf("memory search %s: %+v", q, r)
				}
			}
			if r := run(t, dir, "memory", "search", "a", "harbour"); strings.Count(r.stdout, "insight") != 1 {
				t.Errorf("the invalid output was stored too: %s", r.stdout)
			}
			if mode != "daemon" {
				return
			}
			resp, err := unixHTTP(dir).Post("http://agentd/v1/sessions/a/api/messages?wait=true", "application/json", strings.NewReader(`{"text":"note again"}`))
			if err != nil {
				t.Fatal(err)
			}
			defer resp.Body.Close()
			b, _ := io.ReadAll(resp.Body)
			var mr struct{ End *event.TurnEndData }
			if err := json.Unmarshal(b, &mr); err != nil || mr.End == nil {
				t.Fatalf("wait=true: %d %s", resp.StatusCode, b)
			}
			want = []event.OutputRef{{Type: "memory", Status: "ok"}, {Type: "text", Status: "ok"}}
			if diff := cmp.Diff(want, mr.End.Outputs, ignoreCallIDs); diff != "" {
				t.Errorf("wait=true outputs (-want +got):\n%s", diff)
			}
		})
	}
}

// An agent without output types is not offered the output tool: a call of
// it is an unknown tool, an output in error.
func TestOutputsNotOffered(t *testing.T) {
	dir := dataDir(t, map[string]string{"agents/b.yaml": openaiAgent(fake(t, outputScript), "")})
	evs, end := sendTurn(t, dir, "b", "note the date")
	if rs := toolResultsOf(evs, "output"); len(rs) != 1 || !strings.Contains(rs[0].Output, `unknown tool "output"`) {
		t.Errorf("results: %+v", rs)
	}
	if len(end.Outputs) != 2 || end.Outputs[0].Status != "error" || end.Outputs[1].Type != "text" {
		t.Errorf("outputs: %+v", end.Outputs)
	}
}

// A message output goes to the connector's chat through its outbox, here
// Telegram's fake: a chat its policy allows gets it, another is refused
// and the model is told.
func TestOutputMessageTelegram(t *testing.T) {
	r, _ := tgRig(t)
	addr := fake(t, outputScript)
	if err := os.WriteFile(filepath.Join(r.dir, "agents", "assistant.yaml"), []byte(outputsAgent(addr, "type: user\n")), 0o600); err != nil {
		t.Fatal(err)
	}
	r.serve(t, false)
	r.put(t, tgRow(r.api, "    allow: [\"-100777\"]\n"))
	evs, end := sendTurn(t, r.dir, "assistant", "announce the deploy", "--session", "ops")
	r.said(t, "-100777", "the message output", plain, equals("Deploy done"))
	rs := toolResultsOf(evs, "output") // as they finished; sorted: in call order
	slices.SortFunc(rs, func(a, b event.ToolResultData) int { return strings.Compare(a.ID, b.ID) })
	if len(rs) != 2 || rs[0].IsError || !strings.Contains(rs[0].Output, "sent to tg chat -100777") ||
		!rs[1].IsError || !strings.Contains(rs[1].Output, "does not allow that chat") {
		t.Fatalf("results: %+v", rs)
	}
	want := []event.OutputRef{{Type: "message", Status: "ok"}, {Type: "message", Status: "error"}, {Type: "text", Status: "ok"}}
	if diff := cmp.Diff(want, end.Outputs, ignoreCallIDs); diff != "" {
		t.Errorf("outputs (-want +got):\n%s", diff)
	}
	if ms := r.w.Messages("-100999"); len(ms) != 0 {
		t.Errorf("a chat the policy does not allow got %+v", ms)
	}
	r.noSecret(t)
}
