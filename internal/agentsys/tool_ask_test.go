package agentsys

import (
	"fmt"
	"testing"
	"time"

	"agentd/internal/tool"
)

func TestAskTool(t *testing.T) {
	answered := func(f *fakeSystem) {
		f.answer = AskResult{Answer: "Alice prefers email", Status: "done", CostUSD: 0.01, Session: "memory-keeper/ask:" + callerID}
	}
	base := AskRequest{Caller: callerID, CallerSession: callerSession, CallID: "7.1", Hops: 2}
	with := func(f func(*AskRequest)) []any {
		r := base
		f(&r)
		return []any{r}
	}
	for _, tc := range []toolCase{{
		name: "a tag",
		args: `{"name":"#memory-keeper","question":"How does Alice like to be reached?"}`,
		set:  answered,
		want: with(func(r *AskRequest) { r.Target, r.Question = "#memory-keeper", "How does Alice like to be reached?" }),
		out:  `{"answer":"Alice prefers email","status":"done","cost_usd":0.01,"session":"memory-keeper/ask:` + callerID + `"}`,
	}, {
		name: "a timeout",
		args: `{"name":"scribe","question":"q","timeout":"90s"}`,
		set:  answered,
		want: with(func(r *AskRequest) { r.Target, r.Question, r.Timeout = "scribe", "q", 90*time.Second }),
		out:  `{"answer":"Alice prefers email","status":"done","cost_usd":0.01,"session":"memory-keeper/ask:` + callerID + `"}`,
	}, {
		name: "no name", args: `{"question":"q"}`, errs: []string{"name"},
	}, {
		name: "no question", args: `{"name":"scribe"}`, errs: []string{"question"},
	}, {
		name: "a blank question", args: `{"name":"scribe","question":"\n"}`, errs: []string{"question", "empty"},
	}, {
		name: "a timeout that is no duration", args: `{"name":"scribe","question":"q","timeout":"soon"}`, errs: []string{"timeout", "soon"},
	}, {
		name: "a negative timeout", args: `{"name":"scribe","question":"q","timeout":"-1m"}`, errs: []string{"timeout"},
	}, {
		name: "a timeout as a number", args: `{"name":"scribe","question":"q","timeout":90}`, errs: []string{"timeout"},
	}, {
		name: "past the hop limit",
		args: `{"name":"scribe","question":"q"}`,
		set:  func(f *fakeSystem) { f.err = fmt.Errorf("agentsys: ask scribe: %w: max_hops 10", ErrHops) },
		want: with(func(r *AskRequest) { r.Target, r.Question = "scribe", "q" }),
		errs: []string{"hop limit reached", "max_hops"},
	}} {
		runTool(t, ToolAsk, func(f *fakeSystem) tool.Tool { return askTool(f) }, []toolCase{tc})
	}
}
