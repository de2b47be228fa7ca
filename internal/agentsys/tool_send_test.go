package agentsys

import (
	"fmt"
	"testing"

	"agentd/internal/runtime"
	"agentd/internal/tool"
)

func TestSendTool(t *testing.T) {
	delivered := func(session string, turn int64, dup bool) func(*fakeSystem) {
		return func(f *fakeSystem) {
			f.receipt, f.session = runtime.Receipt{Session: session, Turn: turn, Duplicate: dup}, session
		}
	}
	base := SendRequest{Caller: callerID, CallerSession: callerSession, Turn: 7, CallID: "7.1", Hops: 2}
	with := func(f func(*SendRequest)) []any {
		r := base
		f(&r)
		return []any{r}
	}
	for _, tc := range []toolCase{{
		name: "no target: the most recent user agent",
		args: `{"text":"the build is green"}`,
		set:  delivered("cu1a2b3c4d5e6f7g8h9i0j1k/main", 41, false),
		want: with(func(r *SendRequest) { r.Text = "the build is green" }),
		out:  `{"delivered_to":"cu1a2b3c4d5e6f7g8h9i0j1k","session":"cu1a2b3c4d5e6f7g8h9i0j1k/main","turn":41,"silent":false}`,
	}, {
		name: "a tag, silent",
		args: `{"target":"#memory-keeper","text":"Alice prefers email","silent":true}`,
		set:  delivered("memory-keeper/main", 5, false),
		want: with(func(r *SendRequest) { r.Target, r.Text, r.Silent = "#memory-keeper", "Alice prefers email", true }),
		out:  `{"delivered_to":"memory-keeper","session":"memory-keeper/main","turn":5,"silent":true}`,
	}, {
		name: "the same call again",
		args: `{"target":"` + childID + `","text":"stop after this file"}`,
		set:  delivered(childID+"/main", 9, true),
		want: with(func(r *SendRequest) { r.Target, r.Text = childID, "stop after this file" }),
		out:  `{"delivered_to":"` + childID + `","session":"` + childID + `/main","turn":9,"silent":false,"duplicate":true}`,
	}, {
		name: "no text", args: `{"target":"scribe"}`, errs: []string{"text"},
	}, {
		name: "a blank text", args: `{"text":"  "}`, errs: []string{"text", "empty"},
	}, {
		name: "a blank target", args: `{"target":" ","text":"hi"}`, errs: []string{"target", "blank"},
	}, {
		name: "silent not a boolean", args: `{"text":"hi","silent":1}`, errs: []string{"silent"},
	}, {
		name: "out of reach",
		args: `{"target":"admin","text":"hi"}`,
		set:  func(f *fakeSystem) { f.err = fmt.Errorf("agentsys: send to admin: %w", ErrReach) },
		want: with(func(r *SendRequest) { r.Target, r.Text = "admin", "hi" }),
		errs: []string{"out of reach", "agents.targets"},
	}, {
		name: "past the hop limit",
		args: `{"target":"scribe","text":"hi"}`,
		set:  func(f *fakeSystem) { f.err = fmt.Errorf("agentsys: send to scribe: %w: max_hops 10", ErrHops) },
		want: with(func(r *SendRequest) { r.Target, r.Text = "scribe", "hi" }),
		errs: []string{"hop limit reached", "max_hops"},
	}, {
		name: "an agent that has ended",
		args: `{"target":"` + childID + `","text":"more"}`,
		set:  func(f *fakeSystem) { f.err = fmt.Errorf("agentsys: send to %s: %w", childID, ErrEnded) },
		want: with(func(r *SendRequest) { r.Target, r.Text = childID, "more" }),
		errs: []string{"has ended"},
	}} {
		runTool(t, ToolSend, func(f *fakeSystem) tool.Tool { return sendTool(f) }, []toolCase{tc})
	}
}
