package engine

import (
	"bytes"
	"encoding/json"
	"strings"

	"agentd/internal/event"
	"agentd/internal/tool"
)

// outputSpec returns the output tool as this agent is offered it: its
// own output types, by name in the schema's enum and with each one's
// content schema in the description. Any other tool is returned as is.
func (r *run) outputSpec(s *tool.Spec) *tool.Spec {
	if s.Name != OutputTool || r.e.o.Outputs == nil {
		return s
	}
	types := r.e.o.Outputs.OutputTypes(r.def)
	if len(types) == 0 {
		return s
	}
	names := make([]string, len(types))
	var b strings.Builder
	b.WriteString(s.Description)
	b.WriteString(" Your output types (content must match the type's schema):")
	for i, t := range types {
		names[i] = t.Name
		b.WriteString("\n- ")
		b.WriteString(t.Name)
		if t.Description != "" {
			b.WriteString(": ")
			b.WriteString(t.Description)
		}
		b.WriteString("; content schema: ")
		b.Write(compactJSON(t.Schema))
	}
	params, _ := json.Marshal(map[string]any{
		"type": "object",
		"properties": map[string]any{
			"type":    map[string]any{"type": "string", "enum": names, "description": "the output's type"},
			"content": map[string]any{"description": "the output, as its type's schema says"},
		},
		"required":             []string{"type", "content"},
		"additionalProperties": false,
	})
	out := *s
	out.Description, out.InputSchema = b.String(), params
	return &out
}

// compactJSON is raw without insignificant space (raw itself if it is
// not valid JSON).
func compactJSON(raw json.RawMessage) []byte {
	var b bytes.Buffer
	if err := json.Compact(&b, raw); err != nil {
		return raw
	}
	return b.Bytes()
}

// outputsOf returns the outputs of a turn, in order: each call of the
// output tool that has a result (its type from its arguments, the
// result's status), then the text reply when there is one; nil for a
// turn that made no output call (its reply is end.Reply). The calls come
// from the turn's events before this run (Prior) and from this run's
// results.
func (r *run) outputsOf(reply string) []event.OutputRef {
	var out []event.OutputRef
	types := map[string]string{}
	for i := range r.t.Prior {
		switch ev := &r.t.Prior[i]; ev.Kind {
		case event.ToolCall:
			var d event.ToolCallData
			if ev.Decode(&d) == nil && d.Name == OutputTool {
				types[d.ID] = outputType(d.Args)
			}
		case event.ToolResult:
			var d event.ToolResultData
			if ev.Decode(&d) == nil && d.Name == OutputTool {
				out = append(out, outputRef(types[d.ID], &d))
			}
		}
	}
	out = append(out, r.outs...)
	if len(out) == 0 {
		return nil // the reply alone: it is end.Reply, and the log stays as it was
	}
	if reply != "" {
		out = append(out, event.OutputRef{Type: "text", Status: "ok"})
	}
	return out
}

// noteOutputs keeps the outputs among a step's calls and their results.
func (r *run) noteOutputs(calls []pendingCall, results []event.ToolResultData) {
	for i := range calls {
		if calls[i].Name == OutputTool {
			r.outs = append(r.outs, outputRef(outputType(calls[i].Args), &results[i]))
		}
	}
}

// maxOutputError bounds the error an OutputRef carries.
const maxOutputError = 512

func outputRef(typ string, res *event.ToolResultData) event.OutputRef {
	o := event.OutputRef{Type: typ, CallID: res.ID, Status: "ok"}
	if res.IsError {
		o.Status, o.Error = "error", res.Output
		if len(o.Error) > maxOutputError {
			o.Error = strings.ToValidUTF8(o.Error[:maxOutputError], "") + "…"
		}
	}
	return o
}

// outputType is the type an output call's arguments name ("" none).
func outputType(args json.RawMessage) string {
	var a struct {
		Type string `json:"type"`
	}
	_ = json.Unmarshal(args, &a)
	return a.Type
}
