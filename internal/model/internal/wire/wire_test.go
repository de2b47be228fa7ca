package wire

import (
	"encoding/json"
	"math"
	"net/http"
	"strconv"
	"strings"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/google/go-cmp/cmp"

	"agentd/internal/model"
)

func TestKind(t *testing.T) {
	tests := []struct {
		name     string
		status   int
		named    error
		overflow bool
		want     error
	}{
		{name: "401", status: 401, want: model.ErrAuth},
		{name: "403 beats a rate-limit name", status: 403, named: model.ErrRateLimited, want: model.ErrAuth},
		{name: "auth name beats 429", status: 429, named: model.ErrAuth, want: model.ErrAuth},
		{name: "429", status: 429, want: model.ErrRateLimited},
		{name: "429 beats an overloaded name", status: 429, named: model.ErrOverloaded, want: model.ErrRateLimited},
		{name: "413", status: 413, want: model.ErrContextOverflow},
		{name: "overflow name on 400", status: 400, named: model.ErrContextOverflow, want: model.ErrContextOverflow},
		{name: "400 overflow message", status: 400, named: model.ErrBadRequest, overflow: true, want: model.ErrContextOverflow},
		{name: "in-stream overflow message", status: 0, overflow: true, want: model.ErrContextOverflow},
		{name: "422 overflow message is a bad request", status: 422, overflow: true, want: model.ErrBadRequest},
		{name: "500", status: 500, want: model.ErrServer},
		{name: "502", status: 502, want: model.ErrServer},
		{name: "500 with a server name", status: 500, named: model.ErrServer, want: model.ErrServer},
		{name: "500 with an overloaded name", status: 500, named: model.ErrOverloaded, want: model.ErrOverloaded},
		{name: "503", status: 503, want: model.ErrOverloaded},
		{name: "503 with a server name", status: 503, named: model.ErrServer, want: model.ErrOverloaded},
		{name: "529 with a bad-request name", status: 529, named: model.ErrBadRequest, want: model.ErrOverloaded},
		{name: "in-stream overloaded name", status: 0, named: model.ErrOverloaded, want: model.ErrOverloaded},
		{name: "in-stream server name", status: 0, named: model.ErrServer, want: model.ErrServer},
		{name: "404", status: 404, want: model.ErrBadRequest},
		{name: "in-stream bad-request name", status: 0, named: model.ErrBadRequest, want: model.ErrBadRequest},
		{name: "in-stream, nothing named", status: 0, want: model.ErrServer},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := Kind(tt.status, tt.named, tt.overflow); got != tt.want {
				t.Errorf("Kind(%d, %v, %v) = %v, want %v", tt.status, tt.named, tt.overflow, got, tt.want)
			}
		})
	}
}

func TestRetryAfter(t *testing.T) {
	now := time.Date(1994, 11, 6, 8, 49, 0, 0, time.UTC)
	tests := []struct {
		name   string
		header http.Header
		want   time.Duration
	}{
		{name: "none", header: http.Header{}, want: 0},
		{name: "seconds", header: http.Header{"Retry-After": {" 7 "}}, want: 7 * time.Second},
		{name: "fractional seconds", header: http.Header{"Retry-After": {"1.5"}}, want: 1500 * time.Millisecond},
		{name: "milliseconds win", header: http.Header{"Retry-After": {"2"}, "Retry-After-Ms": {"250"}}, want: 250 * time.Millisecond},
		{name: "bad milliseconds fall back", header: http.Header{"Retry-After": {"2"}, "Retry-After-Ms": {"soon"}}, want: 2 * time.Second},
		{name: "HTTP date", header: http.Header{"Retry-After": {"Sun, 06 Nov 1994 08:49:37 GMT"}}, want: 37 * time.Second},
		{name: "date in the past", header: http.Header{"Retry-After": {"Sun, 06 Nov 1994 08:00:00 GMT"}}, want: 0},
		{name: "date far ahead is capped", header: http.Header{"Retry-After": {"Sun, 06 Nov 2094 08:49:37 GMT"}}, want: maxRetryAfter},
		{name: "negative", header: http.Header{"Retry-After": {"-3"}}, want: 0},
		{name: "NaN", header: http.Header{"Retry-After": {"NaN"}}, want: 0},
		{name: "huge is capped", header: http.Header{"Retry-After": {"1e300"}}, want: maxRetryAfter},
		{name: "garbage", header: http.Header{"Retry-After": {"later"}}, want: 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := retryAfter(tt.header, now); got != tt.want {
				t.Errorf("retryAfter(%v) = %v, want %v", tt.header, got, tt.want)
			}
		})
	}
}

func FuzzRetryAfter(f *testing.F) {
	for _, s := range []string{"7", "1.5", "-1", "NaN", "+Inf", "1e300", "Sun, 06 Nov 1994 08:49:37 GMT", ""} {
		f.Add(s, "")
		f.Add("", s)
	}
	now := time.Date(1994, 11, 6, 8, 49, 0, 0, time.UTC)
	f.Fuzz(func(t *testing.T, seconds, ms string) {
		h := http.Header{}
		h.Set("Retry-After", seconds)
		h.Set("Retry-After-Ms", ms)
		if d := retryAfter(h, now); d < 0 || d > maxRetryAfter {
			t.Errorf("retryAfter(%q, %q) = %v, outside [0, %v]", seconds, ms, d, maxRetryAfter)
		}
	})
}

func TestClampDelay(t *testing.T) {
	for _, sec := range []float64{math.Inf(1), math.Inf(-1), math.NaN(), -1, 0, 1e-12, 0.5, 86399, 86400, 1e18} {
		if d := clampDelay(sec); d < 0 || d > maxRetryAfter {
			t.Errorf("clampDelay(%v) = %v, outside [0, %v]", sec, d, maxRetryAfter)
		}
	}
}

func TestFailRedacts(t *testing.T) {
	e := &Endpoint{
		Name:   "prov",
		APIKey: "sk-0123456789",
		Headers: map[string]string{
			"X-Session-Token": "tok-abcdef",
			"Authorization":   "Basic dXNlcjpwYXNz",
			"HTTP-Referer":    "https://agentd.example",
			"X-Api-Key":       "k1", // too short to redact safely
		},
	}
	got := e.Fail(model.ErrAuth, 401, "key sk-0123456789, token tok-abcdef, basic Basic dXNlcjpwYXNz, from https://agentd.example, k1, "+
		"header Authorization: Bearer eyJhbGciOi.J9x_y-z, other key sk-proj-AbCdEfGh0123456789xyz, bearer tiny")
	want := &model.Error{
		Kind: model.ErrAuth, Provider: "prov", Status: 401,
		Message: "key [redacted], token [redacted], basic [redacted], from https://agentd.example, k1, " +
			"header Authorization: Bearer [redacted], other key [redacted], bearer tiny",
	}
	if diff := cmp.Diff(*want, *got, cmp.Comparer(func(a, b error) bool { return a == b })); diff != "" {
		t.Errorf("Fail (-want +got):\n%s", diff)
	}
}

func TestSnippet(t *testing.T) {
	long := strings.Repeat("a", 511) + "é" + strings.Repeat("b", 100)
	tests := []struct {
		name string
		body string
		want string
	}{
		{name: "empty", body: "", want: ""},
		{name: "trimmed", body: "  upstream error\n", want: "upstream error"},
		{name: "invalid UTF-8 replaced", body: "bad \xff byte", want: "bad ? byte"},
		{name: "cut on a rune boundary", body: long, want: strings.Repeat("a", 511) + "..."},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := Snippet([]byte(tt.body))
			if got != tt.want {
				t.Errorf("Snippet() = %q, want %q", got, tt.want)
			}
			if !utf8.ValidString(got) {
				t.Errorf("Snippet() = %q is not valid UTF-8", got)
			}
		})
	}
}

func TestOutput(t *testing.T) {
	var deltas []model.Delta
	o := Output{OnDelta: func(d model.Delta) { deltas = append(deltas, d) }}
	o.Add("think", true)
	o.Add("", false)
	o.Add("Hel", false)
	o.Add("lo", false)
	if o.Text() != "Hello" || o.Reasoning() != "think" {
		t.Errorf("Text() = %q, Reasoning() = %q", o.Text(), o.Reasoning())
	}
	want := []model.Delta{{Text: "think", Reasoning: true}, {Text: "Hel"}, {Text: "lo"}}
	if diff := cmp.Diff(want, deltas); diff != "" {
		t.Errorf("deltas (-want +got):\n%s", diff)
	}
	var quiet Output
	quiet.Add("x", false) // no OnDelta: kept, not passed on
	if quiet.Text() != "x" {
		t.Errorf("Text() = %q, want x", quiet.Text())
	}
}

func TestSchemaAndBody(t *testing.T) {
	e := &Endpoint{Name: "prov"}
	if s, err := e.AppendSchema(nil, &model.ToolSpec{Name: "none", Parameters: []byte(" \n")}); err != nil || string(s) != emptySchema {
		t.Errorf("AppendSchema(blank) = %s, %v; want the empty schema", s, err)
	}
	if s, err := e.AppendSchema([]byte("x"), &model.ToolSpec{Name: "spaced", Parameters: []byte(` { "type" : "object" } `)}); err != nil || string(s) != `x{"type":"object"}` {
		t.Errorf("AppendSchema(spaced) = %s, %v; want it compacted after x", s, err)
	}
	if _, err := e.AppendSchema(nil, &model.ToolSpec{Name: "broken", Parameters: []byte(`{"type":`)}); err == nil ||
		!strings.Contains(err.Error(), "tool broken: parameters are not valid JSON") {
		t.Errorf("AppendSchema(invalid) error = %v", err)
	}
	var b Body
	b.Set("z", []byte("1"))
	if err := b.SetValue("b", "<&>"); err != nil {
		t.Fatal(err)
	}
	b.Set("a", []byte("2"))
	b.Set("z", []byte("3"))
	b.Set("gone", []byte("4"))
	b.Delete("gone")
	if got := string(b.Bytes()); got != `{"a":2,"b":"<&>","z":3}` {
		t.Errorf("Bytes() = %s", got)
	}
	if err := b.SetFloat("x", math.NaN()); err == nil {
		t.Error("SetFloat(NaN) succeeded")
	}
}

// An encoding is made once and then taken from the Encoded.
func TestAppendCached(t *testing.T) {
	var c model.Encoded
	n := 0
	enc := func(dst []byte, s *string) ([]byte, error) { n++; return append(dst, *s...), nil }
	s := "one"
	for range 2 {
		got, err := AppendCached([]byte("<"), &s, "f", &c, enc)
		if err != nil || string(got) != "<one" {
			t.Fatalf("AppendCached = %s, %v", got, err)
		}
	}
	if got, _ := AppendCached(nil, &s, "g", &c, enc); string(got) != "one" || n != 2 {
		t.Errorf("another format: %s after %d encodings, want one after 2", got, n)
	}
	if got, _ := AppendCached(nil, &s, "f", nil, enc); string(got) != "one" || n != 3 {
		t.Errorf("no Encoded: %s after %d encodings, want one after 3", got, n)
	}
}

// FuzzAppendFloat holds AppendFloat to encoding/json.
func FuzzAppendFloat(f *testing.F) {
	for _, x := range []float64{0, 0.7, 1, -2.5, 1e-7, 1e-6, 123456789e12, 1e21, 1e300, -1e-300, math.SmallestNonzeroFloat64} {
		f.Add(x)
	}
	f.Fuzz(func(t *testing.T, x float64) {
		want, err := json.Marshal(x)
		if err != nil {
			t.Skip()
		}
		if got := AppendFloat(nil, x); string(got) != string(want) {
			t.Errorf("AppendFloat(%v) = %s, encoding/json %s", x, got, want)
		}
	})
}

func BenchmarkOutputAdd(b *testing.B) {
	pieces := make([]string, 200)
	for i := range pieces {
		pieces[i] = "token " + strconv.Itoa(i) + " "
	}
	b.ReportAllocs()
	for b.Loop() {
		o := Output{OnDelta: func(model.Delta) {}}
		for _, p := range pieces {
			o.Add(p, false)
		}
	}
}
