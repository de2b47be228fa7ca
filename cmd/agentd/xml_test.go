package main

import (
	"slices"
	"strings"
	"testing"

	"agentd/internal/event"
)

// xmlScript is a model that only writes text: it thinks, calls the
// calculator twice through the XML tool protocol, then answers. Its text
// streams in pieces that split the tags.
const xmlScript = `match ^add
say <think>Adding first.</think>
say <action_call name="calculator">{"expression": "2+3*4"}</action_call>
chunks 7
---
say <action_call name="calculator">{"expression": "14*2"}</action_call>
chunks 5
---
say <output type="text">The answer is 28.</output>
chunks 9
`

var xmlKinds = []event.Kind{event.Input, event.ModelCall, event.Thought, event.ToolCall, event.ToolResult,
	event.ModelCall, event.ToolCall, event.ToolResult, event.ModelCall, event.Text, event.TurnEnd}

// checkXMLTurn checks the events of an XML-protocol turn of xmlScript:
// the same kinds a native turn logs, the calculator's results, the reply.
func checkXMLTurn(t *testing.T, evs []event.Event) {
	t.Helper()
	var got []event.Kind
	var outputs []string
	var reply string
	for _, e := range evs {
		switch e.Kind {
		case event.Marker, event.Lifecycle:
			continue
		case event.ToolResult:
			var d event.ToolResultData
			e.Decode(&d)
			outputs = append(outputs, d.Output)
		case event.Text:
			var d event.TextData
			e.Decode(&d)
			reply = d.Text
		}
		got = append(got, e.Kind)
	}
	if !slices.Equal(got, xmlKinds) {
		t.Fatalf("events %v, want %v", got, xmlKinds)
	}
	if !slices.Equal(outputs, []string{"14", "28"}) || reply != "The answer is 28." {
		t.Fatalf("results %q, reply %q", outputs, reply)
	}
}

// A model that only writes text completes multi-step tool use through
// the XML protocol, through the binary and through the daemon; agentd
// log shows the turn as a native one's.
func TestXMLProtocolTurn(t *testing.T) {
	addr := fake(t, xmlScript)
	dir := dataDir(t, map[string]string{"agents/calc.yaml": openaiAgent(addr, "tool_protocol: xml\n")})
	r := run(t, dir, "send", "calc", "add these", "--json", "--session", "cli")
	if r.code != 0 {
		t.Fatalf("send: %+v", r)
	}
	evs, end := jsonEvents(t, r.stdout)
	checkXMLTurn(t, evs)
	if end == nil || end.Status != "done" || end.Reply != "The answer is 28." || end.Steps != 3 {
		t.Fatalf("end %+v", end)
	}

	d := serve(t, dir)
	r = run(t, dir, "send", "calc", "add these", "--session", "daemon")
	if r.code != 0 || strings.TrimSpace(r.stdout) != "The answer is 28." || strings.Contains(r.stdout, "<") {
		t.Fatalf("send through the daemon: %+v", r)
	}
	evs, _ = jsonEvents(t, okRun(t, dir, "log", "calc/daemon", "--json"))
	checkXMLTurn(t, evs)
	d.stop(t)
}

// tool_protocol auto (the default): a server that answers a request with
// tools "does not support tools" gets the XML protocol, in the daemon for
// every turn after; the turn that learnt it is not failed.
func TestXMLProtocolAuto(t *testing.T) {
	addr := fake(t, strings.Replace(xmlScript, "match ^add\n", "match ^add\nnotools\n", 1))
	dir := dataDir(t, map[string]string{"agents/calc.yaml": openaiAgent(addr, "")})
	serve(t, dir)
	for _, key := range []string{"one", "two"} {
		r := run(t, dir, "send", "calc", "add these", "--session", key)
		if r.code != 0 || strings.TrimSpace(r.stdout) != "The answer is 28." {
			t.Fatalf("send %s: %+v", key, r)
		}
	}
	evs, _ := jsonEvents(t, okRun(t, dir, "log", "calc/one", "--json"))
	if len(evs) < 2 || evs[1].Kind != event.ModelCall || !strings.Contains(string(evs[1].Data), "does not support tools") {
		t.Fatalf("the first turn's first model call: %v", evs)
	}
	checkXMLTurn(t, append(evs[:1:1], evs[2:]...))
	evs, _ = jsonEvents(t, okRun(t, dir, "log", "calc/two", "--json"))
	checkXMLTurn(t, evs)
}
