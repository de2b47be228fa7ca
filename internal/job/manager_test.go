package job_test

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"testing"
	"testing/fstest"

	"agentd/internal/command"
	"agentd/internal/extension"
	"agentd/internal/job"
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

// TestWatchNeedsTheMachineRight: a job that watches the file system is a
// row that reads what happens on the machine, so an agent writes one only
// with extensions.machine; other jobs are not.
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
	} {
		if machine == nil || machine(json.RawMessage(spec)) != want {
			t.Errorf("%s: machine %v", spec, !want)
		}
	}
}
