package engine

import (
	"bytes"
	"encoding/json"
	"errors"
	"strings"
	"sync"

	"agentd/internal/agent"
	"agentd/internal/model"
	"agentd/internal/xmlproto"
)

// The XML tool protocol (tool_protocol: xml, or auto for a model that
// cannot call tools) lives at three seams of a step and nowhere else:
// the request (no native tools; the XML prompt; the conversation's calls
// and results as text: xmlRequest), the stream (a parser over the text:
// xmlStream) and the step's commit (its thoughts, text, calls, outputs
// and problems: xmlStep.response). The log stays the same as the native
// protocol's, so resume, compaction, the console and connectors do not
// know which protocol a step used; only the problems found in what a
// model wrote are logged as their own kind of marker.

// ProtocolMarker names the marker that logs a problem found in what a
// model wrote in the XML protocol (its Reason); the model is told of it
// in the next step.
const ProtocolMarker = "protocol"

// noTools remembers, per node, the models whose server refused a request
// because it offered tools (tool_protocol auto): those get the XML
// protocol from then on. It is in memory only: after a restart the first
// request to such a model learns it again.
type noTools struct {
	mu sync.Mutex
	m  map[string]bool // by noToolsKey
}

func noToolsKey(m *agent.Model) string {
	return m.Provider + "\x00" + m.BaseURL + "\x00" + m.Name
}

func (n *noTools) has(m *agent.Model) bool {
	n.mu.Lock()
	defer n.mu.Unlock()
	return n.m[noToolsKey(m)]
}

func (n *noTools) add(m *agent.Model) {
	n.mu.Lock()
	defer n.mu.Unlock()
	if n.m == nil {
		n.m = make(map[string]bool)
	}
	n.m[noToolsKey(m)] = true
}

// xml reports whether a request to m speaks the XML protocol: the
// protocol set for m (its own, else the agent's), and for auto whether
// m's server was found unable to call tools. The echo provider calls no
// tools and reads no prompt: native always under auto.
func (r *run) xml(m *agent.Model) bool {
	switch r.def.Protocol(m) {
	case agent.ToolProtocolXML:
		return true
	case agent.ToolProtocolAuto:
		return m.Provider != agent.ProviderEcho && r.e.notools.has(m)
	}
	return false
}

// learnNoTools reports whether err is m's server refusing a request with
// tools because it cannot call them, under tool_protocol auto; m is then
// remembered as one that gets the XML protocol.
func (r *run) learnNoTools(m *agent.Model, req *model.Request, err error) bool {
	if len(req.Tools) == 0 || r.def.Protocol(m) != agent.ToolProtocolAuto || m.Provider == agent.ProviderEcho || !refusesTools(err) {
		return false
	}
	r.e.notools.add(m)
	r.e.o.Logger.Info("the model cannot call tools: using the XML tool protocol", "agent", r.def.ID, "provider", m.Provider, "model", m.Name)
	return true
}

// refusesTools reports whether err is a 400 saying that tools are not
// supported, as Ollama ("registry/model does not support tools"),
// llama.cpp and vLLM word it.
func refusesTools(err error) bool {
	me, ok := errors.AsType[*model.Error](err)
	if !ok || !errors.Is(err, model.ErrBadRequest) {
		return false
	}
	msg := strings.ToLower(me.Message)
	return strings.Contains(msg, "tool") && strings.Contains(msg, "support")
}

// xmlSystem is the XML protocol's system prompt: the instructions, the
// turn's state, the actions offered (specs) and the output types.
func (r *run) xmlSystem(specs []model.ToolSpec) string {
	p := xmlproto.Prompt{Instructions: r.instructions(), Sections: r.stateSections()}
	p.Actions = make([]xmlproto.Action, len(specs))
	for i, s := range specs {
		p.Actions[i] = xmlproto.Action{Name: s.Name, Description: s.Description, Schema: s.Parameters}
	}
	if o := r.e.o.Outputs; o != nil {
		for _, t := range o.OutputTypes(r.def) {
			p.Outputs = append(p.Outputs, xmlproto.Action{Name: t.Name, Description: t.Description, Schema: t.Schema})
		}
	}
	return p.Render()
}

// xmlRequest turns req, built for the native protocol, into the XML
// protocol's: no tools, the XML system prompt, the messages as text.
func (r *run) xmlRequest(req *model.Request, specs []model.ToolSpec) {
	req.System = r.xmlSystem(specs)
	req.Tools = nil
	req.Messages = xmlMessages(req.Messages)
}

// xmlMessages returns msgs as a model without tool calling reads them:
// an assistant message's calls as action_call text after its text; each
// run of tool results, with the problems messages after it, as one user
// message of results (the images kept); text agentd did not write
// escaped so that it can neither open nor close the protocol's elements.
// msgs is not changed.
func xmlMessages(msgs []model.Message) []model.Message {
	out := make([]model.Message, 0, len(msgs))
	for i := 0; i < len(msgs); i++ {
		m := &msgs[i]
		switch {
		case m.Role == model.RoleAssistant:
			var b strings.Builder
			b.WriteString(xmlproto.Escape(m.Content))
			for _, c := range m.ToolCalls {
				if b.Len() > 0 {
					b.WriteString("\n")
				}
				b.WriteString(xmlproto.CallText(c.Name, c.Args))
			}
			out = append(out, model.Message{Role: model.RoleAssistant, Content: b.String(), Wire: new(model.Encoded)})
		case m.Role == model.RoleTool || isProblems(m):
			// A step's results and problems, in whatever order they
			// came (a resumed turn's problems come before the results of
			// the calls it runs again).
			var rs []xmlproto.Result
			var imgs []model.Image
			var problems []string
			for ; i < len(msgs) && (msgs[i].Role == model.RoleTool || isProblems(&msgs[i])); i++ {
				t := &msgs[i]
				if t.Role != model.RoleTool {
					problems = append(problems, t.Content)
					continue
				}
				rs = append(rs, xmlproto.Result{Call: t.ToolCallID, Name: t.ToolName, Output: t.Content, IsError: t.IsError})
				imgs = append(imgs, t.Images...)
			}
			i--
			var parts []string
			if len(rs) > 0 {
				parts = append(parts, xmlproto.ResultsText(rs))
			}
			parts = append(parts, problems...)
			out = append(out, model.Message{Role: model.RoleUser, Content: strings.Join(parts, "\n"), Images: imgs, Wire: new(model.Encoded)})
		default:
			c := *m
			c.Content, c.Wire = xmlproto.Escape(m.Content), new(model.Encoded)
			out = append(out, c)
		}
	}
	return out
}

// problemsReason is the Reason of the ProtocolMarker that logs a step's
// problems: one a line.
func problemsReason(problems []string) string {
	lines := make([]string, len(problems))
	for i, p := range problems {
		lines[i] = strings.ReplaceAll(p, "\n", " ")
	}
	return strings.Join(lines, "\n")
}

// ProblemsMessage is the model message that tells the model of the
// problems found in what it wrote in a step in the XML protocol (a
// ProtocolMarker's Reason, one a line).
func ProblemsMessage(reason string) model.Message {
	return model.Message{Role: model.RoleUser, Content: xmlproto.ProblemsText(strings.Split(reason, "\n")), Wire: new(model.Encoded)}
}

// isProblems reports whether m is a ProblemsMessage: only agentd writes
// a user message that begins with the problems tag, since Neutralise
// escapes it in every other text.
func isProblems(m *model.Message) bool {
	return m.Role == model.RoleUser && strings.HasPrefix(m.Content, "<"+ownTagNames[problemsTag])
}

// xmlStream parses the text of one attempt at a step in the XML
// protocol as it streams.
type xmlStream struct {
	p     *xmlproto.Parser
	items []xmlproto.Item
	fed   bool // the provider streamed text
	calls int  // the step's calls so far (action calls and outputs other than text)
	// onCall, if set, is told of each action call as its element closes
	// (i: its index among the step's calls).
	onCall func(i int, name string, args json.RawMessage)
}

func newXMLStream() *xmlStream { return &xmlStream{p: xmlproto.NewParser(nil)} }

// delta parses d and returns what a live reader may see of it: thoughts
// as reasoning and text outputs as text; never the protocol's tags.
func (x *xmlStream) delta(d model.Delta, publish func(model.Delta)) {
	if d.Reasoning {
		publish(d)
		return
	}
	x.fed = true
	x.add(x.p.Write(d.Text), publish)
}

func (x *xmlStream) add(items []xmlproto.Item, publish func(model.Delta)) {
	for _, it := range items {
		switch it.Kind {
		case xmlproto.ThoughtDelta:
			publish(model.Delta{Text: it.Text, Reasoning: true})
		case xmlproto.OutputDelta:
			publish(model.Delta{Text: it.Text})
		case xmlproto.Call:
			// Compact, as the log keeps it: the conversation rebuilt from
			// the log is the one the model was sent.
			var args bytes.Buffer
			if json.Compact(&args, it.Args) == nil {
				it.Args = args.Bytes()
			}
			x.items = append(x.items, it)
			if x.onCall != nil {
				x.onCall(x.calls, it.Name, it.Args)
			}
			x.calls++
		case xmlproto.Output:
			x.items = append(x.items, it)
			if it.Type != "" && it.Type != "text" {
				x.calls++
			}
		default:
			x.items = append(x.items, it)
		}
	}
}

// finish parses what the provider returned whole (a response not
// streamed) and the end of the text, and returns the step's response in
// the native protocol's terms, with the problems found.
func (x *xmlStream) finish(resp *model.Response, publish func(model.Delta)) (*model.Response, []string) {
	if !x.fed && resp.Text != "" {
		x.add(x.p.Write(resp.Text), publish)
	}
	x.add(x.p.Close(), publish)
	out := *resp
	out.Text, out.ToolCalls = "", nil
	var thoughts, texts, loose []string
	var problems []string
	if resp.Reasoning != "" {
		thoughts = append(thoughts, resp.Reasoning)
	}
	for _, it := range x.items {
		switch it.Kind {
		case xmlproto.Thought:
			thoughts = append(thoughts, it.Text)
		case xmlproto.Text:
			loose = append(loose, it.Text)
		case xmlproto.Call:
			out.ToolCalls = append(out.ToolCalls, model.ToolCall{Name: it.Name, Args: it.Args})
		case xmlproto.Output:
			if it.Type == "" || it.Type == "text" {
				texts = append(texts, it.Text)
				continue
			}
			out.ToolCalls = append(out.ToolCalls, model.ToolCall{Name: OutputTool, Args: outputArgs(&it)})
		case xmlproto.Problem:
			problems = append(problems, it.Err)
		}
	}
	if len(texts) == 0 {
		texts = loose
	}
	out.Reasoning = strings.TrimSpace(strings.Join(thoughts, "\n"))
	out.Text = strings.TrimSpace(strings.Join(texts, "\n"))
	return &out, problems
}

// outputArgs are the output tool's arguments for an output element:
// {"type": T, "content": its JSON content, or its text as a string}.
func outputArgs(it *xmlproto.Item) json.RawMessage {
	content := it.Args
	if len(content) == 0 {
		content, _ = json.Marshal(it.Text)
	}
	b, _ := json.Marshal(struct {
		Type    string          `json:"type"`
		Content json.RawMessage `json:"content"`
	}{it.Type, content})
	return b
}
