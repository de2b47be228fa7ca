package output

import (
	"context"
	_ "embed"
	"encoding/json"
	"fmt"
	"slices"

	"agentd/internal/extension"
	"agentd/internal/schema"
	"agentd/internal/store"
	"agentd/internal/tool"
)

// TypeName is the extension type of output rows.
const TypeName = "output"

//go:embed schema.json
var schemaJSON []byte

// Spec is an output row's spec: the row's name is the output type's.
type Spec struct {
	Agent       string          `json:"agent"`
	Description string          `json:"description,omitempty"`
	Schema      json.RawMessage `json:"schema"`
	Handler     Handler         `json:"handler"`
}

// Handler is the tool an output of a row's type is handed to.
type Handler struct {
	Tool string          `json:"tool"`
	Args json.RawMessage `json:"args,omitempty"` // a template over the content (Fill)
}

// decodeSpec decodes and compiles a row's spec.
func decodeSpec(raw json.RawMessage) (*Spec, *schema.Schema, error) {
	var s Spec
	if err := json.Unmarshal(raw, &s); err != nil {
		return nil, nil, fmt.Errorf("output: %w", err)
	}
	c, err := schema.Compile(s.Schema)
	if err != nil {
		return nil, nil, fmt.Errorf("output: schema: %w", err)
	}
	if len(s.Handler.Args) == 0 {
		s.Handler.Args = json.RawMessage("{}")
	}
	return &s, c, nil
}

// Type is the output extension type, with the Set as its handler.
func (s *Set) Type() extension.Type {
	return extension.Type{Name: TypeName, Summary: "an output type of an agent: content with a schema, handed to a tool",
		Schema: schemaJSON, Handler: rowHandler{s}, Actor: extension.AgentOf}
}

// rowHandler activates output rows in a Set (extension.Handler,
// extension.Checker).
type rowHandler struct{ s *Set }

// Activate makes the row's output type active in place of its previous
// version; a spec that does not decode leaves the previous one.
func (h rowHandler) Activate(_ context.Context, e *store.Extension) error {
	sp, c, err := decodeSpec(e.Spec)
	if err != nil {
		return err
	}
	k := &kind{name: e.Name, description: sp.Description, agent: sp.Agent, schema: sp.Schema, compiled: c}
	k.handle = func(ctx context.Context, call *tool.Call, content json.RawMessage) (string, error) {
		return h.s.handleRow(ctx, call, sp.Handler, content)
	}
	h.s.mu.Lock()
	h.s.rows[e.Name] = k
	h.s.mu.Unlock()
	return nil
}

// Deactivate removes the output type.
func (h rowHandler) Deactivate(_ context.Context, name string) error {
	h.s.mu.Lock()
	delete(h.s.rows, name)
	h.s.mu.Unlock()
	return nil
}

// Check checks what the schema cannot: the name is not a built-in type's,
// the agent exists, the content schema compiles, the handler's arguments
// refer only to the content.
func (h rowHandler) Check(_ context.Context, d *extension.Doc) []schema.Error {
	var s Spec
	if err := json.Unmarshal(d.Spec, &s); err != nil {
		return []schema.Error{{Pointer: "/spec", Message: err.Error()}}
	}
	var errs []schema.Error
	add := func(ptr, format string, args ...any) {
		errs = append(errs, schema.Error{Pointer: ptr, Message: fmt.Sprintf(format, args...)})
	}
	if slices.Contains(reserved, d.Name) {
		add("/name", "%s is a built-in output type (reserved: %v)", d.Name, reserved)
	}
	if _, ok := h.s.agents.Get(s.Agent); !ok {
		add("/spec/agent", "no agent %q", s.Agent)
	}
	if _, err := schema.Compile(s.Schema); err != nil {
		add("/spec/schema", "%v", err)
	}
	if len(s.Handler.Args) > 0 {
		for _, ref := range argRefs(s.Handler.Args) {
			if !isContentRef(ref) {
				add("/spec/handler/args", "{{%s}}: a handler's arguments refer only to the content ({{content}}, {{content.x}})", ref)
			}
		}
	}
	return errs
}

// handleRow hands an output of a row's type to the row's handler tool, as
// the calling agent: the tool must be one its policy allows without
// asking, and of a server it uses.
func (s *Set) handleRow(ctx context.Context, c *tool.Call, h Handler, content json.RawMessage) (string, error) {
	d, ok := s.agents.Get(c.Agent)
	if !ok {
		return "", fmt.Errorf("no agent %q", c.Agent)
	}
	t, ok := s.tools.Get(h.Tool)
	if !ok {
		return "", fmt.Errorf("its handler tool %s is not available", h.Tool)
	}
	spec := t.Spec()
	p := tool.Policy{Allow: d.Tools.Allow, Deny: d.Tools.Deny, Ask: d.Tools.Ask, Grant: d.Tools.Grant}
	if v := p.Decide(spec); v.Verdict != tool.Allow {
		return "", fmt.Errorf("its handler tool %s is not allowed for you without asking: %s", h.Tool, v.Reason)
	}
	if spec.Server != "" && !d.UsesServer(spec.Server) {
		return "", fmt.Errorf("its handler tool %s is of server %s, which you do not use", h.Tool, spec.Server)
	}
	args, err := Fill(h.Args, content)
	if err != nil {
		return "", err
	}
	out, err := s.run(ctx, c, h.Tool, args)
	if err != nil {
		return "", fmt.Errorf("handler %s: %w", h.Tool, err)
	}
	return "handled by " + h.Tool + ": " + out, nil
}
