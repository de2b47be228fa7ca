package webext_test

import (
	"testing"

	"agentd/internal/webext"
)

// A renderer's options must fit its view, and its tool glob must be one.
func TestRendererChecks(t *testing.T) {
	for _, tc := range []struct {
		spec string
		want [][2]string // pointer, part of the message
	}{
		{`{"match": {"tool": "mcp__*"}, "view": "table", "options": {"columns": [{"field": "name"}]}}`, nil},
		{`{"match": {"artifact_kind": "code"}, "view": "code", "options": {"language": "go"}}`, nil},
		{`{"match": {"content_type": "text/csv"}, "view": "chart", "options": {"x": "day", "y": ["cost"], "chart": "line"}}`, nil},
		{`{"match": {"tool": "[x"}, "view": "json"}`, [][2]string{{"/spec/match/tool", "not a glob"}}},
		{`{"match": {}, "view": "json"}`, [][2]string{{"/spec/match", "name a content_type"}}},
		{`{"match": {"tool": "x"}, "view": "json", "options": {"columns": [{"field": "a"}], "language": "go"}}`,
			[][2]string{{"/spec/options/columns", "table or kv"}, {"/spec/options/language", "only a code view"}}},
		{`{"match": {"tool": "x"}, "view": "chart"}`,
			[][2]string{{"/spec/options/x", "x axis"}, {"/spec/options/y", "plots"}}},
		{`{"match": {"tool": "x"}, "view": "table", "options": {"x": "a", "y": ["b"]}}`,
			[][2]string{{"/spec/options/x", "only a chart"}, {"/spec/options/y", "only a chart"}}},
	} {
		got := check(t, webext.RendererType(), doc("renderer", "r", tc.spec))
		if tc.want == nil && got != nil {
			t.Errorf("%s: %q", tc.spec, got)
		}
		for _, w := range tc.want {
			if !hasProblemAt(got, w[0], w[1]) {
				t.Errorf("%s: no problem at %s saying %q in %q", tc.spec, w[0], w[1], got)
			}
		}
		if len(got) != len(tc.want) {
			t.Errorf("%s: %d problems, want %d: %q", tc.spec, len(got), len(tc.want), got)
		}
	}
}

// The schema refuses script and unknown views; a renderer has no place
// for anything but data.
func TestRendererSchema(t *testing.T) {
	s := validator(t, webext.RendererType().Schema)
	for _, tc := range []struct {
		spec string
		ok   bool
	}{
		{`{"match": {"artifact_kind": "csv"}, "view": "table"}`, true},
		{`{"match": {"content_type": "image/*"}, "view": "image"}`, true},
		{`{"match": {"tool": "x"}, "view": "html"}`, false},
		{`{"match": {"tool": "x"}, "view": "json", "script": "alert(1)"}`, false},
		{`{"match": {"tool": "x"}, "view": "json", "options": {"template": "<b>{{x}}</b>"}}`, false},
		{`{"match": {}, "view": "json"}`, false},
		{`{"match": {"content_type": "text/html; charset=utf-8"}, "view": "code"}`, false},
		{`{"view": "json"}`, false},
	} {
		errs := s.Validate(decode(t, tc.spec))
		if (len(errs) == 0) != tc.ok {
			t.Errorf("%s: %v, want ok %v", tc.spec, errs, tc.ok)
		}
	}
}
