package action

import (
	"encoding/json"
	"net/url"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// FuzzURLFill checks the URL a template makes against net/url: whatever
// the arguments hold ('/', '?', '#', '%', line breaks, "..") the host,
// the path's segments and the query's parameters stay those of the
// template, and each value comes back unchanged.
func FuzzURLFill(f *testing.F) {
	for _, s := range [][2]string{{"x", "y"}, {"a/../b", "c&d=e"}, {"?#%", "%zz\n"}, {"..", ""}, {"", "+ /"}, {"é\x00", "\r\n#frag"}} {
		f.Add(s[0], s[1])
	}
	ut, err := parseURL("https://h.example:8443/a/{{x}}/b?q={{y}}&r=1", map[string]string{"s": "pre-{{y}}"})
	if err != nil {
		f.Fatal(err)
	}
	f.Fuzz(func(t *testing.T, x, y string) {
		args := map[string]any{"x": x, "y": y}
		if err := ut.check(args); err != nil {
			if x != "" && x != "." && x != ".." {
				t.Fatalf("check(%q): %v", x, err)
			}
			return
		}
		raw := ut.fill(args)
		u, err := url.Parse(raw)
		if err != nil {
			t.Fatalf("%q: %v", raw, err)
		}
		if u.Scheme != "https" || u.Host != "h.example:8443" || u.User != nil || u.Fragment != "" || u.RawFragment != "" {
			t.Fatalf("%q: scheme %q host %q fragment %q", raw, u.Scheme, u.Host, u.Fragment)
		}
		segs := strings.Split(u.EscapedPath(), "/")
		if len(segs) != 4 || segs[0] != "" || segs[1] != "a" || segs[3] != "b" {
			t.Fatalf("%q: path segments %q", raw, segs)
		}
		if got, err := url.PathUnescape(segs[2]); err != nil || got != x {
			t.Fatalf("%q: segment %q unescapes to %q, %v; want %q", raw, segs[2], got, err, x)
		}
		want := url.Values{"q": {y}, "r": {"1"}, "s": {"pre-" + y}}
		if y == "" {
			want["q"] = []string{""}
		}
		if d := cmp.Diff(want, u.Query()); d != "" {
			t.Fatalf("%q: query (-want +got):\n%s", raw, d)
		}
	})
}

// FuzzBodyFill checks the body against encoding/json: a value put in a
// string template comes back as that text, a typed one as that value.
func FuzzBodyFill(f *testing.F) {
	for _, s := range []string{"", `"`, `\u0000`, "{{x}}", "\xff", `{"a":1}`, "</script>"} {
		f.Add(s)
	}
	bt, err := parseBody(json.RawMessage(`{"whole": "{{x}}", "text": "<{{x}}>", "list": ["{{x}}", "{{none}}"]}`))
	if err != nil {
		f.Fatal(err)
	}
	f.Fuzz(func(t *testing.T, x string) {
		b, err := bt.fill(map[string]any{"x": x})
		if err != nil {
			t.Fatal(err)
		}
		var got struct {
			Whole, Text string
			List        []any
		}
		if err := json.Unmarshal(b, &got); err != nil {
			t.Fatalf("%s: %v", b, err)
		}
		// What encoding/json makes of the text alone (invalid UTF-8 becomes U+FFFD).
		enc, _ := json.Marshal(x)
		if err := json.Unmarshal(enc, &x); err != nil {
			t.Fatal(err)
		}
		if got.Whole != x || got.Text != "<"+x+">" || len(got.List) != 2 || got.List[0] != x || got.List[1] != nil {
			t.Fatalf("%s: decodes to %+v for %q", b, got, x)
		}
	})
}

// FuzzTemplate parses any text without panicking; a path that parses
// prints as a path that parses to the same steps.
func FuzzTemplate(f *testing.F) {
	for _, s := range []string{"", "{{a}}", "x {{ a.b[0].c }} y", "{{", "}}{{$.a}}", "{{a[}}", "{{[0]}}", "{{a..b}}"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		tpl, err := parseTemplate(s)
		if err != nil {
			return
		}
		for _, r := range tpl.refs() {
			again, err := parsePath(r.String())
			if err != nil || !cmp.Equal(again, r, cmp.AllowUnexported(step{})) {
				t.Fatalf("%q: path %v prints as %q, which parses to %v, %v", s, r, r.String(), again, err)
			}
		}
		_ = tpl.String(map[string]any{"a": []any{map[string]any{"b": 1}}})
	})
}
