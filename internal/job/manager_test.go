package job_test

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"testing"
	"testing/fstest"

	"github.com/google/go-cmp/cmp"

	"agentd/internal/command"
	"agentd/internal/extension"
	"agentd/internal/job"
	"agentd/internal/store"
	"agentd/internal/testkit"
)

// TestManagerRefusesUnknownAgents: the manager, asked to take a job or a
// command whose agent does not exist, refuses it (the API's 400) naming
// /spec/agent, and a valid one passes.
func TestManagerRefusesUnknownAgents(t *testing.T) {
	agents := testkit.Agents{"assistant": testkit.Agent("assistant")}
	r := job.New(nil, nil, agents, nil)
	defer r.Close()
	m := extension.New(nil, &extension.Options{Builtins: fstest.MapFS{}})
	for _, ty := range []extension.Type{r.Type(), command.Type(command.NewRouter(), agents)} {
		if err := m.Register(ty); err != nil {
			t.Fatal(err)
		}
	}
	ctx := context.Background()
	for _, d := range []extension.Doc{
		{Type: "job", Name: "x", Spec: json.RawMessage(`{"agent":"nobody","prompt":"p"}`)},
		{Type: "command", Name: "x", Spec: json.RawMessage(`{"agent":"nobody","prompt":"p"}`)},
	} {
		err := m.Check(ctx, d)
		if !errors.Is(err, extension.ErrInvalid) || !strings.Contains(err.Error(), `/spec/agent: no agent "nobody"`) {
			t.Errorf("%s: %v", d.Key(), err)
		}
		d.Spec = json.RawMessage(`{"agent":"assistant","prompt":"p"}`)
		if err := m.Check(ctx, d); err != nil {
			t.Errorf("%s: %v", d.Key(), err)
		}
	}
}

// TestWatchNeedsTheMachineRight: a job that watches the file system, opens
// a webhook route or delivers to a URL reads or reaches past agentd, so an
// agent writes one only with extensions.machine; other jobs are not.
func TestWatchNeedsTheMachineRight(t *testing.T) {
	r := job.New(nil, nil, testkit.Agents{"assistant": testkit.Agent("assistant")}, nil)
	defer r.Close()
	machine := r.Type().Machine
	for spec, want := range map[string]bool{
		`{"agent":"assistant","prompt":"p","triggers":[{"watch":{"path":"/home"}}]}`:               true,
		`{"agent":"assistant","prompt":"p","triggers":[{"every":"1m"},{"watch":{"path":"/etc"}}]}`: true,
		`{"agent":"assistant","prompt":"p","triggers":[{"every":"1m"}]}`:                           false,
		`{"agent":"assistant","prompt":"p"}`:                                                       false,
		`{"agent":"assistant","prompt":"p","unknown":1}`:                                           true,
		`{"agent":"assistant","prompt":"p","deliver":{"webhook":"https://x.example/in"}}`:          true,
		`{"agent":"assistant","prompt":"p","on_failure":{"webhook":"https://x.example/in"}}`:       true,
		`{"agent":"assistant","prompt":"p","triggers":[{"webhook":{"secret_env":"S"}}]}`:           true,
		`{"agent":"assistant","prompt":"p","deliver":{"session":"assistant/main"}}`:                false,
	} {
		if machine == nil || machine(json.RawMessage(spec)) != want {
			t.Errorf("%s: machine %v", spec, !want)
		}
	}
}

// TestChainReadsItsParentsAgent: a chained job reads its parent's output,
// so its Actor names the parent's agent (an agent chains only after its
// own jobs, unless it may change any row); a parent that is not active
// names no agent an agent could be.
func TestChainReadsItsParentsAgent(t *testing.T) {
	agents := testkit.Agents{"assistant": testkit.Agent("assistant"), "ops": testkit.Agent("ops")}
	r := job.New(nil, nil, agents, nil)
	defer r.Close()
	if err := r.Activate(context.Background(), &store.Extension{Type: "job", Name: "payroll", Spec: json.RawMessage(`{"agent":"ops","prompt":"p"}`)}); err != nil {
		t.Fatal(err)
	}
	actor := r.Type().Actor
	for spec, want := range map[string][]string{
		`{"agent":"assistant","prompt":"p","triggers":[{"chain":{"after":"payroll"}}]}`: {"assistant", "ops"},
		`{"agent":"assistant","prompt":"p","triggers":[{"chain":{"after":"later"}}]}`:   {"assistant", "(the agent of job later, not active)"},
		`{"agent":"assistant","prompt":"p","triggers":[{"every":"1m"}]}`:                {"assistant"},
	} {
		if d := cmp.Diff(want, actor(json.RawMessage(spec))); d != "" {
			t.Errorf("%s (-want +got):\n%s", spec, d)
		}
	}
}
