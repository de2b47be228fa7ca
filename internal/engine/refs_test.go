package engine

import (
	"context"
	"encoding/json"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"agentd/internal/agent"
	"agentd/internal/event"
	"agentd/internal/model"
	"agentd/internal/permit"
	"agentd/internal/tool"
)

func TestParseRef(t *testing.T) {
	for _, tc := range []struct {
		in      string
		want    ref
		canon   string
		wantErr string
	}{
		{in: "calls[0].data", want: ref{Call: 0}, canon: "calls[0].data"},
		{in: " calls[12].data ", want: ref{Call: 12}, canon: "calls[12].data"},
		{in: "calls[1].data.items[2].id", want: ref{Call: 1, Path: []refSeg{{Key: "items"}, {Index: 2, IsIndex: true}, {Key: "id"}}},
			canon: "calls[1].data.items[2].id"},
		{in: `calls[0].data["odd key"]`, want: ref{Call: 0, Path: []refSeg{{Key: "odd key"}}}, canon: `calls[0].data["odd key"]`},
		{in: `calls[0].data["a\"]b"].c-d_e`, want: ref{Call: 0, Path: []refSeg{{Key: `a"]b`}, {Key: "c-d_e"}}}, canon: `calls[0].data["a\"]b"].c-d_e`},
		{in: `calls[0].data["x"]`, want: ref{Call: 0, Path: []refSeg{{Key: "x"}}}, canon: "calls[0].data.x"},
		{in: "call[0].data", wantErr: "must start with calls["},
		{in: "calls[].data", wantErr: "a call's index"},
		{in: "calls[-1].data", wantErr: "a call's index"},
		{in: "calls[0]", wantErr: "must be followed by .data"},
		{in: "calls[0].output", wantErr: "must be followed by .data"},
		{in: "calls[0].data.", wantErr: "a name must follow"},
		{in: "calls[0].data[x]", wantErr: "[ must hold"},
		{in: `calls[0].data["x"`, wantErr: "must be closed"},
		{in: `calls[0].data["\q"]`, wantErr: "bad quoted key"},
		{in: "calls[0].data items", wantErr: "unexpected"},
		{in: "calls[1234567890].data", wantErr: "a call's index"},
	} {
		t.Run(tc.in, func(t *testing.T) {
			got, err := parseRef(tc.in)
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("parseRef(%q) = %+v, %v; want an error with %q", tc.in, got, err, tc.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("(-want +got):\n%s", diff)
			}
			if got.String() != tc.canon {
				t.Errorf("String() = %s, want %s", got, tc.canon)
			}
		})
	}
}

func TestResolveArgs(t *testing.T) {
	res := map[int]event.ToolResultData{
		0: {Name: "search", Output: `{"x": 42, "items": [{"id": "a"}, {"id": "b", "n": 1.50}], "odd key": true, "s": "hi"}`},
		1: {Name: "clock", Output: "noon"},
		2: {Name: "broken", Output: "no such file", IsError: true},
	}
	get := func(i int) (event.ToolResultData, bool) { r, ok := res[i]; return r, ok }
	for _, tc := range []struct {
		name, args string
		own        int
		want       string // "" with wantErr
		unchanged  bool
		wantErr    string
	}{
		{name: "no reference", args: `{"a":"b"}`, own: 3, want: `{"a":"b"}`, unchanged: true},
		{name: "braces that are not a reference", args: `{"t":"{{name}} and {{ x }}"}`, own: 3, want: `{"t":"{{name}} and {{ x }}"}`, unchanged: true},
		{name: "whole value is a number", args: `{"v":"{{calls[0].data.x}}"}`, own: 3, want: `{"v":42}`},
		{name: "whole value is an object", args: `{"v":"{{calls[0].data.items[1]}}"}`, own: 3, want: `{"v":{"id":"b","n":1.50}}`},
		{name: "whole data", args: `{"v":"{{ calls[1].data }}"}`, own: 3, want: `{"v":"noon"}`},
		{name: "quoted key", args: `{"v":"{{calls[0].data[\"odd key\"]}}"}`, own: 3, want: `{"v":true}`},
		{name: "embedded string and values", args: `{"v":"id={{calls[0].data.items[0].id}} x={{calls[0].data.x}} i={{calls[0].data.items[0]}}"}`, own: 3,
			want: `{"v":"id=a x=42 i={\"id\":\"a\"}"}`},
		{name: "in an array, nested", args: `{"a":[1,{"b":"{{calls[0].data.s}}"}],"keep":1.0}`, own: 3, want: `{"a":[1,{"b":"hi"}],"keep":1.0}`},
		{name: "escaped braces in JSON", args: `{"v":"\u007b{calls[0].data.x}}"}`, own: 3, want: `{"v":42}`},
		{name: "a later call", args: `{"v":"{{calls[3].data}}"}`, own: 3, wantErr: "only to calls before it"},
		{name: "itself", args: `{"v":"{{calls[1].data}}"}`, own: 1, wantErr: "only to calls before it"},
		{name: "a failed call", args: `{"v":"{{calls[2].data}}"}`, own: 3, wantErr: "calls[2] (broken) failed: no such file"},
		{name: "no such call", args: `{"v":"{{calls[4].data}}"}`, own: 5, wantErr: "the step has no calls[4]"},
		{name: "missing member", args: `{"v":"{{calls[0].data.y}}"}`, own: 3, wantErr: `calls[0].data has no member "y"`},
		{name: "index out of range", args: `{"v":"{{calls[0].data.items[5]}}"}`, own: 3, wantErr: "calls[0].data.items has 2 elements"},
		{name: "member of a string", args: `{"v":"{{calls[1].data.x}}"}`, own: 3, wantErr: "is a string"},
		{name: "index into an object", args: `{"v":"{{calls[0].data[0]}}"}`, own: 3, wantErr: "is an object, not an array"},
		{name: "malformed", args: `{"v":"{{calls[0].dat}}"}`, own: 3, wantErr: "must be followed by .data"},
		{name: "unclosed", args: `{"v":"{{calls[0].data"}`, own: 3, wantErr: "is not closed with }}"},
		{name: "not JSON", args: `{"v":`, own: 3, want: `{"v":`, unchanged: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, changed, err := resolveArgs(json.RawMessage(tc.args), tc.own, get)
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("got %s, %v; want an error with %q", got, err, tc.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if changed == tc.unchanged || string(got) != tc.want {
				t.Errorf("got %s (changed %v), want %s", got, changed, tc.want)
			}
		})
	}
}

// refHarness adds tools that show what references resolve to: data
// returns a JSON object (once gate is closed), echo returns its
// arguments, open closes gate.
func refHarness(t *testing.T, p model.Provider) (*harness, chan struct{}, *[]string) {
	t.Helper()
	h := newHarness(t, models{"m": p})
	gate := make(chan struct{})
	var echoed []string
	obj := json.RawMessage(`{"type":"object"}`)
	for _, tl := range []tool.Tool{
		tool.Func(tool.Spec{Name: "data", InputSchema: obj, ReadOnly: true}, func(ctx context.Context, c *tool.Call) (tool.Result, error) {
			select {
			case <-gate:
			case <-ctx.Done():
				return tool.Result{}, ctx.Err()
			}
			return tool.Result{Output: `{"x":42,"items":[{"id":"a"}]}`}, nil
		}),
		tool.Func(tool.Spec{Name: "echo", InputSchema: obj, Idempotent: true}, func(ctx context.Context, c *tool.Call) (tool.Result, error) {
			echoed = append(echoed, string(c.Args))
			return tool.Result{Output: string(c.Args)}, nil
		}),
		tool.Func(tool.Spec{Name: "open", InputSchema: obj, ReadOnly: true}, func(ctx context.Context, c *tool.Call) (tool.Result, error) {
			close(gate)
			return tool.Result{Output: "open"}, nil
		}),
	} {
		if err := h.tools.Register(tl); err != nil {
			t.Fatal(err)
		}
	}
	return h, gate, &echoed
}

// A call that refers to an earlier one waits for it and gets its data;
// the other calls of the step run beside them; a bad reference is a
// result the model sees, and its tool is not called.
func TestRefsInAStep(t *testing.T) {
	step := calls(
		model.ToolCall{ID: "c0", Name: "data", Args: json.RawMessage(`{}`)},
		model.ToolCall{ID: "c1", Name: "echo", Args: json.RawMessage(`{"v":"{{calls[0].data.x}}","s":"id={{calls[0].data.items[0].id}}"}`)},
		// data waits for open: were the step's calls not run in
		// parallel, the turn would never end.
		model.ToolCall{ID: "c2", Name: "open", Args: json.RawMessage(`{}`)},
		model.ToolCall{ID: "c3", Name: "echo", Args: json.RawMessage(`{"v":"{{calls[0].data.nope}}"}`)},
		model.ToolCall{ID: "c4", Name: "echo", Args: json.RawMessage(`{"v":"{{calls[4].data}}"}`)},
	)
	p := &script{resps: []func(*model.Request) (*model.Response, error){step, text("done")}}
	h, _, echoed := refHarness(t, p)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	end, err := h.run(ctx, turn(&agent.Definition{}))
	if err != nil || end.Status != event.StatusDone {
		t.Fatalf("end %+v err %v", end, err)
	}
	if diff := cmp.Diff([]string{`{"s":"id=a","v":42}`}, *echoed); diff != "" {
		t.Errorf("echo called with (-want +got):\n%s", diff)
	}
	got := map[string]event.ToolResultData{}
	for _, e := range h.log.events {
		var d event.ToolResultData
		if e.Kind == event.ToolResult && e.Decode(&d) == nil {
			got[d.ID] = d
		}
	}
	if r := got["c1"]; r.IsError || string(r.ResolvedArgs) != `{"s":"id=a","v":42}` {
		t.Errorf("c1's result %+v; want its resolved args recorded", r)
	}
	if r := got["c0"]; r.ResolvedArgs != nil {
		t.Errorf("c0 had no references, but its result records resolved args %s", r.ResolvedArgs)
	}
	for id, want := range map[string]string{"c3": `{{calls[0].data.nope}}: calls[0].data has no member "nope"; the tool was not called`,
		"c4": "only to calls before it"} {
		if r := got[id]; !r.IsError || !strings.Contains(r.Output, want) {
			t.Errorf("%s's result %+v; want an error with %q", id, r, want)
		}
	}
	// The model sees the error in the next step.
	var seen bool
	for _, m := range p.reqs[1].Messages {
		seen = seen || m.Role == model.RoleTool && m.ToolCallID == "c3" && m.IsError
	}
	if !seen {
		t.Error("the model was not shown c3's reference error")
	}
}

// A turn resumed after a restart resolves a call's references against
// the results logged before it.
func TestRefsResumed(t *testing.T) {
	p := &script{resps: []func(*model.Request) (*model.Response, error){text("done")}}
	h, gate, echoed := refHarness(t, p)
	close(gate)
	tr := turn(&agent.Definition{})
	tr.Prior = []event.Event{
		event.New(1, 7, event.Input, event.InputData{Text: "hello"}),
		event.New(1, 7, event.ModelCall, event.ModelCallData{Step: 1, Attempt: 1}),
		event.New(1, 7, event.ToolCall, event.ToolCallData{ID: "c0", Name: "data", Args: json.RawMessage(`{}`), Step: 1}),
		event.New(1, 7, event.ToolCall, event.ToolCallData{ID: "c1", Name: "echo", Args: json.RawMessage(`{"v":"{{calls[0].data.items}}"}`), Step: 1}),
		event.New(1, 7, event.ToolResult, event.ToolResultData{ID: "c0", Name: "data", Output: `{"items":[1,2]}`}),
	}
	end, err := h.run(context.Background(), tr)
	if err != nil || end.Status != event.StatusDone {
		t.Fatalf("end %+v err %v", end, err)
	}
	if diff := cmp.Diff([]string{`{"v":[1,2]}`}, *echoed); diff != "" {
		t.Errorf("the resumed call ran with (-want +got):\n%s", diff)
	}
}

// FuzzRefPath: the path parser never panics, and a reference it accepts
// resolves as a plain walk over encoding/json's decoding of the data
// does, and prints back to a text it parses the same.
func FuzzRefPath(f *testing.F) {
	for _, s := range []string{"calls[0].data", "calls[1].data.items[2].id", `calls[0].data["odd key"][0]`, "calls[0].data.a.b", `calls[0].data["\u00e9"]`, "calls[0].data[1"} {
		f.Add(s, `{"a":{"b":[1,"x"]},"items":[0,1,{"id":"z"}],"odd key":[true],"é":null}`)
	}
	f.Fuzz(func(t *testing.T, path, data string) {
		findRefs(path)
		findRefs("{{" + path + "}} {{" + path)
		r, err := parseRef(path)
		if err != nil {
			return
		}
		again, err := parseRef(r.String())
		if err != nil || !cmp.Equal(r, again) {
			t.Fatalf("%q parsed as %+v, printed as %s, parsed again as %+v (%v)", path, r, r, again, err)
		}
		if !json.Valid([]byte(data)) {
			return
		}
		var v any
		if err := json.Unmarshal([]byte(data), &v); err != nil {
			return
		}
		want, wantOK := v, true
		for _, s := range r.Path {
			switch x := want.(type) {
			case map[string]any:
				want, wantOK = x[s.Key]
				wantOK = wantOK && !s.IsIndex
			case []any:
				wantOK = s.IsIndex && s.Index < len(x)
				if wantOK {
					want = x[s.Index]
				}
			default:
				wantOK = false
			}
			if !wantOK {
				break
			}
		}
		got, err := walkPath(resultData(data), r)
		if (err == nil) != wantOK {
			t.Fatalf("walk of %s over %s: %v, %v; want found %v", r, data, got, err, wantOK)
		}
		if err == nil {
			gj, _ := json.Marshal(got)
			wj, _ := json.Marshal(want)
			var gv, wv any
			json.Unmarshal(gj, &gv)
			json.Unmarshal(wj, &wv)
			if !cmp.Equal(gv, wv) {
				t.Fatalf("walk of %s over %s = %s, want %s", r, data, gj, wj)
			}
		}
	})
}

// A person asked about a call sees it with its references resolved, and
// the tool runs with what they approved.
func TestRefsBeforeApproval(t *testing.T) {
	p := &script{resps: []func(*model.Request) (*model.Response, error){
		calls(model.ToolCall{ID: "c0", Name: "read", Args: json.RawMessage(`{}`)},
			model.ToolCall{ID: "c1", Name: "send_money", Args: json.RawMessage(`{"to":"{{calls[0].data}}"}`)}),
		text("finished")}}
	h := newHarness(t, models{"m": p})
	b := permit.New()
	h.eng.o.Permits = b
	def := &agent.Definition{Tools: agent.ToolPolicy{Ask: []string{"send_*"}, ApprovalTimeout: agent.Duration(time.Hour)}}
	done := make(chan event.TurnEndData)
	go func() {
		end, err := h.run(context.Background(), turn(def))
		if err != nil {
			t.Error(err)
		}
		done <- end
	}()
	req := waitPending(t, b, 1)[0]
	if string(req.Args) != `{"to":"read ok"}` {
		t.Errorf("the person was asked about %s, want the resolved arguments", req.Args)
	}
	if err := b.Resolve(req.ID, permit.Decision{Granted: true, By: "cli"}); err != nil {
		t.Fatal(err)
	}
	if end := <-done; end.Status != event.StatusDone {
		t.Fatalf("end %+v", end)
	}
	var asked event.ApprovalRequestData
	if !h.log.decoded(event.ApprovalRequested, &asked) || string(asked.Args) != `{"to":"read ok"}` {
		t.Errorf("the approval event %+v does not show the resolved arguments", asked)
	}
}

// A step runs at most MaxCallsPerStep calls: each call past it is an
// error result the model sees, and its tool never runs.
func TestMaxCallsPerStep(t *testing.T) {
	var tcs []model.ToolCall
	for i := range MaxCallsPerStep + 6 {
		tcs = append(tcs, model.ToolCall{ID: "c" + strconv.Itoa(i), Name: "count", Args: json.RawMessage(`{}`)})
	}
	p := &script{resps: []func(*model.Request) (*model.Response, error){calls(tcs...), text("done")}}
	h := newHarness(t, models{"m": p})
	var ran atomic.Int64
	if err := h.tools.Register(tool.Func(tool.Spec{Name: "count", InputSchema: json.RawMessage(`{"type":"object"}`)},
		func(context.Context, *tool.Call) (tool.Result, error) {
			ran.Add(1)
			return tool.Result{Output: "ok"}, nil
		})); err != nil {
		t.Fatal(err)
	}
	end, err := h.run(context.Background(), turn(&agent.Definition{}))
	if err != nil || end.Status != event.StatusDone {
		t.Fatalf("end %+v err %v", end, err)
	}
	if ran.Load() != MaxCallsPerStep {
		t.Errorf("the tool ran %d times, want %d", ran.Load(), MaxCallsPerStep)
	}
	refused := 0
	for _, e := range h.log.events {
		var d event.ToolResultData
		if e.Kind == event.ToolResult && e.Decode(&d) == nil && d.IsError {
			if !strings.Contains(d.Output, "at most 64 calls") {
				t.Errorf("%s: %q", d.ID, d.Output)
			}
			refused++
		}
	}
	if refused != 6 {
		t.Errorf("%d calls refused, want 6", refused)
	}
}
