package agentsys

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"

	"agentd/internal/store"
	"agentd/internal/tool"
)

// The agent tools, by name: what an agent's tools policy names to allow
// them. Each is Risky (off unless allowed by name), and
// create_permanent_agent asks a person first unless Allow names it
// exactly (AskFirst).
const (
	ToolStart     = "start_background_agent"
	ToolPermanent = "create_permanent_agent"
	ToolSend      = "send_agent_message"
	ToolList      = "list_agents"
	ToolStatus    = "agent_status"
	ToolStop      = "stop_agent"
	ToolAsk       = "ask_agent"
)

// ToolOptions are what the agent tools need besides the System.
type ToolOptions struct {
	// Permanents makes the agents create_permanent_agent creates
	// (default: the System, if it can; else the tool refuses every
	// call, saying so).
	Permanents PermanentMaker
	// Agents resolves a caller to its definition, for the agents.targets
	// stop_agent reaches (default: the System's Options.Agents).
	Agents Definitions
}

// Tools returns the agent tools over s, in the order the wiring
// registers them: start_background_agent, create_permanent_agent,
// send_agent_message, list_agents, agent_status, stop_agent, ask_agent.
// o may be nil.
func Tools(s *System, o *ToolOptions) []tool.Tool {
	var opt ToolOptions
	if o != nil {
		opt = *o
	}
	if opt.Permanents == nil {
		if p, ok := any(s).(PermanentMaker); ok {
			opt.Permanents = p
		}
	}
	if opt.Agents == nil && s != nil {
		opt.Agents = s.o.Agents
	}
	return []tool.Tool{
		startTool(s),
		permanentTool(opt.Permanents),
		sendTool(s),
		listTool(s),
		statusTool(s),
		stopTool(s, opt.Agents),
		askTool(s),
	}
}

// errBadArgs is an argument the schema let through but a tool cannot use;
// the message names the field.
var errBadArgs = errors.New("bad argument")

// badArg says what is wrong with the argument field.
func badArg(field, format string, args ...any) error {
	return fmt.Errorf("%w %s: %s", errBadArgs, field, fmt.Sprintf(format, args...))
}

// agentTool is a tool whose arguments decode into A (unknown fields
// refused) and whose result is fn's value as a JSON object; an error of
// fn is an error result in words the model can act on.
func agentTool[A any](spec tool.Spec, fn func(ctx context.Context, c *tool.Call, a A) (any, error)) tool.Tool {
	return tool.Func(spec, func(ctx context.Context, c *tool.Call) (tool.Result, error) {
		var a A
		if err := decodeArgs(c.Args, &a); err != nil {
			return tool.Result{Output: err.Error(), IsError: true}, nil
		}
		out, err := fn(ctx, c, a)
		if err != nil {
			if ctx.Err() != nil {
				return tool.Result{}, err // the registry says the call was stopped
			}
			return tool.Result{Output: refusal(err), IsError: true}, nil
		}
		b, err := json.Marshal(out)
		if err != nil {
			return tool.Result{}, err
		}
		return tool.Result{Output: string(b)}, nil
	})
}

// decodeArgs decodes a call's arguments strictly (tool.DecodeArgs), an
// error being errBadArgs.
func decodeArgs(raw json.RawMessage, v any) error {
	if err := tool.DecodeArgs(raw, v); err != nil {
		return fmt.Errorf("%w: %v", errBadArgs, err)
	}
	return nil
}

// refusal is the error result of a refused call: the error, and for a
// guard or a limit which setting refused it, so that the model stops
// rather than try again.
func refusal(err error) string {
	msg := strings.TrimPrefix(err.Error(), "agentsys: ")
	switch {
	case errors.Is(err, ErrHops):
		msg += " (guard max_hops: this chain of agent messages is as long as agents.max_hops allows; answer instead of passing it on)"
	case errors.Is(err, store.ErrLimit):
		msg += " (an agents limit of agentd.yaml: max_depth, max_children or max_live; wait for an agent you started to end, or stop one)"
	case errors.Is(err, ErrReach):
		msg += " (you may reach your parent, your children and the agents your definition's agents.targets names)"
	case errors.Is(err, ErrNotTemplate):
		msg += " (your definition's agents.templates names the templates you may start; left out, only your own)"
	case errors.Is(err, ErrEnded):
		msg += " (it takes no more messages; start a new agent instead)"
	case errors.Is(err, ErrNotFound):
		msg += " (list_agents shows the agents there are)"
	}
	return msg
}

// objectSchema is the JSON Schema of a tool's arguments: an object of
// props, with required, and no other property.
func objectSchema(props map[string]any, required ...string) json.RawMessage {
	s := map[string]any{"type": "object", "properties": props, "additionalProperties": false}
	if len(required) > 0 {
		s["required"] = required
	}
	b, err := json.Marshal(s)
	if err != nil {
		panic(err) // maps of strings, numbers and slices: cannot happen
	}
	return b
}

// textProp is the schema of a string property of 1 to max characters (0: no
// bound).
func textProp(desc string, max int) map[string]any {
	m := map[string]any{"type": "string", "minLength": 1, "description": desc}
	if max > 0 {
		m["maxLength"] = max
	}
	return m
}

// enumProp is the schema of a string property with one of values.
func enumProp(desc string, values []string) map[string]any {
	return map[string]any{"type": "string", "enum": values, "description": desc}
}

// agentProp is the schema of an argument naming an agent: an instance
// id, an agent id or name, or "#tag".
func agentProp(desc string) map[string]any { return textProp(desc, store.MaxInstanceText) }

// nonBlank checks a required text argument holds more than white space.
func nonBlank(field, s string) error {
	if strings.TrimSpace(s) == "" {
		return badArg(field, "is empty")
	}
	return nil
}
