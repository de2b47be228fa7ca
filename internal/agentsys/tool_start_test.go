package agentsys

import (
	"fmt"
	"strings"
	"testing"

	"agentd/internal/store"
	"agentd/internal/tool"
)

func TestStartTool(t *testing.T) {
	started := func(f *fakeSystem) {
		f.instance = store.Instance{ID: childID, Type: store.InstanceSubagent, Agent: childID, State: store.AgentRunning}
	}
	base := StartRequest{Caller: callerID, CallerSession: callerSession, Turn: 7, CallID: "7.1", Hops: 2}
	with := func(f func(*StartRequest)) []any {
		r := base
		f(&r)
		return []any{r}
	}
	for _, tc := range []toolCase{{
		name: "a sub-agent of the caller's own definition",
		args: `{"prompt":"find the flaky test"}`,
		set:  started,
		want: with(func(r *StartRequest) { r.Prompt = "find the flaky test" }),
		out:  `{"id":"` + childID + `","session":"` + childID + `/main","type":"subagent","state":"running"}`,
	}, {
		name: "every argument",
		args: `{"prompt":"watch the queue","template":"watcher","name":"queue watch","detached":true,"report":"silent"}`,
		set: func(f *fakeSystem) {
			f.instance = store.Instance{ID: childID, Type: store.InstanceBackground, Agent: childID, State: store.AgentStarting}
		},
		want: with(func(r *StartRequest) {
			r.Prompt, r.Template, r.Name, r.Detached, r.Report = "watch the queue", "watcher", "queue watch", true, store.ReportSilent
		}),
		out: `{"id":"` + childID + `","session":"` + childID + `/main","type":"background","state":"starting"}`,
	}, {
		name: "no prompt", args: `{"name":"x"}`, errs: []string{"prompt"},
	}, {
		name: "an empty prompt", args: `{"prompt":""}`, errs: []string{"prompt"},
	}, {
		name: "a blank prompt", args: `{"prompt":" \n\t"}`, errs: []string{"prompt", "empty"},
	}, {
		name: "a prompt past an input's size",
		args: `{"prompt":"` + strings.Repeat("x", store.MaxInstanceTask+1) + `"}`, errs: []string{"prompt", "longer than"},
	}, {
		name: "a name too long", args: `{"prompt":"p","name":"` + strings.Repeat("n", maxLabel+1) + `"}`, errs: []string{"name"},
	}, {
		name: "an unknown report", args: `{"prompt":"p","report":"loudly"}`, errs: []string{"report"},
	}, {
		name: "detached not a boolean", args: `{"prompt":"p","detached":"yes"}`, errs: []string{"detached"},
	}, {
		name: "an unknown argument", args: `{"prompt":"p","colour":"red"}`, errs: []string{"colour"},
	}, {
		name: "past the hop limit",
		args: `{"prompt":"p"}`,
		set:  func(f *fakeSystem) { f.err = fmt.Errorf("agentsys: start: %w: 11 > 10", ErrHops) },
		want: with(func(r *StartRequest) { r.Prompt = "p" }),
		errs: []string{"hop limit reached", "max_hops"},
	}, {
		name: "past the live children",
		args: `{"prompt":"p"}`,
		set:  func(f *fakeSystem) { f.err = fmt.Errorf("agentsys: start: %w: max_children 8", store.ErrLimit) },
		want: with(func(r *StartRequest) { r.Prompt = "p" }),
		errs: []string{"agent limit reached", "max_children 8"},
	}, {
		name: "a template the caller may not use",
		args: `{"prompt":"p","template":"admin"}`,
		set:  func(f *fakeSystem) { f.err = fmt.Errorf("agentsys: start: %w: admin", ErrNotTemplate) },
		want: with(func(r *StartRequest) { r.Prompt, r.Template = "p", "admin" }),
		errs: []string{"admin", "agents.templates"},
	}} {
		runTool(t, ToolStart, func(f *fakeSystem) tool.Tool { return startTool(f) }, []toolCase{tc})
	}
}
