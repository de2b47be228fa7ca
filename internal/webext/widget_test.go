package webext_test

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"testing"
	"testing/synctest"
	"time"

	"github.com/google/go-cmp/cmp"

	"agentd/internal/extension"
	"agentd/internal/memory"
	"agentd/internal/store"
	"agentd/internal/tool"
	"agentd/internal/webext"
)

// actionType stands for the action type: rows a widget may name.
var actionType = extension.Type{Name: "action", Summary: "test", Schema: json.RawMessage(`{"type": "object"}`)}

func TestWidgetChecks(t *testing.T) {
	w := newWorld(t, nil, actionType)
	ctx := t.Context()
	if _, err := w.m.Put(ctx, doc("action", "weather", `{}`), person); err != nil {
		t.Fatal(err)
	}
	err := w.m.Check(ctx, doc("widget", "w", `{"title": "x", "renderer": "json", "query": {"kind": "action", "action": "weather"}}`))
	if err != nil {
		t.Fatalf("a widget naming what exists: %v", err)
	}
	got := problems(t, w.m.Check(ctx, doc("widget", "w",
		`{"title": "x", "renderer": "nope", "query": {"kind": "action", "action": "nothing"}}`)))
	for _, want := range [][2]string{{"/spec/renderer", "no renderer named nope"}, {"/spec/query/action", "no action named nothing"}} {
		if !hasProblemAt(got, want[0], want[1]) {
			t.Errorf("no problem at %s saying %q in %q", want[0], want[1], got)
		}
	}
	// Without an action type, a widget over an action says so.
	w2 := newWorld(t, nil)
	got = problems(t, w2.m.Check(ctx, doc("widget", "w", `{"title": "x", "query": {"kind": "action", "action": "a"}}`)))
	if !hasProblemAt(got, "/spec/query/action", "no action type") {
		t.Errorf("got %q", got)
	}
}

func TestWidgetSchema(t *testing.T) {
	s := validator(t, webext.WidgetType(nil).Schema)
	for _, tc := range []struct {
		spec string
		ok   bool
	}{
		{`{"title": "t", "query": {"kind": "usage", "group": "day", "since": "168h"}}`, true},
		{`{"title": "t", "size": "wide", "query": {"kind": "sessions", "state": "idle", "limit": 5}}`, true},
		{`{"title": "t", "query": {"kind": "job", "job": "nightly"}}`, true},
		{`{"title": "t", "query": {"kind": "memory_search", "agent": "a", "text": "x"}}`, true},
		{`{"title": "t", "query": {"kind": "action", "action": "weather", "arguments": {"city": "Paris"}}}`, true},
		{`{"title": "t", "query": {"kind": "usage", "job": "nightly"}}`, false},
		{`{"title": "t", "query": {"kind": "job"}}`, false},
		{`{"title": "t", "query": {"kind": "memory_search", "text": "x"}}`, false},
		{`{"title": "t", "query": {"kind": "sql", "text": "select 1"}}`, false},
		{`{"title": "t", "query": {"kind": "usage", "since": "a week"}}`, false},
		{`{"title": "t", "query": {"kind": "sessions", "limit": 1000}}`, false},
		{`{"query": {"kind": "usage"}}`, false},
	} {
		errs := s.Validate(decode(t, tc.spec))
		if (len(errs) == 0) != tc.ok {
			t.Errorf("%s: %v, want ok %v", tc.spec, errs, tc.ok)
		}
	}
}

// The schema's enums are the store's lists.
func TestWidgetSchemaEnums(t *testing.T) {
	var s struct {
		Defs map[string]struct {
			Properties map[string]struct {
				Enum []string `json:"enum"`
			} `json:"properties"`
		} `json:"$defs"`
	}
	if err := json.Unmarshal(webext.WidgetType(nil).Schema, &s); err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(store.UsageGroups(), s.Defs["usage"].Properties["group"].Enum); diff != "" {
		t.Errorf("usage groups (-store +schema):\n%s", diff)
	}
	if diff := cmp.Diff(store.States(), s.Defs["sessions"].Properties["state"].Enum); diff != "" {
		t.Errorf("session states (-store +schema):\n%s", diff)
	}
}

// sources are the data widgets read in these tests.
type sources struct{ block bool }

func (sources) UsageReport(_ context.Context, q store.UsageQuery) (store.UsageReport, error) {
	if q.Group != "day" || q.Since.IsZero() {
		return store.UsageReport{}, errors.New("want day since")
	}
	return store.UsageReport{Rows: []store.UsageRow{{Key: "2026-11-25", CostUSD: 1.5, Calls: 3}},
		Total: store.UsageRow{CostUSD: 1.5, Calls: 3}}, nil
}

func (s sources) Sessions(ctx context.Context, f store.SessionFilter) ([]store.Session, error) {
	if s.block && f.Agent == "slow" {
		<-ctx.Done()
		return nil, ctx.Err()
	}
	at := time.Date(2026, 11, 25, 0, 0, 0, 0, time.UTC)
	all := []store.Session{
		{Agent: "a", Key: "job:nightly:3", State: "idle", Title: "third", UpdatedAt: at},
		{Agent: "a", Key: "chat:x", State: "active", UpdatedAt: at},
		{Agent: "a", Key: "job:nightly-other:1", State: "idle", UpdatedAt: at},
		{Agent: "a", Key: "job:nightly:2", State: "idle", UpdatedAt: at},
		{Agent: "a", Key: "job:nightly:1", State: "idle", UpdatedAt: at},
	}
	if f.Agent != "" {
		return all[:1], nil
	}
	return all, nil
}

func (sources) Recall(_ context.Context, q memory.Query) (memory.Recall, error) {
	return memory.Recall{Items: []memory.Item{{Kind: "observation", Entity: "paris", Text: q.Scope + " likes " + q.Text, Score: 1}}}, nil
}

func TestWidgetsEvaluate(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		w := newWorld(t, nil, actionType)
		ctx := t.Context()
		reg := tool.NewRegistry(nil)
		for _, spec := range []tool.Spec{{Name: "weather", ReadOnly: true}, {Name: "send_mail"}} {
			spec.InputSchema = json.RawMessage(`{"type": "object"}`)
			reg.Register(tool.Func(spec, func(_ context.Context, c *tool.Call) (tool.Result, error) {
				return tool.Result{Output: `{"called": "` + c.Name + `", "args": ` + string(c.Args) + `}`}, nil
			}))
		}
		for _, d := range []extension.Doc{
			doc("action", "weather", `{}`),
			doc("action", "send_mail", `{}`),
			doc("widget", "a-usage", `{"title": "Spend", "order": -1, "renderer": "usage-chart", "query": {"kind": "usage", "since": "168h"}}`),
			doc("widget", "b-job", `{"title": "Nightly", "query": {"kind": "job", "job": "nightly", "limit": 2}}`),
			doc("widget", "c-memory", `{"title": "Paris", "query": {"kind": "memory_search", "agent": "a", "text": "paris"}}`),
			doc("widget", "d-weather", `{"title": "Weather", "size": "small", "query": {"kind": "action", "action": "weather", "arguments": {"city": "Paris"}}}`),
			doc("widget", "e-mail", `{"title": "Mail", "query": {"kind": "action", "action": "send_mail"}}`),
			doc("widget", "f-slow", `{"title": "Slow", "query": {"kind": "sessions", "agent": "slow"}}`),
			doc("widget", "g-off", `{"title": "Off", "query": {"kind": "sessions"}}`),
		} {
			if _, err := w.m.Put(ctx, d, person); err != nil {
				t.Fatal(err)
			}
		}
		if _, err := w.m.SetEnabled(ctx, "widget", "g-off", false, person); err != nil {
			t.Fatal(err)
		}
		// An action an agent wrote (its URL, its read_only claim) is not
		// run by a widget on a person's page load.
		reg.Register(tool.Func(tool.Spec{Name: "agents_own", ReadOnly: true, InputSchema: json.RawMessage(`{"type": "object"}`)},
			func(context.Context, *tool.Call) (tool.Result, error) { return tool.Result{Output: "{}"}, nil }))
		if _, err := w.m.Put(ctx, doc("action", "agents_own", `{}`), extension.Who{Provenance: "agent:builder"}); err != nil {
			t.Fatal(err)
		}
		if _, err := w.m.Put(ctx, doc("widget", "h-agent", `{"title": "A", "query": {"kind": "action", "action": "agents_own"}}`), person); err != nil {
			t.Fatal(err)
		}
		ws := webext.NewWidgets(w.m, &webext.WidgetOptions{Usage: sources{}, Sessions: sources{block: true}, Memory: sources{}, Tools: reg})
		got, err := ws.Widgets(ctx)
		if err != nil {
			t.Fatal(err)
		}
		type view struct{ Name, Size, ContentType, Data, Error string }
		var views []view
		for _, v := range got {
			b, _ := json.Marshal(v.Data)
			views = append(views, view{v.Name, v.Size, v.ContentType, string(b), v.Error})
		}
		want := []view{
			{"a-usage", "medium", webext.UsageContentType, `{"group":"day","rows":[{"key":"2026-11-25","input_tokens":0,"output_tokens":0,"cost_usd":1.5,"calls":3}],"total":{"key":"","input_tokens":0,"output_tokens":0,"cost_usd":1.5,"calls":3}}`, ""},
			{"b-job", "medium", webext.SessionsContentType, `[{"address":"a/job:nightly:3","agent":"a","key":"job:nightly:3","title":"third","state":"idle","updated_at":"2026-11-25T00:00:00Z"},{"address":"a/job:nightly:2","agent":"a","key":"job:nightly:2","title":"","state":"idle","updated_at":"2026-11-25T00:00:00Z"}]`, ""},
			{"c-memory", "medium", webext.MemoryContentType, `[{"kind":"observation","entity":"paris","text":"a likes paris","score":1,"created":"0001-01-01T00:00:00Z"}]`, ""},
			{"d-weather", "small", "application/json", `{"called":"weather","args":{"city":"Paris"}}`, ""},
			{"e-mail", "medium", "", "null", "the action send_mail is not read-only: a widget calls only read-only actions"},
			{"f-slow", "medium", "", "null", "no answer within 5s"},
			{"h-agent", "medium", "", "null", "the action agents_own was written by an agent (agent:builder); a widget calls only actions people wrote"},
		}
		if diff := cmp.Diff(want, views); diff != "" {
			t.Errorf("widgets (-want +got):\n%s", diff)
		}

		one, err := ws.Widget(ctx, "d-weather")
		if err != nil || one.Title != "Weather" || one.Error != "" {
			t.Errorf("one widget: %+v, %v", one, err)
		}
		for _, name := range []string{"g-off", "nothing"} {
			if _, err := ws.Widget(ctx, name); !errors.Is(err, webext.ErrNotFound) {
				t.Errorf("widget %s: %v, want not found", name, err)
			}
		}
	})
}

// A widget over a source this agentd lacks, or an action that is gone,
// shows why; the others still show.
func TestWidgetsMissingSources(t *testing.T) {
	w := newWorld(t, nil, actionType)
	ctx := t.Context()
	if _, err := w.m.Put(ctx, doc("action", "gone", `{}`), person); err != nil {
		t.Fatal(err)
	}
	for _, d := range []extension.Doc{
		doc("widget", "mem", `{"title": "m", "query": {"kind": "memory_search", "agent": "a", "text": "x"}}`),
		doc("widget", "act", `{"title": "a", "query": {"kind": "action", "action": "gone"}}`),
	} {
		if _, err := w.m.Put(ctx, d, person); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := w.m.SetEnabled(ctx, "action", "gone", false, person); err != nil {
		t.Fatal(err)
	}
	got, err := webext.NewWidgets(w.m, &webext.WidgetOptions{Tools: tool.NewRegistry(nil)}).Widgets(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != 2 || !strings.Contains(got[0].Error, "no enabled action named gone") ||
		!strings.Contains(got[1].Error, "long-term memory is not available") {
		t.Errorf("got %+v", got)
	}
}
