package xmlproto

// A stand-in for the xmlproto branch's parser and renderer, so that the
// engine builds before it is merged; removed at the merge.

import (
	"encoding/json"
	"regexp"
	"strings"
)

// Parser is a stand-in streaming parser.
type Parser struct {
	buf string
	max int
}

// NewParser returns a parser.
func NewParser(o *Options) *Parser {
	p := &Parser{max: 1 << 20}
	if o != nil && o.MaxElement > 0 {
		p.max = o.MaxElement
	}
	return p
}

var entities = strings.NewReplacer("&lt;", "<", "&gt;", ">", "&quot;", `"`, "&apos;", "'", "&amp;", "&")

var openTags = []string{"<" + TagThink, "<" + TagCall, "<" + TagOutput}

// Write parses a chunk.
func (p *Parser) Write(chunk string) []Item {
	p.buf += chunk
	var items []Item
	for {
		i := strings.IndexByte(p.buf, '<')
		if i < 0 {
			return items
		}
		if i > 0 {
			if t := p.buf[:i]; strings.TrimSpace(t) != "" {
				items = append(items, Item{Kind: Text, Text: t})
			}
			p.buf = p.buf[i:]
		}
		tag, partial := "", false
		for _, o := range openTags {
			if len(p.buf) < len(o)+1 && strings.HasPrefix(o, p.buf) || strings.HasPrefix(p.buf, o) && len(p.buf) == len(o) {
				partial = true
			}
			if strings.HasPrefix(p.buf, o) && len(p.buf) > len(o) && (p.buf[len(o)] == '>' || p.buf[len(o)] == ' ') {
				tag = o[1:]
			}
		}
		if tag == "" {
			if partial {
				return items
			}
			j := strings.IndexByte(p.buf[1:], '<')
			if j < 0 {
				return items
			}
			items = append(items, Item{Kind: Text, Text: p.buf[:j+1]})
			p.buf = p.buf[j+1:]
			continue
		}
		end := strings.Index(p.buf, "</"+tag+">")
		if end < 0 {
			return items
		}
		raw := p.buf[:end+len(tag)+3]
		p.buf = p.buf[len(raw):]
		items = append(items, element(tag, raw)...)
	}
}

var attrRe = regexp.MustCompile(`([a-z_]+)\s*=\s*"([^"]*)"`)

func element(tag, raw string) []Item {
	gt := strings.IndexByte(raw, '>')
	head, body := raw[:gt], raw[gt+1:len(raw)-len(tag)-3]
	attrs := map[string]string{}
	for _, m := range attrRe.FindAllStringSubmatch(head, -1) {
		attrs[m[1]] = entities.Replace(m[2])
	}
	body = entities.Replace(body)
	switch tag {
	case TagThink:
		return []Item{{Kind: ThoughtDelta, Text: body}, {Kind: Thought, Text: body}}
	case TagCall:
		name := attrs["name"]
		if name == "" {
			return []Item{{Kind: Problem, Err: "action_call without a name", Raw: raw}}
		}
		b := strings.TrimSpace(body)
		if b == "" {
			b = "{}"
		}
		if !json.Valid([]byte(b)) {
			return []Item{{Kind: Problem, Err: "action " + name + ": invalid JSON arguments", Raw: raw}}
		}
		return []Item{{Kind: Call, Name: name, Args: json.RawMessage(b), Raw: raw}}
	default:
		typ := attrs["type"]
		if typ == "" {
			typ = "text"
		}
		delete(attrs, "type")
		it := Item{Kind: Output, Type: typ, Attrs: attrs, Text: body}
		if json.Valid([]byte(strings.TrimSpace(body))) {
			it.Args = json.RawMessage(strings.TrimSpace(body))
		}
		if typ == "text" {
			return []Item{{Kind: OutputDelta, Text: body}, it}
		}
		return []Item{it}
	}
}

// Close ends the stream.
func (p *Parser) Close() []Item {
	b := p.buf
	p.buf = ""
	for _, o := range openTags {
		if strings.HasPrefix(b, o) {
			return []Item{{Kind: Problem, Err: "unclosed element " + o[1:], Raw: b}}
		}
	}
	if strings.TrimSpace(b) != "" {
		return []Item{{Kind: Text, Text: b}}
	}
	return nil
}

var escRe = regexp.MustCompile(`(?i)<(\s*/?\s*(think|action_call|action_results|action_result|output|protocol_error)\b)`)

// Escape escapes the protocol's tags in s.
func Escape(s string) string { return escRe.ReplaceAllString(s, "&lt;$1") }

// CallText is an earlier call as the conversation shows it.
func CallText(name string, args json.RawMessage) string {
	return `<action_call name="` + name + `">` + string(args) + `</action_call>`
}

// ResultsText is a step's results message.
func ResultsText(rs []Result) string {
	var sb strings.Builder
	sb.WriteString("<action_results>")
	for _, r := range rs {
		sb.WriteString(`<action_result call="` + r.Call + `" name="` + r.Name + `"`)
		if r.IsError {
			sb.WriteString(` error="true"`)
		}
		sb.WriteString(">" + Escape(r.Output) + "</action_result>")
	}
	sb.WriteString("</action_results>")
	return sb.String()
}

// ProblemsText is the message that feeds back problems.
func ProblemsText(ps []string) string {
	var sb strings.Builder
	for i, p := range ps {
		if i > 0 {
			sb.WriteString("\n")
		}
		sb.WriteString("<protocol_error>" + Escape(p) + "</protocol_error>")
	}
	return sb.String()
}

// Render renders the prompt.
func (p *Prompt) Render() string {
	var sb strings.Builder
	sb.WriteString("Think in <think>, call actions with <action_call name=\"x\">{json}</action_call>, answer in <output type=\"text\">.\n")
	sb.WriteString("<instructions>" + p.Instructions + "</instructions>\n")
	for _, s := range p.Sections {
		sb.WriteString("<" + s.Tag + ">" + s.Body + "</" + s.Tag + ">\n")
	}
	sb.WriteString("<actions>")
	for _, a := range p.Actions {
		sb.WriteString(`<action name="` + a.Name + `"><description>` + a.Description + `</description><schema>` + string(a.Schema) + `</schema></action>`)
	}
	sb.WriteString("</actions>\n<outputs><output type=\"text\"/>")
	for _, a := range p.Outputs {
		sb.WriteString(`<output type="` + a.Name + `"><schema>` + string(a.Schema) + `</schema></output>`)
	}
	sb.WriteString("</outputs>")
	return sb.String()
}
