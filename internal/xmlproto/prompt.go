package xmlproto

import "strings"

// rules is how the protocol works, as the model reads it first.
const rules = `<protocol>
You work in steps. In each step you write XML elements:
- <think>…</think>: your reasoning, first, if you need it. The user does not see it.
- <action_call name="NAME">{"arg": "value"}</action_call>: calls an action of <actions>. The body is one JSON object matching the action's schema. A step may call several actions; agentd runs them and the next message, <action_results>, holds one <action_result call="ID" name="NAME"> per call in the order you wrote them (error="true" when it failed).
- A later call of the same step may use an earlier call's result in its arguments: {{calls[0].data}} is the first call's result, {{calls[1].data.items[2].id}} a field inside the second's. Write the reference as a JSON string value, e.g. {"id": "{{calls[0].data.id}}"}.
- <output>…</output>: your reply to the user. A typed output of <outputs> is <output type="TYPE">{JSON matching its schema}</output>.
A step without an action_call ends your turn: write your outputs in it.
Inside think and output, write < and & as &lt; and &amp; or put the text in <![CDATA[…]]>. Never write action_results or protocol_error yourself: agentd writes them. A <protocol_error> message lists what agentd could not read in your last step: write that step again, correctly.
</protocol>
`

// promptTags are the elements of the prompt around the text it escapes,
// with the tags of the state sections agentd writes (contexts' renders,
// working memory). Escape escapes them too, so that no text in a message
// can pass for a part of the prompt.
var promptTags = []string{"protocol", "instructions", "actions", "action", "description", "schema", "outputs", "output_type",
	"context", "working_memory"}

// textOutput describes the output every agent has.
const textOutput = "The reply to the user, as text."

// Render is the system prompt of an agent on the XML protocol: the
// protocol's rules, the instructions, the state sections, the actions
// with their schemas and the output types (text first). The same Prompt
// renders the same text, so a provider's prompt cache keeps it.
func (p *Prompt) Render() string {
	var b strings.Builder
	b.WriteString(rules)
	also := promptTags
	for _, s := range p.Sections {
		also = append(also[:len(also):len(also)], s.Tag)
	}
	if p.Instructions != "" {
		b.WriteString("<instructions>\n")
		b.WriteString(escape(p.Instructions, "&lt;", true, also))
		b.WriteString("\n</instructions>\n")
	}
	for _, s := range p.Sections {
		b.WriteString("<" + s.Tag)
		for _, a := range s.Attrs {
			b.WriteString(" " + a.Name + `="` + escapeAttr(a.Value) + `"`)
		}
		b.WriteString(">\n")
		if s.Raw {
			b.WriteString(s.Body)
		} else {
			b.WriteString(escape(s.Body, "&lt;", true, also))
		}
		b.WriteString("\n</" + s.Tag + ">\n")
	}
	b.WriteString("<actions>\n")
	for _, a := range p.Actions {
		writeAction(&b, "action", a, also)
	}
	b.WriteString("</actions>\n<outputs>\n")
	writeAction(&b, "output_type", Action{Name: "text", Description: textOutput}, also)
	for _, a := range p.Outputs {
		writeAction(&b, "output_type", a, also)
	}
	b.WriteString("</outputs>\n")
	return b.String()
}

// writeAction writes one offered action or output type.
// Its text cannot open or close the elements named in also.
func writeAction(b *strings.Builder, tag string, a Action, also []string) {
	b.WriteString("<" + tag + ` name="` + escapeAttr(a.Name) + `">`)
	if a.Description != "" {
		b.WriteString("<description>" + escape(a.Description, "&lt;", true, also) + "</description>")
	}
	if len(a.Schema) > 0 {
		b.WriteString("<schema>" + escapeJSON(a.Schema, also) + "</schema>")
	}
	b.WriteString("</" + tag + ">\n")
}
