package xmlproto

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strings"
	"unicode/utf8"
)

// Parser turns a model's streamed text into Items as it arrives. It is
// lenient where models are sloppy (an unknown element or a stray '<' is
// text, tags may be any case, JSON may sit in a ```json fence) and strict
// where a mistake would act wrongly (a call whose JSON does not parse is
// a Problem, never a guess). It holds at most one element (MaxElement)
// and a tag's worth of undecided input. Not safe for concurrent use.
type Parser struct {
	max int
	buf []byte // input not consumed yet: an undecided tag, entity or character
	// wait is how long buf must grow before it is looked at again: twice
	// what was undecided, so that a tag written a byte at a time is not
	// rescanned at every byte (which would cost the square of its length).
	wait int

	st    pstate
	tag   string // the open element's name
	attrs []Attr
	bad   string          // why the open element will be a Problem
	raw   strings.Builder // the open element as written
	body  strings.Builder // its content: decoded for think and output, as written for the rest
	sent  int             // how much of body went out as deltas
	text  strings.Builder // text outside elements not yet handed out
	items []Item          // found, not yet handed out
	block []Item          // the items handed out are slices of it
}

type pstate int

const (
	outside  pstate = iota
	inBody          // in an element's content
	inCDATA         // in a CDATA section of a think or output element
	skipping        // discarding an element over MaxElement up to its close
)

// NewParser returns a Parser; o may be nil.
func NewParser(o *Options) *Parser {
	p := &Parser{max: 1 << 20}
	if o != nil && o.MaxElement > 0 {
		p.max = o.MaxElement
	}
	return p
}

// Write parses the next chunk of the model's text and returns the items
// it completed: deltas of the open think or text output, and the
// elements it closed.
func (p *Parser) Write(chunk string) []Item {
	p.buf = append(p.buf, chunk...)
	if len(p.buf) >= p.wait {
		p.run(false)
	}
	p.flushDelta()
	return p.take()
}

// Close ends the stream: undecided input is taken as text, an element
// still open is a Problem, and the text outside elements is handed out.
// The Parser is then ready for a new stream.
func (p *Parser) Close() []Item {
	p.run(true)
	switch p.st {
	case inBody, inCDATA:
		p.raw.Write(p.buf)
		p.problem(p.tag + " is not closed")
	}
	p.buf, p.wait = p.buf[:0], 0
	p.st = outside
	p.flushText()
	return p.take()
}

// take hands out the items found so far. They are carved from a block
// that is never written again once handed out (a full slice expression
// keeps a caller's append off the next ones), so a write that finds one
// delta costs no allocation of its own.
func (p *Parser) take() []Item {
	n := len(p.items)
	if n == 0 {
		return nil
	}
	if cap(p.block)-len(p.block) < n {
		p.block = make([]Item, 0, max(n, min(2*cap(p.block), blockItems), 4))
	}
	k := len(p.block)
	p.block = append(p.block, p.items...)
	clear(p.items)
	p.items = p.items[:0]
	return p.block[k : k+n : k+n]
}

// blockItems is how many items one allocation holds at most; the
// first holds 4, so a short reply costs little.
const blockItems = 32

// run consumes as much of buf as can be decided; at the end of the
// stream everything is.
func (p *Parser) run(final bool) {
	b := p.buf
	for len(b) > 0 {
		var n int
		st := p.st
		switch p.st {
		case outside:
			n = p.outside(b, final)
		case inBody:
			n = p.inBody(b, final)
		case inCDATA:
			n = p.inCDATA(b, final)
		case skipping:
			n = p.skip(b, final)
		}
		if n == 0 && p.st == st {
			break
		}
		b = b[n:]
	}
	p.buf = append(p.buf[:0], b...)
	p.wait = 2 * len(p.buf)
}

// outside consumes text up to the next tag of the protocol.
func (p *Parser) outside(b []byte, final bool) int {
	i := bytes.IndexByte(b, '<')
	if i != 0 {
		if i < 0 {
			i = len(b)
		}
		p.addText(b[:i])
		return i
	}
	t := lexTag(b)
	switch {
	case t.kind == lexMore && !final:
		return 0
	case t.kind == lexOpen:
		p.open(t, b[:t.n])
		return t.n
	case t.kind == lexClose:
		p.flushText()
		p.items = append(p.items, Item{Kind: Problem, Err: "a close tag of " + t.name + " with no " + t.name + " open", Raw: string(b[:t.n])})
		return t.n
	}
	p.addText(b[:1])
	return 1
}

func (p *Parser) addText(b []byte) {
	p.text.Write(b)
	if p.text.Len() >= p.max {
		p.flushText()
	}
}

func (p *Parser) flushText() {
	if p.text.Len() == 0 {
		return
	}
	s := p.text.String()
	p.text.Reset()
	if strings.TrimSpace(s) != "" {
		p.items = append(p.items, Item{Kind: Text, Text: s})
	}
}

// open starts the element whose opening tag is t, written as raw.
func (p *Parser) open(t tag, raw []byte) {
	p.flushText()
	p.st, p.tag, p.attrs, p.bad = inBody, t.name, t.attrs, ""
	p.raw.Reset()
	p.body.Reset()
	p.sent = 0
	p.raw.Write(raw)
	switch t.name {
	case TagCall:
		if attr(t.attrs, "name") == "" {
			p.bad = "an action_call has no name attribute"
		}
	case TagThink, TagOutput:
	default:
		p.bad = t.name + " is written by agentd, not by the model"
	}
	if t.self {
		p.finish()
	}
}

// streams reports whether the open element's content goes out as deltas.
func (p *Parser) streams() bool {
	if p.bad != "" {
		return false
	}
	switch p.tag {
	case TagThink:
		return true
	case TagOutput:
		t := attr(p.attrs, "type")
		return t == "" || t == "text"
	}
	return false
}

// decodes reports whether the open element's content is XML text
// (entities, CDATA) rather than JSON or agentd's own elements.
func (p *Parser) decodes() bool { return p.tag == TagThink || p.tag == TagOutput }

// content adds raw, taken as written, to the open element.
func (p *Parser) content(raw []byte) {
	p.raw.Write(raw)
	p.body.Write(raw)
	p.checkSize()
}

// decoded adds s, written as raw, to the open element.
func (p *Parser) decoded(s string, raw []byte) {
	p.raw.Write(raw)
	p.body.WriteString(s)
	p.checkSize()
}

func (p *Parser) checkSize() {
	if p.raw.Len() > p.max {
		p.oversize()
	}
}

func (p *Parser) oversize() {
	p.flushDelta()
	raw := p.raw.String()
	if len(raw) > 1024 {
		n := 1024
		for n > 1020 && !utf8.RuneStart(raw[n]) {
			n--
		}
		raw = raw[:n] + "…"
	}
	p.items = append(p.items, Item{Kind: Problem, Raw: raw,
		Err: fmt.Sprintf("%s is longer than %d bytes", p.tag, p.max)})
	p.st = skipping
	p.raw.Reset()
	p.body.Reset()
	p.sent = 0
}

// inBody consumes the open element's content up to its close.
func (p *Parser) inBody(b []byte, final bool) int {
	stop := "<"
	if p.decodes() {
		stop = "<&"
	}
	i := bytes.IndexAny(b, stop)
	if i != 0 {
		if i < 0 {
			i = len(b)
			if !final {
				i -= partialRune(b)
			}
		}
		if i == 0 {
			return 0
		}
		p.content(b[:i])
		return i
	}
	if b[0] == '&' {
		s, n, ok, more := entityAt(b)
		switch {
		case ok:
			p.decoded(s, b[:n])
			return n
		case more && !final:
			return 0
		}
		p.content(b[:1])
		return 1
	}
	if p.decodes() {
		const cd = "<![CDATA["
		if bytes.HasPrefix(b, []byte(cd)) {
			p.raw.WriteString(cd)
			p.st = inCDATA
			return len(cd)
		}
		if len(b) < len(cd) && bytes.HasPrefix([]byte(cd), b) && !final {
			return 0
		}
	}
	t := lexTag(b)
	switch {
	case t.kind == lexMore && !final:
		return 0
	case t.kind == lexClose && t.name == p.tag:
		p.raw.Write(b[:t.n])
		p.finish()
		return t.n
	case !p.decodes():
		// JSON and agentd's own elements end only at their close.
	case t.kind == lexClose:
		p.raw.Write(b[:t.n])
		p.problem(fmt.Sprintf("%s was open, but %s was closed", p.tag, t.name))
		return t.n
	case t.kind == lexOpen:
		// A new element: this one was left open. Read the tag again outside.
		p.problem(fmt.Sprintf("%s is not closed before %s", p.tag, t.name))
		return 0
	}
	p.content(b[:1])
	return 1
}

// inCDATA consumes a CDATA section's text, taken literally.
func (p *Parser) inCDATA(b []byte, final bool) int {
	if i := bytes.Index(b, []byte("]]>")); i >= 0 {
		p.content(b[:i])
		if p.st == inCDATA { // not made oversize by the text
			p.raw.WriteString("]]>")
			p.st = inBody
		}
		return i + 3
	}
	n := len(b)
	if !final {
		switch {
		case bytes.HasSuffix(b, []byte("]]")):
			n -= 2
		case bytes.HasSuffix(b, []byte("]")):
			n--
		}
		n -= partialRune(b[:n])
	}
	if n == 0 {
		return 0
	}
	p.content(b[:n])
	return n
}

// skip discards an oversize element up to its close.
func (p *Parser) skip(b []byte, final bool) int {
	i := bytes.IndexByte(b, '<')
	if i != 0 {
		if i < 0 {
			i = len(b)
		}
		return i
	}
	t := lexTag(b)
	switch {
	case t.kind == lexMore && !final:
		return 0
	case t.kind == lexClose && t.name == p.tag:
		p.st = outside
		return t.n
	}
	return 1
}

// flushDelta hands out the open element's content since the last delta.
// A Builder's earlier String stays valid as it grows, so a delta is a
// slice of it, not a copy.
func (p *Parser) flushDelta() {
	if p.body.Len() <= p.sent || !p.streams() {
		return
	}
	k := OutputDelta
	if p.tag == TagThink {
		k = ThoughtDelta
	}
	p.items = append(p.items, Item{Kind: k, Text: p.body.String()[p.sent:]})
	p.sent = p.body.Len()
}

// problem ends the open element as a Problem.
func (p *Parser) problem(err string) {
	p.flushDelta()
	p.items = append(p.items, Item{Kind: Problem, Err: err, Raw: p.raw.String()})
	p.st = outside
}

// finish ends the open element at its close.
func (p *Parser) finish() {
	p.flushDelta()
	if p.bad != "" {
		p.problem(p.bad)
		return
	}
	p.st = outside
	body := p.body.String()
	switch p.tag {
	case TagThink:
		p.items = append(p.items, Item{Kind: Thought, Text: body})
	case TagOutput:
		it := Item{Kind: Output, Type: "text", Text: body}
		for _, a := range p.attrs {
			if a.Name == "type" {
				if a.Value != "" {
					it.Type = a.Value
				}
				continue
			}
			if it.Attrs == nil {
				it.Attrs = map[string]string{}
			}
			it.Attrs[a.Name] = a.Value
		}
		var c bytes.Buffer
		if strings.TrimSpace(body) != "" && json.Compact(&c, []byte(body)) == nil {
			it.Args = c.Bytes()
		}
		p.items = append(p.items, it)
	case TagCall:
		name := attr(p.attrs, "name")
		args, err := callArgs(body)
		if err != nil {
			p.problem(fmt.Sprintf("action_call %q: the arguments are not valid JSON: %v", name, err))
			return
		}
		p.items = append(p.items, Item{Kind: Call, Name: name, Args: args, Raw: p.raw.String()})
	}
}

// callArgs is a call's body as compact JSON: the body may be wrapped in
// a ```json fence or a CDATA section; an empty body is {}.
func callArgs(body string) (json.RawMessage, error) {
	const ws = " \t\r\n" // JSON's white space
	s := strings.Trim(body, ws)
	if t, ok := strings.CutPrefix(s, "<![CDATA["); ok {
		if t, ok = strings.CutSuffix(t, "]]>"); ok {
			s = strings.Trim(t, ws)
		}
	}
	if t, ok := strings.CutPrefix(s, "```"); ok {
		if t, ok = strings.CutSuffix(t, "```"); ok {
			s = strings.Trim(strings.TrimPrefix(strings.TrimPrefix(t, "json"), "JSON"), ws)
		}
	}
	if s == "" {
		return json.RawMessage("{}"), nil
	}
	var c bytes.Buffer
	if err := json.Compact(&c, []byte(s)); err != nil {
		return nil, err
	}
	return c.Bytes(), nil
}

// attr is the value of a's attribute name, or "".
func attr(a []Attr, name string) string {
	v := ""
	for _, x := range a {
		if x.Name == name {
			v = x.Value
		}
	}
	return v
}
