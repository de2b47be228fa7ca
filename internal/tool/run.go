package tool

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math/big"
	"regexp"
	"runtime/debug"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"
	"unicode/utf8"

	"agentd/internal/model"
)

// Defaults for RunOptions.
const (
	DefaultTimeout        = 60 * time.Second
	DefaultMaxOutputBytes = 64 << 10
)

// maxListedTools bounds the names listed when a model asks for an unknown
// tool.
const maxListedTools = 20

// RunOptions bounds one call. Zero fields take the registry's defaults.
type RunOptions struct {
	Timeout        time.Duration // the call's deadline; default 60s
	MaxOutputBytes int           // the cap on Result.Output; default 64 KiB
}

// Outcome is what Run reports about a call.
type Outcome struct {
	Result    Result
	Duration  time.Duration // wall time of Run
	Truncated bool          // Result.Output was cut to MaxOutputBytes, or the tool left some out
}

// errTimedOut is the cause of a call's context when its own deadline ends it.
var errTimedOut = errors.New("tool call timed out")

// Run runs one call and always returns a Result the model can read: every
// failure (an unknown tool, arguments that are not a JSON object or do not
// match the tool's schema, a returned error, a panic, the deadline) becomes
// an error result, never a Go error or a crash.
//
// Run does not apply a Policy: the caller decides whether the agent may
// make the call (and obtains approval for Ask) before running it.
//
// Empty or null Args mean {}. The tool runs with a context that ends after
// the timeout. If the tool ignores that context and has not returned at the
// deadline, Run returns a "timed out" result at once and leaves the tool's
// goroutine to finish on its own; its eventual result is discarded. A tool
// is therefore expected to honour ctx, and one that does not holds its
// resources until it returns.
//
// A panic in the tool is recovered (and logged with its stack) and becomes
// "tool X panicked: ...". A returned Go error becomes an error result with
// the error's message.
//
// Output longer than MaxOutputBytes is cut on a UTF-8 boundary, a short
// note saying how many bytes were cut (counting those the tool itself left
// out, Result.Omitted) is appended after the cut, and Truncated is set.
// The call carries MaxOutputBytes, so that a tool can stop reading there.
//
// Images are passed on as Result.Images describes: an image a provider
// would refuse is dropped, with a note in Output.
func (r *Registry) Run(ctx context.Context, c *Call, opts *RunOptions) Outcome {
	start := time.Now()
	o := r.defaults
	if opts != nil {
		if opts.Timeout > 0 {
			o.Timeout = opts.Timeout
		}
		if opts.MaxOutputBytes > 0 {
			o.MaxOutputBytes = opts.MaxOutputBytes
		}
	}
	res := r.run(ctx, c, &o)
	var out Outcome
	out.Result.IsError = res.IsError
	out.Result.Output, out.Truncated = truncate(res.Output, o.MaxOutputBytes, res.Omitted)
	out.Result.Images, out.Result.Output = keepImages(res.Images, out.Result.Output)
	out.Duration = time.Since(start)
	return out
}

// keepImages returns the images a result may pass on to the model: at most
// model.MaxImages that model.CheckImage accepts, since one a provider
// refuses would fail every later request of the session. A note for each
// image dropped is added to output.
func keepImages(imgs []model.Image, output string) ([]model.Image, string) {
	var kept []model.Image
	for i, img := range imgs {
		err := model.CheckImage(img)
		if err == nil && len(kept) == model.MaxImages {
			err = fmt.Errorf("more than %d images", model.MaxImages)
		}
		if err != nil {
			output += fmt.Sprintf("\n[image %d dropped: %v]", i, err)
			continue
		}
		kept = append(kept, img)
	}
	return kept, output
}

func (r *Registry) run(ctx context.Context, c *Call, o *RunOptions) Result {
	if c == nil {
		return errorResult("no tool call given")
	}
	snap := r.snap.Load()
	e, ok := snap.byName[c.Name]
	if !ok {
		return unknownTool(snap, c.Name)
	}
	args, err := e.checkArgs(c.Args)
	if err != nil {
		return errorResult(fmt.Sprintf("invalid arguments for %s: %v", c.Name, err))
	}
	call := *c
	call.Args = args
	call.MaxOutputBytes = o.MaxOutputBytes
	timeout := o.Timeout
	if d, ok := e.tool.(Deadliner); ok {
		timeout = max(timeout, d.Deadline(c.Agent))
	}
	return r.call(ctx, e, &call, timeout)
}

// call runs the tool in its own goroutine so that Run can return at the
// deadline even when the tool does not.
func (r *Registry) call(ctx context.Context, e *entry, c *Call, timeout time.Duration) Result {
	ctx, cancel := context.WithTimeoutCause(ctx, timeout, errTimedOut)
	defer cancel()

	done := make(chan Result, 1) // buffered: an abandoned call never blocks
	go func() {
		var res Result
		returned := false
		defer func() {
			if !returned {
				if v := recover(); v != nil {
					r.log.Error("tool panicked", "tool", c.Name, "call", c.ID, "panic", v, "stack", string(debug.Stack()))
					res = errorResult(fmt.Sprintf("tool %s panicked: %v", c.Name, v))
				} else {
					res = errorResult(fmt.Sprintf("tool %s stopped without a result", c.Name))
				}
			}
			done <- res
		}()
		out, err := e.tool.Call(ctx, c)
		switch {
		case err != nil && ctx.Err() != nil:
			res = stopped(ctx, c.Name, timeout)
		case err != nil:
			res = errorResult(err.Error())
		default:
			res = out
		}
		returned = true
	}()

	select {
	case res := <-done:
		return res
	case <-ctx.Done():
		select {
		case res := <-done: // finished just as the deadline passed
			return res
		default:
		}
		r.log.Warn("tool call abandoned at its deadline", "tool", c.Name, "call", c.ID, "cause", context.Cause(ctx))
		return stopped(ctx, c.Name, timeout)
	}
}

// stopped is the result of a call whose context ended.
func stopped(ctx context.Context, name string, timeout time.Duration) Result {
	cause := context.Cause(ctx)
	if errors.Is(cause, errTimedOut) {
		return errorResult(fmt.Sprintf("tool %s timed out after %s", name, formatDuration(timeout)))
	}
	return errorResult(fmt.Sprintf("tool %s was stopped: %v", name, cause))
}

// formatDuration writes whole seconds as "60s" rather than "1m0s".
func formatDuration(d time.Duration) string {
	if d >= time.Second && d%time.Second == 0 {
		return fmt.Sprintf("%ds", d/time.Second)
	}
	return d.String()
}

func errorResult(msg string) Result { return Result{Output: msg, IsError: true} }

func unknownTool(s *snapshot, name string) Result {
	names, more := s.names(maxListedTools)
	if len(names) == 0 {
		return errorResult(fmt.Sprintf("unknown tool %q; no tools are available", name))
	}
	msg := fmt.Sprintf("unknown tool %q; available tools: %s", name, strings.Join(names, ", "))
	if more > 0 {
		msg += fmt.Sprintf(" and %d more", more)
	}
	return errorResult(msg)
}

// checkArgs checks that raw is a JSON object matching the tool's schema and
// returns the arguments to pass on ({} for empty or null).
func (e *entry) checkArgs(raw json.RawMessage) (json.RawMessage, error) {
	raw = bytes.TrimSpace(raw)
	var v any
	if len(raw) == 0 || bytes.Equal(raw, []byte("null")) {
		raw = json.RawMessage("{}")
		v = map[string]any{}
	} else {
		if err := json.Unmarshal(raw, &v); err != nil {
			return nil, fmt.Errorf("arguments are not valid JSON: %v", err)
		}
		if _, ok := v.(map[string]any); !ok {
			return nil, fmt.Errorf("arguments must be a JSON object, got %s", jsonKind(v))
		}
	}
	if e.fast != nil && e.fast.valid(v) {
		return raw, nil
	}
	schema, err := e.resolved()
	if err != nil {
		return nil, fmt.Errorf("the tool's input schema does not compile: %v", err)
	}
	if err := schema.Validate(v); err != nil {
		return nil, errors.New(describeValidation(err))
	}
	return raw, nil
}

func jsonKind(v any) string {
	switch v.(type) {
	case []any:
		return "an array"
	case string:
		return "a string"
	case float64:
		return "a number"
	case bool:
		return "a boolean"
	default:
		return "null"
	}
}

// describeValidation turns a jsonschema validation error into one short
// line that names the offending property: jsonschema reports the schema
// locations it went through ("validating /properties/a/items: ...") and
// the problem last; this keeps the problem and rewrites the locations as a
// property path such as "a[].b". An error of another shape is returned as
// it is.
func describeValidation(err error) string {
	var (
		path []string
		base string // schema location of the previous layer
	)
	for layer := 0; ; layer++ {
		inner := errors.Unwrap(err)
		if inner == nil {
			break
		}
		prefix, ok := strings.CutSuffix(err.Error(), ": "+inner.Error())
		if !ok {
			break
		}
		loc, ok := strings.CutPrefix(prefix, "validating ")
		if !ok {
			break
		}
		switch rest, ok := strings.CutPrefix(loc, base); {
		case layer == 0:
			// The root, named "root" or by its $id; the locations below
			// it are JSON pointers from it.
			loc = ""
		case ok && strings.HasPrefix(rest, "/"):
			path = append(path, propertyPath(rest)...)
		}
		// A location that does not extend the previous one is the target
		// of a $ref: the path continues from there.
		base = loc
		err = inner
	}
	problem := tidyNumbers(strings.Join(strings.Fields(err.Error()), " "))
	if len(path) == 0 {
		return problem
	}
	var b strings.Builder
	for i, p := range path {
		if i > 0 && !strings.HasPrefix(p, "[") {
			b.WriteByte('.')
		}
		b.WriteString(p)
	}
	return fmt.Sprintf("property %q: %s", b.String(), problem)
}

// numberKeywords are the validation errors that print numbers as a
// fraction ("3/2") and a fixed-point float ("0.500000").
var numberKeywords = []string{"minimum:", "maximum:", "exclusiveMinimum:", "exclusiveMaximum:", "multipleOf:"}

var numberPattern = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`-?[0-9]+(/[0-9]+|\.[0-9]+)?`) })

// tidyNumbers rewrites the numbers in a numeric-bound error as plain
// decimals: "minimum: -1/1 is less than 0.000000" becomes
// "minimum: -1 is less than 0".
func tidyNumbers(problem string) string {
	if !slices.ContainsFunc(numberKeywords, func(k string) bool { return strings.HasPrefix(problem, k) }) {
		return problem
	}
	return numberPattern().ReplaceAllStringFunc(problem, func(n string) string {
		r, ok := new(big.Rat).SetString(n)
		if !ok {
			return n
		}
		f, _ := r.Float64()
		return strconv.FormatFloat(f, 'g', -1, 64)
	})
}

// propertyPath maps a JSON pointer into a schema (such as
// "/properties/a/items/properties/b") to the instance path it validates
// ("a", "[]", "b"). Keywords that do not move into the instance (allOf,
// $defs, not, ...) contribute nothing.
func propertyPath(ptr string) []string {
	segs := strings.Split(strings.TrimPrefix(ptr, "/"), "/")
	var out []string
	for i := 0; i < len(segs); i++ {
		switch segs[i] {
		case "properties":
			if i+1 < len(segs) {
				i++
				out = append(out, unescapePointer(segs[i]))
			}
		case "patternProperties":
			i++
			out = append(out, "*")
		case "additionalProperties", "unevaluatedProperties":
			out = append(out, "*")
		case "items", "additionalItems", "unevaluatedItems", "contains":
			if i+1 < len(segs) && isIndex(segs[i+1]) { // draft-07 items array
				i++
				out = append(out, "["+segs[i]+"]")
			} else {
				out = append(out, "[]")
			}
		case "prefixItems":
			if i+1 < len(segs) {
				i++
				out = append(out, "["+segs[i]+"]")
			}
		case "allOf", "anyOf", "oneOf", "$defs", "definitions", "dependentSchemas", "dependencies":
			i++
		}
	}
	return out
}

func isIndex(s string) bool {
	if s == "" {
		return false
	}
	for _, c := range s {
		if c < '0' || c > '9' {
			return false
		}
	}
	return true
}

func unescapePointer(s string) string {
	if !strings.Contains(s, "~") {
		return s
	}
	return strings.NewReplacer("~1", "/", "~0", "~").Replace(s)
}

// truncate cuts s to at most max bytes on a UTF-8 boundary and appends a
// note of what was cut, omitted bytes (left out before s) included.
func truncate(s string, limit int, omitted int64) (string, bool) {
	if len(s) <= limit && omitted <= 0 {
		return s, false
	}
	cut := min(len(s), limit)
	for cut > 0 && cut < len(s) && limit-cut < utf8.UTFMax-1 && !utf8.RuneStart(s[cut]) {
		cut--
	}
	total := int64(len(s)) + max(omitted, 0)
	return fmt.Sprintf("%s\n[output truncated: %d of %d bytes cut]", s[:cut], total-int64(cut), total), true
}
