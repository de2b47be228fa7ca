package tool_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"runtime"
	"strings"
	"testing"
	"testing/synctest"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"

	"agentd/internal/model"
	"agentd/internal/tool"
)

var ignoreDuration = cmpopts.IgnoreFields(tool.Outcome{}, "Duration")

func errOutcome(msg string) tool.Outcome {
	return tool.Outcome{Result: tool.Result{Output: msg, IsError: true}}
}

func okOutcome(out string) tool.Outcome {
	return tool.Outcome{Result: tool.Result{Output: out}}
}

const personSchema = `{
	"type": "object",
	"properties": {
		"name": {"type": "string"},
		"age": {"type": "integer", "minimum": 0},
		"unit": {"enum": ["c", "f"]},
		"score": {"type": "number", "minimum": 0.125, "exclusiveMaximum": 9.5},
		"step": {"type": "number", "multipleOf": 0.2},
		"tags": {"type": "array", "items": {"type": "string"}},
		"pair": {"type": "array", "prefixItems": [{"type": "string"}, {"type": "number"}]},
		"address": {
			"type": "object",
			"properties": {"city": {"type": "string"}, "zip": {"$ref": "#/$defs/zip"}},
			"required": ["city"]
		},
		"labels": {"type": "object", "additionalProperties": {"type": "string"}},
		"a/b": {"type": "boolean"}
	},
	"required": ["name"],
	"additionalProperties": false,
	"$defs": {"zip": {"type": "string", "pattern": "^[0-9]{5}$"}}
}`

func TestRunArguments(t *testing.T) {
	r := tool.NewRegistry(nil)
	for _, tl := range []tool.Tool{
		echo("person", personSchema),
		echo("any", ""),
		echo("with_id", `{"$id":"https://example.com/s.json","type":"object","properties":{"a":{"type":"object","properties":{"b":{"type":"string"}}}}}`),
	} {
		if err := r.Register(tl); err != nil {
			t.Fatal(err)
		}
	}
	tests := []struct {
		name, tool, args string
		want             tool.Outcome
	}{
		{"empty args mean {}", "any", ``, okOutcome(`{}`)},
		{"null args mean {}", "any", `null`, okOutcome(`{}`)},
		{"blank args mean {}", "any", " \n", okOutcome(`{}`)},
		{"object passes through", "any", ` {"x": [1, 2]} `, okOutcome(`{"x": [1, 2]}`)},
		{"array", "any", `[1]`, errOutcome(`invalid arguments for any: arguments must be a JSON object, got an array`)},
		{"number", "any", `5`, errOutcome(`invalid arguments for any: arguments must be a JSON object, got a number`)},
		{"string", "any", `"x"`, errOutcome(`invalid arguments for any: arguments must be a JSON object, got a string`)},
		{"bad JSON", "any", `{"x":`, errOutcome(`invalid arguments for any: arguments are not valid JSON: unexpected end of JSON input`)},
		{"trailing data", "any", `{} {}`, errOutcome(`invalid arguments for any: arguments are not valid JSON: invalid character '{' after top-level value`)},
		{"valid", "person", `{"name":"Ann","age":3,"address":{"city":"Lyon","zip":"69001"},"labels":{"k":"v"}}`,
			okOutcome(`{"name":"Ann","age":3,"address":{"city":"Lyon","zip":"69001"},"labels":{"k":"v"}}`)},
		{"missing required", "person", `{}`,
			errOutcome(`invalid arguments for person: required: missing properties: ["name"]`)},
		{"wrong type", "person", `{"name":5}`,
			errOutcome(`invalid arguments for person: property "name": type: 5 has type "integer", want "string"`)},
		{"minimum", "person", `{"name":"a","age":-1}`,
			errOutcome(`invalid arguments for person: property "age": minimum: -1 is less than 0`)},
		{"exclusive maximum", "person", `{"name":"a","score":10}`,
			errOutcome(`invalid arguments for person: property "score": exclusiveMaximum: 10 is greater than or equal to 9.5`)},
		{"fraction", "person", `{"name":"a","score":-0.25}`,
			errOutcome(`invalid arguments for person: property "score": minimum: -0.25 is less than 0.125`)},
		{"multiple of", "person", `{"name":"a","step":0.3}`,
			errOutcome(`invalid arguments for person: property "step": multipleOf: 0.3 is not a multiple of 0.2`)},
		{"not an integer", "person", `{"name":"a","age":1.5}`,
			errOutcome(`invalid arguments for person: property "age": type: 1.5 has type "number", want "integer"`)},
		{"enum", "person", `{"name":"a","unit":"k"}`,
			errOutcome(`invalid arguments for person: property "unit": enum: k does not equal any of: [c f]`)},
		{"unknown property", "person", `{"name":"a","nick":"b"}`,
			errOutcome(`invalid arguments for person: unexpected additional properties ["nick"]`)},
		{"array item", "person", `{"name":"a","tags":["x",2]}`,
			errOutcome(`invalid arguments for person: property "tags[]": type: 2 has type "integer", want "string"`)},
		{"prefix item", "person", `{"name":"a","pair":["x","y"]}`,
			errOutcome(`invalid arguments for person: property "pair[1]": type: y has type "string", want "number"`)},
		{"nested required", "person", `{"name":"a","address":{}}`,
			errOutcome(`invalid arguments for person: property "address": required: missing properties: ["city"]`)},
		{"through a $ref", "person", `{"name":"a","address":{"city":"x","zip":"1"}}`,
			errOutcome(`invalid arguments for person: property "address.zip": pattern: "1" does not match regular expression "^[0-9]{5}$"`)},
		{"additional property value", "person", `{"name":"a","labels":{"k":1}}`,
			errOutcome(`invalid arguments for person: property "labels.*": type: 1 has type "integer", want "string"`)},
		{"schema with an $id", "with_id", `{"a":{"b":true}}`,
			errOutcome(`invalid arguments for with_id: property "a.b": type: true has type "boolean", want "string"`)},
		{"escaped property name", "person", `{"name":"a","a/b":"yes"}`,
			errOutcome(`invalid arguments for person: property "a/b": type: yes has type "string", want "boolean"`)},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := r.Run(t.Context(), &tool.Call{ID: "c1", Name: tt.tool, Args: json.RawMessage(tt.args)}, nil)
			if diff := cmp.Diff(tt.want, got, ignoreDuration); diff != "" {
				t.Errorf("Run(%s, %s) (-want +got):\n%s", tt.tool, tt.args, diff)
			}
		})
	}
}

func TestRunUnknownTool(t *testing.T) {
	r := tool.NewRegistry(nil)
	if diff := cmp.Diff(errOutcome(`unknown tool "x"; no tools are available`),
		r.Run(t.Context(), &tool.Call{Name: "x"}, nil), ignoreDuration); diff != "" {
		t.Errorf("empty registry (-want +got):\n%s", diff)
	}
	for _, n := range []string{"b", "a", "c"} {
		if err := r.Register(echo(n, "")); err != nil {
			t.Fatal(err)
		}
	}
	if diff := cmp.Diff(errOutcome(`unknown tool "x"; available tools: a, b, c`),
		r.Run(t.Context(), &tool.Call{Name: "x"}, nil), ignoreDuration); diff != "" {
		t.Errorf("three tools (-want +got):\n%s", diff)
	}
	for i := range 30 {
		if err := r.Register(echo(fmt.Sprintf("t%02d", i), "")); err != nil {
			t.Fatal(err)
		}
	}
	got := r.Run(t.Context(), &tool.Call{Name: "x"}, nil)
	want := `unknown tool "x"; available tools: a, b, c, t00, t01, t02, t03, t04, t05, t06, t07, t08, t09, t10, t11, t12, t13, t14, t15, t16 and 13 more`
	if diff := cmp.Diff(errOutcome(want), got, ignoreDuration); diff != "" {
		t.Errorf("33 tools (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff(errOutcome("no tool call given"), r.Run(t.Context(), nil, nil), ignoreDuration); diff != "" {
		t.Errorf("nil call (-want +got):\n%s", diff)
	}
}

func TestRunToolBehaviour(t *testing.T) {
	release := make(chan struct{})
	t.Cleanup(func() { close(release) })

	tools := map[string]func(context.Context, *tool.Call) (tool.Result, error){
		"fields": func(_ context.Context, c *tool.Call) (tool.Result, error) {
			return tool.Result{Output: fmt.Sprintf("%s %s %s %s %s", c.ID, c.Name, c.Agent, c.Session, c.Args)}, nil
		},
		"fails": func(context.Context, *tool.Call) (tool.Result, error) {
			return tool.Result{Output: "ignored"}, errors.New("disk full")
		},
		"soft_error": func(context.Context, *tool.Call) (tool.Result, error) {
			return tool.Result{Output: "no such city", IsError: true}, nil
		},
		"boom": func(context.Context, *tool.Call) (tool.Result, error) {
			panic("kaboom")
		},
		"nil_map": func(context.Context, *tool.Call) (tool.Result, error) {
			var m map[string]int
			//lint:ignore SA5000 the tool fails with a runtime error on purpose: agentd must turn it into a tool error
			m["x"] = 1
			return tool.Result{}, nil
		},
		"goexit": func(context.Context, *tool.Call) (tool.Result, error) {
			runtime.Goexit()
			return tool.Result{}, nil
		},
		"stubborn": func(context.Context, *tool.Call) (tool.Result, error) {
			<-release // ignores ctx
			return tool.Result{Output: "late"}, nil
		},
		"polite": func(ctx context.Context, _ *tool.Call) (tool.Result, error) {
			<-ctx.Done()
			return tool.Result{}, ctx.Err()
		},
	}
	r := tool.NewRegistry(nil)
	for name, fn := range tools {
		if err := r.Register(tool.Func(tool.Spec{Name: name}, fn)); err != nil {
			t.Fatal(err)
		}
	}
	canceled, cancel := context.WithCancel(t.Context())
	cancel()

	tests := []struct {
		name string
		ctx  context.Context
		call tool.Call
		opts *tool.RunOptions
		want tool.Outcome
	}{
		{name: "call fields reach the tool", call: tool.Call{ID: "id1", Name: "fields", Agent: "ag", Session: "chat:x", Args: json.RawMessage(`{"q":1}`)},
			want: okOutcome(`id1 fields ag chat:x {"q":1}`)},
		{name: "returned error", call: tool.Call{Name: "fails"}, want: errOutcome("disk full")},
		{name: "error result", call: tool.Call{Name: "soft_error"}, want: errOutcome("no such city")},
		{name: "panic", call: tool.Call{Name: "boom"}, want: errOutcome("tool boom panicked: kaboom")},
		{name: "runtime panic", call: tool.Call{Name: "nil_map"}, want: errOutcome("tool nil_map panicked: assignment to entry in nil map")},
		{name: "goexit", call: tool.Call{Name: "goexit"}, want: errOutcome("tool goexit stopped without a result")},
		{name: "ignores its deadline", call: tool.Call{Name: "stubborn"}, opts: &tool.RunOptions{Timeout: 20 * time.Millisecond},
			want: errOutcome("tool stubborn timed out after 20ms")},
		{name: "honours its deadline", call: tool.Call{Name: "polite"}, opts: &tool.RunOptions{Timeout: time.Second / 50},
			want: errOutcome("tool polite timed out after 20ms")},
		{name: "caller canceled", ctx: canceled, call: tool.Call{Name: "polite"},
			want: errOutcome("tool polite was stopped: context canceled")},
		{name: "caller canceled, tool ignores it", ctx: canceled, call: tool.Call{Name: "stubborn"},
			want: errOutcome("tool stubborn was stopped: context canceled")},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ctx := tt.ctx
			if ctx == nil {
				ctx = t.Context()
			}
			got := r.Run(ctx, &tt.call, tt.opts)
			if diff := cmp.Diff(tt.want, got, ignoreDuration); diff != "" {
				t.Errorf("Run (-want +got):\n%s", diff)
			}
		})
	}
}

func TestRunDefaultTimeout(t *testing.T) {
	release := make(chan struct{})
	t.Cleanup(func() { close(release) })
	r := tool.NewRegistry(&tool.RegistryOptions{Timeout: 2 * time.Second})
	err := r.Register(tool.Func(tool.Spec{Name: "stubborn"}, func(context.Context, *tool.Call) (tool.Result, error) {
		<-release
		return tool.Result{}, nil
	}))
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(t.Context())
	// The registry's 2s default applies: canceling the caller is what stops
	// the call, and the message says so rather than "timed out".
	go cancel()
	got := r.Run(ctx, &tool.Call{Name: "stubborn"}, nil)
	if diff := cmp.Diff(errOutcome("tool stubborn was stopped: context canceled"), got, ignoreDuration); diff != "" {
		t.Errorf("Run (-want +got):\n%s", diff)
	}
}

func TestRunOutputCap(t *testing.T) {
	tests := []struct {
		name    string
		output  string
		omitted int64 // what the tool says it left out
		max     int
		want    tool.Outcome
	}{
		{"under the cap", "hello", 0, 10, okOutcome("hello")},
		{"exactly the cap", "helloworld", 0, 10, okOutcome("helloworld")},
		{"over the cap", "hello world", 0, 5, tool.Outcome{Result: tool.Result{Output: "hello\n[output truncated: 6 of 11 bytes cut]"}, Truncated: true}},
		// "é" is 2 bytes: a cap of 5 would split the third one.
		{"on a rune boundary", "ééééé", 0, 5, tool.Outcome{Result: tool.Result{Output: "éé\n[output truncated: 6 of 10 bytes cut]"}, Truncated: true}},
		// "🙂" is 4 bytes.
		{"four-byte runes", "🙂🙂", 0, 7, tool.Outcome{Result: tool.Result{Output: "🙂\n[output truncated: 4 of 8 bytes cut]"}, Truncated: true}},
		{"cap smaller than a rune", "🙂", 0, 2, tool.Outcome{Result: tool.Result{Output: "\n[output truncated: 4 of 4 bytes cut]"}, Truncated: true}},
		// A tool that read no more than the cap: the note counts what it
		// left out.
		{"left out by the tool", "hello", 95, 10, tool.Outcome{Result: tool.Result{Output: "hello\n[output truncated: 95 of 100 bytes cut]"}, Truncated: true}},
		{"left out and over the cap", "hello world", 89, 5, tool.Outcome{Result: tool.Result{Output: "hello\n[output truncated: 95 of 100 bytes cut]"}, Truncated: true}},
		{"invalid UTF-8 still capped", "\xff\xff\xff\xff\xff\xff", 0, 4, tool.Outcome{Result: tool.Result{Output: "\xff\xff\xff\xff\n[output truncated: 2 of 6 bytes cut]"}, Truncated: true}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := tool.NewRegistry(nil)
			err := r.Register(tool.Func(tool.Spec{Name: "big"}, func(_ context.Context, c *tool.Call) (tool.Result, error) {
				if c.MaxOutputBytes != tt.max {
					t.Errorf("the call's MaxOutputBytes is %d, want %d", c.MaxOutputBytes, tt.max)
				}
				return tool.Result{Output: tt.output, Omitted: tt.omitted}, nil
			}))
			if err != nil {
				t.Fatal(err)
			}
			got := r.Run(t.Context(), &tool.Call{Name: "big"}, &tool.RunOptions{MaxOutputBytes: tt.max})
			if diff := cmp.Diff(tt.want, got, ignoreDuration); diff != "" {
				t.Errorf("Run (-want +got):\n%s", diff)
			}
		})
	}
}

func TestRunDefaultOutputCap(t *testing.T) {
	r := tool.NewRegistry(nil)
	err := r.Register(tool.Func(tool.Spec{Name: "big"}, func(context.Context, *tool.Call) (tool.Result, error) {
		return tool.Result{Output: strings.Repeat("x", tool.DefaultMaxOutputBytes+1)}, nil
	}))
	if err != nil {
		t.Fatal(err)
	}
	got := r.Run(t.Context(), &tool.Call{Name: "big"}, nil)
	want := strings.Repeat("x", tool.DefaultMaxOutputBytes) + "\n[output truncated: 1 of 65537 bytes cut]"
	if !got.Truncated || got.Result.Output != want {
		t.Errorf("Run: Truncated=%v, output ends %q", got.Truncated, got.Result.Output[len(got.Result.Output)-50:])
	}
}

// Run passes on the images a provider will take and drops the others with
// a note, so that a tool cannot wedge a session with an image every later
// model request would fail on.
func TestRunImages(t *testing.T) {
	png := model.Image{MIMEType: "image/png", Data: []byte("\x89PNG\r\n\x1a\n....")}
	lying := model.Image{MIMEType: "image/png", Data: []byte("<html><script>")}
	bmp := model.Image{MIMEType: "image/bmp", Data: []byte("BM....")}
	big := model.Image{MIMEType: "image/png", Data: append(bytes.Clone(png.Data), make([]byte, model.MaxImageBytes)...)}
	nine := make([]model.Image, model.MaxImages+1)
	for i := range nine {
		nine[i] = png
	}
	tests := []struct {
		name       string
		images     []model.Image
		wantImages []model.Image
		wantOutput string
	}{
		{"none", nil, nil, "shot"},
		{"one", []model.Image{png}, []model.Image{png}, "shot"},
		{"content not what it says", []model.Image{lying, png}, []model.Image{png},
			"shot\n[image 0 dropped: bad image: content is text/html; charset=utf-8, want PNG, JPEG, GIF or WebP]"},
		{"unsupported type", []model.Image{bmp}, nil,
			`shot` + "\n" + `[image 0 dropped: bad image: type "image/bmp" not supported (want image/png, image/jpeg, image/gif or image/webp)]`},
		{"too large", []model.Image{big}, nil, fmt.Sprintf("shot\n[image 0 dropped: bad image: %d bytes, more than %d]", len(big.Data), model.MaxImageBytes)},
		{"too many", nine, nine[:model.MaxImages], "shot\n[image 8 dropped: more than 8 images]"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := tool.NewRegistry(nil)
			err := r.Register(tool.Func(tool.Spec{Name: "camera"}, func(context.Context, *tool.Call) (tool.Result, error) {
				return tool.Result{Output: "shot", Images: tt.images}, nil
			}))
			if err != nil {
				t.Fatal(err)
			}
			got := r.Run(t.Context(), &tool.Call{Name: "camera"}, nil)
			want := tool.Outcome{Result: tool.Result{Output: tt.wantOutput, Images: tt.wantImages}}
			if diff := cmp.Diff(want, got, ignoreDuration); diff != "" {
				t.Errorf("Run (-want +got):\n%s", diff)
			}
		})
	}
}

func BenchmarkRun(b *testing.B) {
	r := tool.NewRegistry(nil)
	if err := r.Register(echo("person", personSchema)); err != nil {
		b.Fatal(err)
	}
	c := &tool.Call{ID: "c1", Name: "person", Args: json.RawMessage(`{"name":"Ann","age":3,"tags":["a","b"]}`)}
	b.ReportAllocs()
	for b.Loop() {
		if out := r.Run(b.Context(), c, nil); out.Result.IsError {
			b.Fatal(out.Result.Output)
		}
	}
}

// slowTool takes a minute, and may run for as long as its Deadliner says.
type slowTool struct{ deadline time.Duration }

func (slowTool) Spec() tool.Spec {
	return tool.Spec{Name: "slow", InputSchema: json.RawMessage(`{"type":"object"}`)}
}

func (slowTool) Call(ctx context.Context, _ *tool.Call) (tool.Result, error) {
	select {
	case <-time.After(time.Minute):
		return tool.Result{Output: "done"}, nil
	case <-ctx.Done():
		return tool.Result{}, ctx.Err()
	}
}

func (s slowTool) Deadline(string) time.Duration { return s.deadline }

// A tool that says its calls run longer than the agent's tools.timeout
// gets that long; one that says less keeps the agent's timeout.
func TestDeadlinerLengthensTheTimeout(t *testing.T) {
	for _, tc := range []struct {
		deadline time.Duration
		want     string
	}{{2 * time.Minute, "done"}, {time.Second, "tool slow timed out after 30s"}} {
		synctest.Test(t, func(t *testing.T) {
			r := tool.NewRegistry(nil)
			if err := r.Register(slowTool{tc.deadline}); err != nil {
				t.Fatal(err)
			}
			out := r.Run(t.Context(), &tool.Call{ID: "1", Name: "slow", Args: json.RawMessage(`{}`), Agent: "a"},
				&tool.RunOptions{Timeout: 30 * time.Second})
			if out.Result.Output != tc.want {
				t.Errorf("deadline %s: %+v, want %q", tc.deadline, out.Result, tc.want)
			}
		})
	}
}
