package tool

import (
	"context"
	"encoding/json"
	"testing"
)

// BenchmarkDispatch is what agentd does for every call before the tool
// runs: find it, apply the agent's policy, validate the arguments.
func BenchmarkDispatch(b *testing.B) {
	r := NewRegistry(nil)
	schema := json.RawMessage(`{"type":"object","properties":{"query":{"type":"string","minLength":1},"limit":{"type":"integer","minimum":1,"maximum":100},"tags":{"type":"array","items":{"type":"string"}}},"required":["query"],"additionalProperties":false}`)
	if err := r.Register(Func(Spec{Name: "search__find", Server: "search", InputSchema: schema},
		func(context.Context, *Call) (Result, error) { return Result{}, nil })); err != nil {
		b.Fatal(err)
	}
	p := Policy{Allow: []string{"calculator", "search__*"}, Deny: []string{"shell_*"}, Ask: []string{"payments_*"}}
	args := json.RawMessage(`{"query":"green tea","limit":5,"tags":["a","b"]}`)
	b.ReportAllocs()
	for b.Loop() {
		e, ok := r.snap.Load().byName["search__find"]
		if !ok || p.Decide(e.spec).Verdict != Allow {
			b.Fatal("not allowed")
		}
		if _, err := e.checkArgs(args); err != nil {
			b.Fatal(err)
		}
	}
}
