package xmlproto

import (
	"bytes"
	"encoding/json"
	"strings"
)

// Escape makes s, text agentd did not write (a tool's result, a user's
// message, a prompt), unable to open or close any of the protocol's
// elements or the prompt's (`<instructions>`, `</working_memory>`), in
// any case and with spaces (`< action_call`, `</OUTPUT >`),
// or to begin a CDATA section or an entity the parser would decode. The
// rest of s stays as it was, so the model reads it easily: a '<' before
// anything else and an '&' that begins no entity are left alone. Inside
// a think or output element the parser gives s back.
func Escape(s string) string {
	return escape(s, "&lt;", true, promptTags)
}

// escape replaces each '<' that would begin one of the protocol's tags,
// or one named in also, with lt, and, when amp, each '&' that would
// begin an entity.
func escape(s, lt string, amp bool, also []string) string {
	var sb strings.Builder
	last := 0
	for i := 0; i < len(s); i++ {
		var with string
		switch s[i] {
		case '<':
			if opensTag(s[i+1:], also) {
				with = lt
			}
		case '&':
			if _, _, ok, more := entityAt([]byte(s[i:min(len(s), i+maxEntity)])); amp && (ok || more) {
				with = "&amp;"
			}
		}
		if with == "" {
			continue
		}
		if sb.Len() == 0 {
			sb.Grow(len(s) + 16)
		}
		sb.WriteString(s[last:i])
		sb.WriteString(with)
		last = i + 1
	}
	if last == 0 {
		return s
	}
	sb.WriteString(s[last:])
	return sb.String()
}

// opensTag reports whether rest, what follows a '<', would make it
// begin one of the protocol's tags for a lenient reader (spaces around
// the '/', any case), or one named in also, or a CDATA section or other
// markup declaration.
func opensTag(rest string, also []string) bool {
	if strings.HasPrefix(rest, "!") {
		return true
	}
	i := 0
	for i < len(rest) && isSpace(rest[i]) {
		i++
	}
	if i < len(rest) && rest[i] == '/' {
		i++
		for i < len(rest) && isSpace(rest[i]) {
			i++
		}
	}
	j := i
	for j < len(rest) && isNameByte(rest[j]) {
		j++
	}
	name := rest[i:j]
	for _, t := range also {
		if strings.EqualFold(name, t) {
			return true
		}
	}
	return ownTag([]byte(name)) != ""
}

// escapeAttr makes s an attribute value in double quotes.
func escapeAttr(s string) string {
	if !strings.ContainsAny(s, `&<>"`) {
		return s
	}
	return strings.NewReplacer("&", "&amp;", "<", "&lt;", ">", "&gt;", `"`, "&quot;").Replace(s)
}

// escapeJSON writes JSON so that it cannot open or close one of the
// protocol's elements or those named in also: a '<' that would is written \u003c, which JSON
// reads as the same character. Valid JSON is compacted.
func escapeJSON(j json.RawMessage, also []string) string {
	var c bytes.Buffer
	s := string(j)
	if json.Compact(&c, j) == nil {
		s = c.String()
	}
	return escape(s, `\u003c`, false, also)
}

// CallText is how an earlier action call of the model's appears in the
// conversation: the element the model wrote, rewritten from its name
// and arguments.
func CallText(name string, args json.RawMessage) string {
	if len(bytes.TrimSpace(args)) == 0 {
		args = json.RawMessage("{}")
	}
	return `<action_call name="` + escapeAttr(name) + `">` + escapeJSON(args, nil) + `</action_call>`
}

// ResultsText is the message that carries one step's results to the
// model, in the order of its calls. It begins with <action_results>
// (the fake model tells results from a user's text by that).
func ResultsText(rs []Result) string {
	var b strings.Builder
	b.WriteString("<" + TagResults + ">\n")
	for _, r := range rs {
		b.WriteString(`<` + TagResult + ` call="` + escapeAttr(r.Call) + `" name="` + escapeAttr(r.Name) + `"`)
		if r.IsError {
			b.WriteString(` error="true"`)
		}
		b.WriteString(">")
		b.WriteString(Escape(r.Output))
		b.WriteString("</" + TagResult + ">\n")
	}
	b.WriteString("</" + TagResults + ">")
	return b.String()
}

// ProblemsText tells the model what agentd could not read in its last
// step, one problem a line, so that it writes the step again correctly.
func ProblemsText(problems []string) string {
	var b strings.Builder
	b.WriteString("<" + TagProblem + ">\n")
	for _, p := range problems {
		b.WriteString(Escape(p))
		b.WriteString("\n")
	}
	b.WriteString("</" + TagProblem + ">")
	return b.String()
}
