package extension

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"

	"agentd/internal/store"
	"agentd/internal/tool"
)

// ToolName is the name of the agents' extensions tool.
const ToolName = "extensions"

const toolSchema = `{
  "type": "object",
  "properties": {
    "op": {"type": "string", "enum": ["types", "schema", "list", "get", "put", "disable"],
      "description": "types: the extension types; schema: a type's JSON Schema; list: the rows (of a type); get: one row; put: create or change a row; disable: turn a row off"},
    "type": {"type": "string", "description": "the extension type (agent, action, command, job, capability, integration, control, renderer, theme, widget, app, artifact)"},
    "name": {"type": "string", "description": "the row's name"},
    "spec": {"type": "object", "description": "put: the document, valid against the type's schema"}
  },
  "required": ["op"],
  "additionalProperties": false
}`

// Tool returns the extensions tool through which agents read and change
// extension rows mid-conversation. It reaches beyond the conversation
// (an action it writes calls the network), so it is Risky: off unless an
// agent's policy names it (ask recommended). policy says what an agent
// may change beyond the rows it made (its extensions.any) and whether it
// may write rows that start processes here (extensions.machine); nil:
// neither.
func Tool(m *Manager, policy func(agent string) (anyRow, machine bool)) tool.Tool {
	spec := tool.Spec{Name: ToolName, Description: "Read, create, change or disable agentd extensions (agents, HTTP actions, " +
		"commands, jobs, capabilities, controls, …) while the conversation goes on; a change takes effect at the next step.",
		InputSchema: json.RawMessage(toolSchema), Risky: true, Idempotent: true}
	return tool.Func(spec, func(ctx context.Context, c *tool.Call) (tool.Result, error) {
		var a struct {
			Op, Type, Name string
			Spec           json.RawMessage
		}
		if err := json.Unmarshal(c.Args, &a); err != nil {
			return tool.Result{}, err
		}
		w := Who{Provenance: store.ProvenanceAgent + c.Agent}
		if policy != nil {
			w.Any, w.Machine = policy(c.Agent)
		}
		out, err := m.toolOp(ctx, a.Op, a.Type, a.Name, a.Spec, w)
		if err != nil {
			return tool.Result{Output: toolError(err), IsError: true}, nil
		}
		b, _ := json.Marshal(out)
		return tool.Result{Output: string(b)}, nil
	})
}

func (m *Manager) toolOp(ctx context.Context, op, typ, name string, spec json.RawMessage, w Who) (any, error) {
	switch op {
	case "types":
		var out []map[string]string
		for _, t := range m.Types() {
			out = append(out, map[string]string{"type": t.Name, "summary": t.Summary})
		}
		return out, nil
	case "schema":
		s, ok := m.Schema(typ)
		if !ok {
			return nil, fmt.Errorf("%w: %q", ErrUnknownType, typ)
		}
		return s, nil
	case "list":
		rows, err := m.List(ctx, typ)
		if err != nil {
			return nil, err
		}
		out := make([]map[string]any, len(rows))
		for i, s := range rows {
			out[i] = map[string]any{"type": s.Type, "name": s.Name, "enabled": s.Enabled, "version": s.Version,
				"provenance": s.Provenance, "active": s.Active == s.Version, "error": s.Error}
		}
		return out, nil
	case "get":
		return m.Get(ctx, typ, name)
	case "put":
		return m.Put(ctx, Doc{Type: typ, Name: name, Spec: spec}, w)
	case "disable":
		return m.SetEnabled(ctx, typ, name, false, w)
	}
	return nil, fmt.Errorf("unknown op %q", op)
}

// toolError says what went wrong in words a model can act on.
func toolError(err error) string {
	var ve *ValidationError
	if errors.As(err, &ve) {
		lines := make([]string, len(ve.Errors))
		for i, e := range ve.Errors {
			lines[i] = "- " + e.String()
		}
		return "the document is not valid; nothing was written:\n" + strings.Join(lines, "\n")
	}
	return strings.TrimPrefix(err.Error(), "extension: ")
}
