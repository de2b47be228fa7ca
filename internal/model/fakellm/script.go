package fakellm

import (
	"bytes"
	"encoding/json"
	"fmt"
	"regexp"
	"strconv"
	"strings"
	"time"
)

// DefaultChunks is how many pieces a streamed text, reasoning or tool
// argument is cut into when its response has no chunks directive.
const DefaultChunks = 3

// Script is a parsed script: a list of rules, each a sequence of responses.
// It is immutable once parsed and safe for concurrent use.
type Script struct {
	name  string
	rules []*rule // rules with a match regexp, in file order
	def   *rule   // the default rule, nil if the script has none
}

// ParseError is a syntax error in a script. Its message names the file and
// the line: `demo.fake:7: unknown directive "sya"`.
type ParseError struct {
	File string
	Line int
	Msg  string
}

func (e *ParseError) Error() string { return fmt.Sprintf("%s:%d: %s", e.File, e.Line, e.Msg) }

type rule struct {
	line      int
	re        *regexp.Regexp // nil: the default rule
	responses []*response
}

// response is one precompiled reply.
type response struct {
	line     int
	text     tmpl       // say and echo lines joined with "\n"; nil: none
	hasText  bool       // at least one say or echo line
	think    tmpl       // think lines joined with "\n"
	hasThink bool       // at least one think line
	calls    []callSpec // call lines, in order
	fail     *failSpec
	noStream *noStreamSpec // refuse streamed requests
	truncate bool
	stall    *stallSpec
	delay    time.Duration
	chunks   int           // 0: DefaultChunks
	gap      time.Duration // pause between streamed events
	usage    *[2]int
}

type callSpec struct {
	name     string
	nameJSON []byte // the name as a quoted JSON string
	args     tmpl   // a JSON object; variables inside are JSON-escaped
}

// noStreamSpec is a refusal of streamed requests: the status and message
// of the error.
type noStreamSpec struct {
	status int
	msg    string
}

// DefaultNoStreamMessage is what nostream answers when it names no message:
// what llama.cpp's server said when asked to stream tool calls.
const DefaultNoStreamMessage = "Cannot use tools with stream"

// stallSpec is a stalled response.
type stallSpec struct {
	times int // 0: always
}

type failSpec struct {
	status     int
	overflow   bool
	times      int // 0: always
	retryAfter int // seconds; -1: no Retry-After header
}

// A tmpl is a text with variables, precompiled into segments.
type tmpl []segment

type varKind uint8

const (
	varNone varKind = iota
	varLastUser
	varToolResult
	varNMessages
	varImages
	varSystem
)

var varNames = map[string]varKind{
	"last_user":   varLastUser,
	"tool_result": varToolResult,
	"n_messages":  varNMessages,
	"images":      varImages,
	"system":      varSystem,
}

type segment struct {
	lit string
	v   varKind
}

// echoResponse answers past the last response of a rule, when no rule
// matches, and for a nil script.
var echoResponse = &response{text: tmpl{{v: varLastUser}}, hasText: true}

// ParseScript parses a script; name is used in error messages. A syntax
// error is a *ParseError naming the file and line. See docs/fakellm.md for
// the format.
func ParseScript(name string, src []byte) (*Script, error) {
	p := &parser{s: &Script{name: name}, seen: make(map[string]int)}
	for i, line := range strings.Split(string(src), "\n") {
		p.line = i + 1
		if err := p.parseLine(line); err != nil {
			return nil, err
		}
	}
	if err := p.endRule(); err != nil {
		return nil, err
	}
	return p.s, nil
}

type parser struct {
	s       *Script
	line    int
	rule    *rule          // the rule being read
	resp    *response      // the response being read; nil before its first directive
	seen    map[string]int // directives of resp that may appear once: their lines
	sepLine int            // line of the --- that ended the last response, 0 if none pending
}

func (p *parser) errorf(format string, args ...any) error {
	return &ParseError{File: p.s.name, Line: p.line, Msg: fmt.Sprintf(format, args...)}
}

func (p *parser) parseLine(line string) error {
	line = strings.TrimLeft(strings.TrimRight(line, " \t\r"), " \t")
	if line == "" || line[0] == '#' {
		return nil
	}
	word, rest := splitWord(line)
	switch word {
	case "match":
		return p.startRule(strings.TrimSpace(rest))
	case "---":
		if rest != "" {
			return p.errorf("unexpected text after ---")
		}
		if p.resp == nil {
			return p.errorf("--- with no response before it")
		}
		p.endResponse()
		p.sepLine = p.line
		return nil
	}
	if p.rule == nil {
		if err := p.startRule("*"); err != nil {
			return err
		}
	}
	if p.resp == nil {
		p.resp = &response{line: p.line}
		clear(p.seen)
	}
	return p.directive(p.resp, word, rest)
}

// splitWord splits a line into its first word and the rest, dropping the one
// space or tab between them.
func splitWord(line string) (word, rest string) {
	i := strings.IndexAny(line, " \t")
	if i < 0 {
		return line, ""
	}
	return line[:i], line[i+1:]
}

func (p *parser) startRule(expr string) error {
	if err := p.endRule(); err != nil {
		return err
	}
	r := &rule{line: p.line}
	switch expr {
	case "":
		return p.errorf("match needs a regular expression, or * for the default rule")
	case "*":
		if p.s.def != nil {
			return p.errorf("a second default rule (the first is at line %d)", p.s.def.line)
		}
		p.s.def = r
	default:
		re, err := regexp.Compile(expr)
		if err != nil {
			return p.errorf("bad regular expression: %v", err)
		}
		r.re = re
		p.s.rules = append(p.s.rules, r)
	}
	p.rule = r
	return nil
}

func (p *parser) endResponse() {
	if p.resp != nil {
		p.rule.responses = append(p.rule.responses, p.resp)
		p.resp = nil
	}
}

func (p *parser) endRule() error {
	if p.rule == nil {
		return nil
	}
	if p.resp == nil && p.sepLine != 0 {
		return &ParseError{File: p.s.name, Line: p.sepLine, Msg: "--- with no response after it"}
	}
	p.endResponse()
	p.sepLine = 0
	if len(p.rule.responses) == 0 {
		return &ParseError{File: p.s.name, Line: p.rule.line, Msg: "rule has no responses"}
	}
	p.rule = nil
	return nil
}

// once checks that a directive appears at most once in a response.
func (p *parser) once(word string) error {
	if first, ok := p.seen[word]; ok {
		return p.errorf("%s given twice in one response (first at line %d)", word, first)
	}
	p.seen[word] = p.line
	return nil
}

func (p *parser) directive(r *response, word, rest string) error {
	p.sepLine = 0
	switch word {
	case "say":
		t, err := p.template(rest)
		if err != nil {
			return err
		}
		r.text = joinLines(r.text, r.hasText, t)
		r.hasText = true
	case "echo":
		if strings.TrimSpace(rest) != "" {
			return p.errorf("echo takes no arguments")
		}
		r.text = joinLines(r.text, r.hasText, tmpl{{v: varLastUser}})
		r.hasText = true
	case "think":
		t, err := p.template(rest)
		if err != nil {
			return err
		}
		r.think = joinLines(r.think, r.hasThink, t)
		r.hasThink = true
	case "call":
		c, err := p.call(rest)
		if err != nil {
			return err
		}
		r.calls = append(r.calls, c)
	case "fail":
		if err := p.once(word); err != nil {
			return err
		}
		f, err := p.fail(rest)
		if err != nil {
			return err
		}
		r.fail = f
	case "truncate":
		if err := p.once(word); err != nil {
			return err
		}
		if strings.TrimSpace(rest) != "" {
			return p.errorf("truncate takes no arguments")
		}
		r.truncate = true
	case "nostream":
		if err := p.once(word); err != nil {
			return err
		}
		ns, err := p.noStream(rest)
		if err != nil {
			return err
		}
		r.noStream = ns
	case "stall":
		if err := p.once(word); err != nil {
			return err
		}
		st := &stallSpec{}
		if arg := strings.TrimSpace(rest); arg != "" {
			v, ok := strings.CutPrefix(arg, "times=")
			n, err := strconv.Atoi(v)
			if !ok || err != nil || n < 1 {
				return p.errorf("stall: want nothing or times=N, got %q", arg)
			}
			st.times = n
		}
		r.stall = st
	case "delay":
		if err := p.once(word); err != nil {
			return err
		}
		arg := strings.TrimSpace(rest)
		d, err := time.ParseDuration(arg)
		if err != nil || d < 0 {
			return p.errorf("delay: want a duration such as 50ms or 2s, got %q", arg)
		}
		r.delay = d
	case "gap":
		if err := p.once(word); err != nil {
			return err
		}
		arg := strings.TrimSpace(rest)
		d, err := time.ParseDuration(arg)
		if err != nil || d < 0 {
			return p.errorf("gap: want a duration such as 10ms, got %q", arg)
		}
		r.gap = d
	case "chunks":
		if err := p.once(word); err != nil {
			return err
		}
		arg := strings.TrimSpace(rest)
		n, err := strconv.Atoi(arg)
		if err != nil || n < 1 {
			return p.errorf("chunks: want a positive number, got %q", arg)
		}
		r.chunks = n
	case "usage":
		if err := p.once(word); err != nil {
			return err
		}
		f := strings.Fields(rest)
		var u [2]int
		ok := len(f) == 2
		for i := 0; ok && i < 2; i++ {
			n, err := strconv.Atoi(f[i])
			ok = err == nil && n >= 0
			u[i] = n
		}
		if !ok {
			return p.errorf("usage: want two token counts IN OUT, got %q", strings.TrimSpace(rest))
		}
		r.usage = &u
	default:
		return p.errorf("unknown directive %q", word)
	}
	return nil
}

func joinLines(t tmpl, has bool, next tmpl) tmpl {
	if has {
		t = appendLit(t, "\n")
	}
	for _, s := range next {
		if s.v == varNone {
			t = appendLit(t, s.lit)
		} else {
			t = append(t, s)
		}
	}
	return t
}

func appendLit(t tmpl, lit string) tmpl {
	if lit == "" {
		return t
	}
	if n := len(t); n > 0 && t[n-1].v == varNone {
		t[n-1].lit += lit
		return t
	}
	return append(t, segment{lit: lit})
}

// template compiles text with {{name}} variables. A {{...}} holding
// something other than a word is left as it is.
func (p *parser) template(text string) (tmpl, error) {
	var t tmpl
	for {
		i := strings.Index(text, "{{")
		if i < 0 {
			break
		}
		j := strings.Index(text[i+2:], "}}")
		if j < 0 {
			break
		}
		name := strings.TrimSpace(text[i+2 : i+2+j])
		if !isWord(name) {
			t = appendLit(t, text[:i+2])
			text = text[i+2:]
			continue
		}
		v, ok := varNames[name]
		if !ok {
			return nil, p.errorf("unknown variable {{%s}} (want last_user, tool_result, n_messages, images or system)", name)
		}
		t = appendLit(t, text[:i])
		t = append(t, segment{v: v})
		text = text[i+2+j+2:]
	}
	return appendLit(t, text), nil
}

func isWord(s string) bool {
	if s == "" {
		return false
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		if !(c == '_' || c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9') {
			return false
		}
	}
	return true
}

func (p *parser) call(rest string) (callSpec, error) {
	name, args := splitWord(strings.TrimSpace(rest))
	if name == "" {
		return callSpec{}, p.errorf("call needs a tool name and JSON arguments")
	}
	if strings.HasPrefix(name, "{") {
		return callSpec{}, p.errorf("call needs a tool name before its arguments")
	}
	args = strings.TrimSpace(args)
	if args == "" {
		args = "{}"
	}
	t, err := p.template(args)
	if err != nil {
		return callSpec{}, err
	}
	// Check the arguments with sample values in place of the variables.
	sample := renderSample(t)
	if err := checkObject(sample); err != nil {
		return callSpec{}, p.errorf("call %s: arguments are not a JSON object: %v", name, err)
	}
	if len(t) == 1 && t[0].v == varNone {
		var b bytes.Buffer
		if json.Compact(&b, []byte(args)) == nil {
			t[0].lit = b.String()
		}
	}
	nameJSON, _ := json.Marshal(name)
	return callSpec{name: name, nameJSON: nameJSON, args: t}, nil
}

func renderSample(t tmpl) []byte {
	var b []byte
	for _, s := range t {
		switch s.v {
		case varNone:
			b = append(b, s.lit...)
		case varNMessages, varImages:
			b = append(b, '1')
		default:
			b = append(b, 'x')
		}
	}
	return b
}

func checkObject(b []byte) error {
	var v any
	if err := json.Unmarshal(b, &v); err != nil {
		return err
	}
	if _, ok := v.(map[string]any); !ok {
		return fmt.Errorf("got %s", strings.TrimSpace(string(b)))
	}
	return nil
}

// noStream parses "nostream [STATUS] [MESSAGE]".
func (p *parser) noStream(rest string) (*noStreamSpec, error) {
	ns := &noStreamSpec{status: 500, msg: DefaultNoStreamMessage}
	rest = strings.TrimSpace(rest)
	if word, msg := splitWord(rest); word != "" {
		if n, err := strconv.Atoi(word); err == nil {
			if n < 400 || n > 599 {
				return nil, p.errorf("nostream: status %d is not an error status (want 400-599)", n)
			}
			ns.status, rest = n, strings.TrimSpace(msg)
		}
	}
	if rest != "" {
		ns.msg = rest
	}
	return ns, nil
}

func (p *parser) fail(rest string) (*failSpec, error) {
	f := strings.Fields(rest)
	if len(f) == 0 {
		return nil, p.errorf("fail needs a status: 400, 401, 429, 500, 503, 529 ... or overflow")
	}
	spec := &failSpec{retryAfter: -1}
	if f[0] == "overflow" {
		spec.overflow = true
		spec.status = 400
	} else {
		n, err := strconv.Atoi(f[0])
		if err != nil {
			return nil, p.errorf("fail: want an HTTP status or overflow, got %q", f[0])
		}
		if n < 400 || n > 599 {
			return nil, p.errorf("fail: status %d is not an error status (want 400-599)", n)
		}
		spec.status = n
	}
	seen := map[string]bool{}
	for _, opt := range f[1:] {
		key, val, ok := strings.Cut(opt, "=")
		if !ok || (key != "times" && key != "retry_after") {
			return nil, p.errorf("fail: unknown option %q (want times=N or retry_after=SECONDS)", opt)
		}
		if seen[key] {
			return nil, p.errorf("fail: %s given twice", key)
		}
		seen[key] = true
		n, err := strconv.Atoi(val)
		switch {
		case key == "times" && (err != nil || n < 1):
			return nil, p.errorf("fail: times wants a positive number, got %q", val)
		case key == "retry_after" && (err != nil || n < 0):
			return nil, p.errorf("fail: retry_after wants a number of seconds, got %q", val)
		case key == "times":
			spec.times = n
		default:
			spec.retryAfter = n
		}
	}
	return spec, nil
}
