package agentsys

import (
	"fmt"
	"strings"
	"testing"

	"agentd/internal/store"
	"agentd/internal/tool"
)

func TestPermanentTool(t *testing.T) {
	made := func(f *fakeSystem) {
		f.perm = PermanentResult{Instance: store.Instance{ID: childID, Type: store.InstancePermanent, Agent: "scribe"}, Created: true,
			Allow: []string{"clock", "recall"}, Ask: []string{"remember"}}
	}
	req := func(tools ...string) []any {
		return []any{PermanentRequest{Creator: callerID, CreatorSession: callerSession, CallID: "7.1", Name: "scribe",
			Description: "Takes notes", SystemPrompt: "You take notes.", Tools: tools}}
	}
	args := func(extra string) string {
		return `{"name":"scribe","description":"Takes notes","system_prompt":"You take notes."` + extra + `}`
	}
	for _, tc := range []toolCase{{
		name: "with tools",
		args: args(`,"tools":["clock","re*"]`),
		set:  made,
		want: req("clock", "re*"),
		out:  `{"id":"` + childID + `","name":"scribe","created":true,"allow":["clock","recall"],"ask":["remember"]}`,
	}, {
		name: "no tools, made before",
		args: args(``),
		set: func(f *fakeSystem) {
			f.perm = PermanentResult{Instance: store.Instance{ID: childID, Type: store.InstancePermanent, Agent: "scribe"}}
		},
		want: req(),
		out:  `{"id":"` + childID + `","name":"scribe","created":false,"allow":[]}`,
	}, {
		name: "no name", args: `{"description":"d","system_prompt":"p"}`, errs: []string{"name"},
	}, {
		name: "no description", args: `{"name":"scribe","system_prompt":"p"}`, errs: []string{"description"},
	}, {
		name: "no system prompt", args: `{"name":"scribe","description":"d"}`, errs: []string{"system_prompt"},
	}, {
		name: "a name that is a path", args: `{"name":"../scribe","description":"d","system_prompt":"p"}`, errs: []string{"name", "agent id"},
	}, {
		name: "a name shaped as an instance id", args: `{"name":"` + childID + `","description":"d","system_prompt":"p"}`, errs: []string{"name", "dynamic agent"},
	}, {
		name: "a blank description", args: `{"name":"scribe","description":"  ","system_prompt":"p"}`, errs: []string{"description", "empty"},
	}, {
		name: "a blank prompt", args: `{"name":"scribe","description":"d","system_prompt":"\n"}`, errs: []string{"system_prompt", "empty"},
	}, {
		name: "a prompt too long", args: `{"name":"scribe","description":"d","system_prompt":"` + strings.Repeat("é", maxSystemPrompt/2+1) + `"}`,
		errs: []string{"system_prompt", "longer than"},
	}, {
		name: "a tool with spaces", args: args(`,"tools":["clock"," recall"]`), errs: []string{"tools[1]"},
	}, {
		name: "tools not a list", args: args(`,"tools":"clock"`), errs: []string{"tools"},
	}, {
		name: "a name taken",
		args: args(``),
		set:  func(f *fakeSystem) { f.err = fmt.Errorf("agentsys: create scribe: %w", ErrExists) },
		want: req(),
		errs: []string{"exists"},
	}} {
		runTool(t, ToolPermanent, func(f *fakeSystem) tool.Tool { return permanentTool(f) }, []toolCase{tc})
	}
}
