package agentsys

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"agentd/internal/agent"
	"agentd/internal/runtime"
	"agentd/internal/store"
	"agentd/internal/tool"
)

// fakeSystem stands in for the System behind the agent tools: it records
// what each tool asked of it and answers with what the test set.
type fakeSystem struct {
	got []any // the requests, in order: StartRequest, SendRequest, …
	err error // every method's error when set

	instance store.Instance
	receipt  runtime.Receipt
	session  string
	infos    []Info
	next     string
	status   Status
	statuses map[string]Status // by id, when set: an id not in it is ErrNotFound
	stopped  []string
	answer   AskResult
	perm     PermanentResult
}

// stopCall is what Stop was asked.
type stopCall struct{ ID, Reason, By string }

// listCall is what List was asked.
type listCall struct{ Filter store.AgentFilter }

// statusCall is what Status was asked.
type statusCall struct{ ID string }

func (f *fakeSystem) Start(_ context.Context, req StartRequest) (store.Instance, error) {
	f.got = append(f.got, req)
	return f.instance, f.err
}

func (f *fakeSystem) Send(_ context.Context, req SendRequest) (runtime.Receipt, string, error) {
	f.got = append(f.got, req)
	return f.receipt, f.session, f.err
}

func (f *fakeSystem) List(_ context.Context, fl store.AgentFilter) ([]Info, string, error) {
	f.got = append(f.got, listCall{fl})
	return f.infos, f.next, f.err
}

func (f *fakeSystem) Status(_ context.Context, id string) (Status, error) {
	f.got = append(f.got, statusCall{id})
	if f.statuses != nil {
		st, ok := f.statuses[id]
		if !ok {
			return Status{}, fmt.Errorf("agentsys: status: %w: %s", ErrNotFound, id)
		}
		return st, nil
	}
	return f.status, f.err
}

func (f *fakeSystem) Stop(_ context.Context, id, reason, by string) ([]string, error) {
	f.got = append(f.got, stopCall{id, reason, by})
	return f.stopped, f.err
}

func (f *fakeSystem) Ask(_ context.Context, req AskRequest) (AskResult, error) {
	f.got = append(f.got, req)
	return f.answer, f.err
}

func (f *fakeSystem) CreatePermanent(_ context.Context, req PermanentRequest) (PermanentResult, error) {
	f.got = append(f.got, req)
	return f.perm, f.err
}

// The calling agent of the tool tests: an instance in its main session,
// in turn 7, serving an input of 2 hops.
const (
	callerID      = "ck3xq0v1w2e3r4t5y6u7i8o9"
	callerSession = callerID + "/main"
	childID       = "cz9y8x7w6v5u4t3s2r1q0p9o"
)

// toolCase is one call of a tool through the registry: its arguments,
// what the fake answers with (set), what the System must have been asked
// (want: nil for nothing) and the result: its JSON (out) or, for an error
// result, the texts its message must hold (errs).
type toolCase struct {
	name string
	args string
	set  func(*fakeSystem)
	want []any
	out  string
	errs []string
}

// runTool runs each case's call of tool name (built by mk over a fresh
// fake) through a registry, so that the schema checks the arguments as it
// does for a model's call.
func runTool(t *testing.T, name string, mk func(*fakeSystem) tool.Tool, cases []toolCase) {
	t.Helper()
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			f := &fakeSystem{}
			if tc.set != nil {
				tc.set(f)
			}
			reg := tool.NewRegistry(nil)
			if err := reg.Register(mk(f)); err != nil {
				t.Fatal(err)
			}
			c := &tool.Call{ID: "7.1", Name: name, Args: json.RawMessage(tc.args), Agent: callerID, Session: callerSession, Turn: 7, Hops: 2}
			res := reg.Run(t.Context(), c, &tool.RunOptions{Timeout: time.Minute}).Result
			checkResult(t, res, tc.out, tc.errs)
			if diff := cmpDiff(tc.want, f.got); diff != "" {
				t.Errorf("the System was asked (-want +got):\n%s", diff)
			}
		})
	}
}

// checkResult checks a tool's result: an error naming each of errs, or
// else the JSON out.
func checkResult(t *testing.T, res tool.Result, out string, errs []string) {
	t.Helper()
	if len(errs) > 0 {
		if !res.IsError {
			t.Fatalf("result %s, want an error with %q", res.Output, errs)
		}
		for _, e := range errs {
			if !strings.Contains(res.Output, e) {
				t.Errorf("error %q does not say %q", res.Output, e)
			}
		}
		return
	}
	if res.IsError {
		t.Fatalf("error result %q, want %s", res.Output, out)
	}
	var got, want any
	if err := json.Unmarshal([]byte(res.Output), &got); err != nil {
		t.Fatalf("result %q is not JSON: %v", res.Output, err)
	}
	if _, ok := got.(map[string]any); !ok {
		t.Errorf("result %s is not a JSON object", res.Output)
	}
	if err := json.Unmarshal([]byte(out), &want); err != nil {
		t.Fatalf("the test's want %q: %v", out, err)
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("result (-want +got):\n%s", diff)
	}
}

func cmpDiff(want, got []any) string { return cmp.Diff(want, got) }

// definitions are agent definitions by id.
type definitions map[string]*agent.Definition

func (d definitions) Get(id string) (*agent.Definition, bool) {
	def, ok := d[id]
	return def, ok
}
