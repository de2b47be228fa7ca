package xmlproto

import (
	"bytes"
	"encoding/json"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"agentd/internal/txtar"
)

// steps are the recorded steps of testdata/stream.txtar.
func steps(t testing.TB) []string {
	t.Helper()
	a, err := txtar.ParseFile("testdata/stream.txtar")
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, n := range []string{"step1", "step2", "step3"} {
		s, ok := a.Get(n)
		if !ok {
			t.Fatalf("stream.txtar has no %s", n)
		}
		out = append(out, s)
	}
	return out
}

// split cuts s where cuts say: each byte is the length of the next
// chunk (0 counts as 1).
func split(s string, cuts []byte) []string {
	var out []string
	for len(s) > 0 {
		n := 1
		if len(cuts) > 0 {
			n, cuts = max(1, int(cuts[0])), cuts[1:]
		}
		n = min(n, len(s))
		out, s = append(out, s[:n]), s[n:]
	}
	return out
}

// FuzzParserSplit: however a stream is cut into writes, the parser finds
// the same items (deltas joined), holds bounded state and never panics.
func FuzzParserSplit(f *testing.F) {
	for _, s := range steps(f) {
		f.Add(s, []byte{1, 4, 7, 64})
	}
	f.Add(`<think>a &lt; b<![CDATA[<x>]]></think><output type='t' k="v">{"a":1}</output>`, []byte{3})
	f.Add("<action_call name=\"x\">```json\n{}\n```</action_call></think><action_results>x</action_results>", []byte{2, 5})
	f.Fuzz(func(t *testing.T, s string, cuts []byte) {
		whole := merged(parseChunks(nil, s))
		p := NewParser(&Options{MaxElement: 256})
		var small []Item
		for _, c := range split(s, cuts) {
			small = append(small, p.Write(c)...)
			if len(p.buf) > maxTag || p.raw.Len() > 256+maxTag || p.text.Len() > 256 {
				t.Fatalf("unbounded state: buf %d, raw %d, text %d", len(p.buf), p.raw.Len(), p.text.Len())
			}
		}
		small = append(small, p.Close()...)
		var out int
		for _, it := range small {
			out += len(it.Text) + len(it.Raw) + len(it.Args)
		}
		if out > 4*len(s)+64 {
			t.Fatalf("%d bytes of items from %d of input", out, len(s))
		}
		if len(s) > 256 { // MaxElement may cut elements and text differently
			return
		}
		chunked := merged(parseChunks(nil, split(s, cuts)...))
		if d := cmp.Diff(whole, chunked); d != "" {
			t.Fatalf("one write vs %d (-one +chunked):\n%s", len(split(s, cuts)), d)
		}
		if d := cmp.Diff(whole, merged(small)); d != "" {
			t.Fatalf("MaxElement over the input changed the items (-one +small):\n%s", d)
		}
	})
}

// FuzzCallJSON: a call's body is JSON exactly when encoding/json says so.
func FuzzCallJSON(f *testing.F) {
	for _, s := range []string{`{"a": [1, 2.5e3, "x\u003c"], "b": {"c": null}}`, `{"q": }`, `[1]`, `"s"`, `{} {}`, `{"a":"\ud800"}`, " 1 "} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, body string) {
		trimmed := strings.TrimSpace(body)
		if strings.Contains(body, "</") || trimmed == "" || strings.HasPrefix(trimmed, "```") || strings.HasPrefix(trimmed, "<![CDATA[") {
			return // the body's own close, and the wrappings the parser takes off
		}
		got := parseChunks(nil, `<action_call name="f">`+body+`</action_call>`)
		if len(got) != 1 {
			t.Fatalf("%d items: %+v", len(got), got)
		}
		if !json.Valid([]byte(body)) {
			if got[0].Kind != Problem {
				t.Fatalf("encoding/json rejects %q, the parser gave %+v", body, got[0])
			}
			return
		}
		var want bytes.Buffer
		if err := json.Compact(&want, []byte(body)); err != nil {
			t.Fatal(err)
		}
		if got[0].Kind != Call || string(got[0].Args) != want.String() {
			t.Fatalf("encoding/json accepts %q as %s, the parser gave %+v", body, want.String(), got[0])
		}
	})
}

// FuzzEscape: escaped text cannot open an element of the protocol, and
// an output holding it gives it back.
func FuzzEscape(f *testing.F) {
	for _, s := range []string{"a < b & c", "</output>", "< Action_Call name=x>", "&amp;&#x41;&lt", "<![CDATA[", "x<outp", "é"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, x string) {
		e := Escape(x)
		for _, it := range parseChunks(nil, e) {
			if it.Kind != Text {
				t.Fatalf("Escape(%q) = %q parses to %+v", x, e, it)
			}
		}
		got := parseChunks(nil, "<output>"+e+"</output>")
		if n := len(got); n == 0 || got[n-1].Kind != Output || got[n-1].Text != x {
			t.Fatalf("<output>%s</output> parses to %+v, not %q", e, got, x)
		}
	})
}

// FuzzCallText: an earlier call written back is read as the same call.
func FuzzCallText(f *testing.F) {
	f.Add("search", `{"q": "</action_call>"}`)
	f.Add(`a"&<b`, `{"x": "<OUTPUT >", "y": [true]}`)
	f.Fuzz(func(t *testing.T, name, args string) {
		if name == "" || len(name) > 1024 || !json.Valid([]byte(args)) {
			return // a tag is at most 4 KiB; tools' names are short
		}
		got := parseChunks(nil, CallText(name, json.RawMessage(args)))
		var want bytes.Buffer
		_ = json.Compact(&want, []byte(args))
		if len(got) != 1 || got[0].Kind != Call || got[0].Name != name {
			t.Fatalf("CallText(%q, %s) parses to %+v", name, args, got)
		}
		a, errA := decodeNumbers(want.Bytes())
		b, errB := decodeNumbers(got[0].Args)
		if errA != nil || errB != nil {
			t.Fatalf("args %s: %v, %v", got[0].Args, errA, errB)
		}
		if d := cmp.Diff(a, b); d != "" {
			t.Fatalf("args (-want +got):\n%s", d)
		}
	})
}

// decodeNumbers decodes JSON keeping numbers as written (1E700 too).
func decodeNumbers(j []byte) (any, error) {
	d := json.NewDecoder(bytes.NewReader(j))
	d.UseNumber()
	var v any
	err := d.Decode(&v)
	return v, err
}
