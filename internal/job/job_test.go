package job_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"agentd/internal/engine"
	"agentd/internal/event"
	"agentd/internal/extension"
	"agentd/internal/job"
	"agentd/internal/model"
	"agentd/internal/netguard"
	"agentd/internal/runtime"
	"agentd/internal/store"
	"agentd/internal/testkit"
)

// env is a Runner over a real runtime whose model answers "re: <input>".
type env struct {
	k *testkit.Kit
	m *testkit.Model
	r *job.Runner
}

func newEnv(t *testing.T, o *job.Options) *env {
	t.Helper()
	m := testkit.NewModel()
	k := testkit.New(t, &testkit.Options{Model: m, Agents: testkit.Agents{"assistant": testkit.Agent("assistant"), "ops": testkit.Agent("ops")}})
	r := job.New(k.Runtime, k.Store, testkit.Agents{"assistant": testkit.Agent("assistant"), "ops": testkit.Agent("ops")}, o)
	t.Cleanup(r.Close)
	return &env{k: k, m: m, r: r}
}

func (e *env) put(t *testing.T, name, spec string) {
	t.Helper()
	if errs := e.r.Check(context.Background(), &extension.Doc{Type: "job", Name: name, Spec: json.RawMessage(spec)}); len(errs) > 0 {
		t.Fatalf("check %s: %v", name, errs)
	}
	if err := e.r.Activate(context.Background(), &store.Extension{Type: "job", Name: name, Spec: json.RawMessage(spec)}); err != nil {
		t.Fatal(err)
	}
}

func TestRunFillsThePromptAndKeepsTheOutput(t *testing.T) {
	e := newEnv(t, nil)
	e.put(t, "brief", `{"agent":"assistant","prompt":"brief {{payload.topic}} after [{{previous_output}}] as {{job}}"}`)
	ctx := context.Background()
	res, err := e.r.Run(ctx, "brief", job.Fire{Payload: map[string]string{"topic": "rust"}}, true)
	if err != nil {
		t.Fatal(err)
	}
	if res.Status != store.RunDone || res.Output != "re: brief rust after [] as brief" || res.Session != "assistant/job:brief:"+res.Run {
		t.Fatalf("first run %+v", res)
	}
	res2, err := e.r.Run(ctx, "brief", job.Fire{Payload: map[string]string{"topic": "go"}}, true)
	if err != nil {
		t.Fatal(err)
	}
	if want := "re: brief go after [re: brief rust after [] as brief] as brief"; res2.Output != want || res2.Run <= res.Run {
		t.Fatalf("second run %+v, want output %q and a later run id than %s", res2, want, res.Run)
	}
	// The run's input carries the job's budget: the default one.
	it, err := e.k.Store.InboxItem(ctx, res.Turn)
	if err != nil {
		t.Fatal(err)
	}
	o, err := engine.ParseLifecycleOptions(it.Options)
	if err != nil || o.Budgets == nil || *o.Budgets != job.DefaultBudget {
		t.Fatalf("options %s (%v): want the default job budget", it.Options, err)
	}
	if _, err := e.r.Run(ctx, "nope", job.Fire{}, true); !errors.Is(err, job.ErrNotFound) {
		t.Fatalf("unknown job: %v", err)
	}
}

func TestNamedSessionAndBudget(t *testing.T) {
	e := newEnv(t, nil)
	calls := 0
	e.m.Respond = func(ctx context.Context, req *model.Request, _ func(model.Delta)) (*model.Response, error) {
		calls++
		return &model.Response{ToolCalls: []model.ToolCall{{ID: fmt.Sprint("c", calls), Name: "nothing", Args: json.RawMessage(`{}`)}}, StopReason: "tool_use"}, nil
	}
	e.put(t, "loop", `{"agent":"ops","prompt":"go","session":"daily","budget":{"max_steps":2},"on_failure":{"session":"assistant/main","silent":true}}`)
	res, err := e.r.Run(context.Background(), "loop", job.Fire{}, true)
	if err != nil {
		t.Fatal(err)
	}
	if res.Session != "ops/daily" || res.Status != store.RunError || !strings.HasPrefix(res.Error, "budget") || calls != 2 {
		t.Fatalf("run %+v after %d calls; want a budget stop after 2 in ops/daily", res, calls)
	}
	// The failure alert is in assistant/main, logged without a turn
	// (before a marker sent after it is).
	if _, _, err := e.k.Runtime.Send(context.Background(), runtime.Input{Session: "assistant/main", Text: "marker", System: true, Silent: true}); err != nil {
		t.Fatal(err)
	}
	_, evs, err := e.k.Runtime.Events(context.Background(), "assistant/main", 0, 100)
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, ev := range evs {
		var d event.InputData
		if ev.Kind == event.SystemMessage && ev.Decode(&d) == nil {
			got = append(got, d.Origin+": "+d.Text)
		}
	}
	if len(got) != 2 || !strings.HasPrefix(got[0], "job:loop: job loop run "+res.Run+" failed: budget") {
		t.Fatalf("alerts %q (run %+v)", got, res)
	}
}

func TestConcurrency(t *testing.T) {
	for _, tc := range []struct {
		policy string
		second string // the second run's status, or its error
	}{
		{"skip", "job already running"},
		{"queue", store.RunQueued},
		{"allow", store.RunRunning},
	} {
		t.Run(tc.policy, func(t *testing.T) {
			e := newEnv(t, nil)
			e.put(t, "j", `{"agent":"assistant","prompt":"hold","concurrency":"`+tc.policy+`"}`)
			g := e.m.Gate("hold")
			ctx := context.Background()
			first, err := e.r.Run(ctx, "j", job.Fire{}, false)
			if err != nil || first.Status != store.RunRunning {
				t.Fatalf("first %+v %v", first, err)
			}
			<-g.Entered
			second, err := e.r.Run(ctx, "j", job.Fire{}, false)
			got := second.Status
			if err != nil {
				got = err.Error()
			}
			if !strings.HasPrefix(got, tc.second) {
				t.Fatalf("second run: %q, want %q", got, tc.second)
			}
			g.Open()
			if tc.policy == "skip" {
				return
			}
			// Both runs end: wait for the second by running a third.
			third, err := e.r.Run(ctx, "j", job.Fire{}, true)
			if err != nil || third.Status != store.RunDone {
				t.Fatalf("third %+v %v", third, err)
			}
		})
	}
}

func TestWebhookDelivery(t *testing.T) {
	got := make(chan job.Result, 1)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var res job.Result
		b, _ := io.ReadAll(r.Body)
		json.Unmarshal(b, &res)
		got <- res
	}))
	defer srv.Close()
	spec := `{"agent":"assistant","prompt":"hook","deliver":{"webhook":"` + srv.URL + `/in"}}`

	// The guard blocks loopback: the row is refused, and a run of a row
	// activated anyway is not delivered.
	e := newEnv(t, nil)
	errs := e.r.Check(context.Background(), &extension.Doc{Type: "job", Name: "h", Spec: json.RawMessage(spec)})
	if len(errs) != 1 || errs[0].Pointer != "/spec/deliver/webhook" || !strings.Contains(errs[0].Message, "loopback") {
		t.Fatalf("check: %v", errs)
	}
	e.r.Activate(context.Background(), &store.Extension{Name: "h", Spec: json.RawMessage(spec)})
	res, err := e.r.Run(context.Background(), "h", job.Fire{}, true)
	if err != nil || !strings.Contains(res.DeliveryError, "not allowed") {
		t.Fatalf("blocked delivery: %+v %v", res, err)
	}

	// Allowed by the operator, it is delivered.
	e = newEnv(t, &job.Options{Guard: netguard.New(&netguard.Options{AllowPrefixes: []netip.Prefix{netip.MustParsePrefix("127.0.0.1/32")}})})
	e.put(t, "h", spec)
	res, err = e.r.Run(context.Background(), "h", job.Fire{}, true)
	if err != nil || res.DeliveryError != "" {
		t.Fatalf("delivery: %+v %v", res, err)
	}
	if d := <-got; d.Output != "re: hook" || d.Run != res.Run || d.Status != store.RunDone {
		t.Fatalf("delivered %+v", d)
	}
}

func TestCheck(t *testing.T) {
	r := job.New(nil, nil, testkit.Agents{"assistant": testkit.Agent("assistant")}, nil)
	defer r.Close()
	for _, tt := range []struct {
		spec string
		want []string
	}{
		{`{"agent":"assistant","prompt":"{{fired_at}} {{payload.x}} {{previous_output}}","triggers":[{"cron":"0 8 * * MON-FRI","tz":"Europe/Berlin"},{"every":"2s"},{"at":"2026-12-01T08:00:00Z"},{"chain":{"after":"other"}},{"webhook":{"secret_env":"S"}}],"deliver":{"webhook":"https://example.com/x"}}`, nil},
		{`{"agent":"assistant","prompt":"x","session":"day\u0007"}`, []string{
			`/spec/session: "day\a" is not a session key: it may hold anything but / and control characters`}},
		{`{"agent":"nobody","prompt":"{{team}}"}`, []string{
			`/spec/agent: no agent "nobody"`,
			"/spec/prompt: {{team}} is not a variable of a job (they are job, run, fired_at, payload, previous_output, parent_output, payload.KEY)"}},
		{`{"agent":"assistant","prompt":"x","triggers":[{"cron":"61 * * * *","tz":"Mars/Olympus"},{"every":"10ms"},{"at":"tomorrow","every":"1h"},{"chain":{"after":"x"}}]}`, []string{
			`/spec/triggers/0/cron: field minute: 61 is out of range 0-59`,
			`/spec/triggers/0/tz: unknown time zone "Mars/Olympus" (an IANA name such as Europe/Berlin)`,
			`/spec/triggers/1/every: want an interval of at least 1s such as 30s or 2h, not "10ms"`,
			"/spec/triggers/2: a trigger has exactly one of cron, at, every, watch, webhook, chain, heartbeat (this one has 2: at, every)",
			`/spec/triggers/2/at: want an RFC 3339 time such as 2026-12-01T08:00:00Z, not "tomorrow"`,
			"/spec/triggers/3/chain/after: a job cannot follow itself"}},
		{`{"agent":"assistant","prompt":"x","triggers":[{"cron":"0 8 * * 8"},{"heartbeat":{"every":"1.5s"}},{"every":"5m","tz":"Europe/Berlin"},{"cron":"@daily","tz":"Local"}]}`, []string{
			"/spec/triggers/0/cron: field day-of-week: 8 is out of range 0-7",
			`/spec/triggers/1/heartbeat/every: want an interval of whole seconds, not "1.5s"`,
			"/spec/triggers/2/tz: a time zone goes with a cron expression",
			`/spec/triggers/3/tz: unknown time zone "Local" (an IANA name such as Europe/Berlin)`}},
		{`{"agent":"assistant","triggers":[{"heartbeat":{"every":"1h","prompt_file":"NOPE.md","quiet_hours":"07:00-07:00"}},{"heartbeat":{"every":"1h","tz":"Europe/Berlin"}},{"watch":{"path":"/nonexistent-agentd","glob":"a/[","debounce":"1ms"}}]}`, []string{
			"/spec/prompt: a job has a prompt (only a job fired by a heartbeat alone may have the heartbeat's prompt or prompt_file stand for it)",
			"/spec/triggers/0/heartbeat/prompt_file: heartbeat prompt_file: NOPE.md in the agent's workspace workspace/assistant: no such file or directory",
			`/spec/triggers/0/heartbeat/quiet_hours: want quiet hours as HH:MM-HH:MM such as 22:00-07:00, two different times, not "07:00-07:00"`,
			"/spec/triggers/1/heartbeat/tz: a time zone goes with quiet_hours",
			"/spec/triggers/1/heartbeat: a job has at most one heartbeat",
			"/spec/triggers/2/watch/path: watch path: /nonexistent-agentd: no such file or directory",
			`/spec/triggers/2/watch/glob: "a/[" is not a glob: syntax error in pattern`,
			`/spec/triggers/2/watch/debounce: want an interval of at least 1s such as 30s or 2h, not "1ms"`}},
		{`{"agent":"assistant","prompt":"{{payload}}","triggers":[{"webhook":{"secret":"${secret:GH_HOOK}"}},{"webhook":{"secret_env":"S","secret":"${env:S}"}},{"webhook":{}}]}`, []string{
			"/spec/triggers/1/webhook: a webhook has one of secret_env or secret",
			"/spec/triggers/2/webhook: a webhook has one of secret_env or secret"}},
		{`{"agent":"assistant","prompt":"x","budget":{"max_wall_time":"-1s"},"deliver":{"session":"nobody/main","webhook":"http://169.254.169.254/latest"},"on_failure":{"webhook":"ftp://x/y"}}`, []string{
			`/spec/budget/max_wall_time: max_wall_time: want a positive duration such as 90s or 5m, not "-1s"`,
			"/spec/deliver: a delivery is one of session, webhook or none",
			`/spec/deliver/session: no agent "nobody"`,
			"/spec/deliver/webhook: destination not allowed: 169.254.169.254 is the cloud metadata address",
			`/spec/on_failure/webhook: url not allowed: scheme "ftp" is not supported; use http or https`}},
	} {
		var got []string
		for _, e := range r.Check(context.Background(), &extension.Doc{Type: "job", Name: "x", Spec: json.RawMessage(tt.spec)}) {
			got = append(got, e.String())
		}
		if diff := cmp.Diff(tt.want, got); diff != "" {
			t.Errorf("%s: %s", tt.spec, diff)
		}
	}
}

var _ extension.Checker = (*job.Runner)(nil)
