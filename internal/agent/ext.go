package agent

import (
	"bytes"
	"context"
	_ "embed"
	"encoding/json"
	"errors"
	"fmt"
	"strings"

	"agentd/internal/extension"
	"agentd/internal/schema"
	"agentd/internal/store"
)

// ExtensionType is the extension type agent: an agent definition as a
// row. An agent file is the row of provenance file (the file defines the
// agent; reseed keeps the row in step); a row a person or an agent wrote
// defines the agent over a file of the same id.
func (r *Registry) ExtensionType() extension.Type {
	return extension.Type{Name: "agent", Summary: "an agent definition (the schema of an agent file)",
		Schema: Schema(), Handler: agentRows{r}, Machine: agentMachine}
}

// agentMachine says whether an agent definition reaches past what its
// writer may give: MCP servers or start-up calls of its own, secrets from
// the environment (a model's api_key_env, a server's headers_env, a model
// at a base_url of its own), an extensions or agents policy (an agent
// must not make an agent with more rights, such as one that may start or
// reach other agents), type system or tags (a system agent is the
// node's own, and a tag such as #memory-keeper is what people address),
// or a workspace, sandbox or exec block (where its commands and files
// reach, and with what network), or an identity server (where every
// message lifecycle is sent).
func agentMachine(spec json.RawMessage) bool {
	var v struct {
		MCPServers map[string]json.RawMessage `json:"mcp_servers"`
		Bootstrap  []json.RawMessage          `json:"bootstrap"`
		Extensions json.RawMessage            `json:"extensions"`
		Agents     json.RawMessage            `json:"agents"`
		Type       string                     `json:"type"`
		Tags       []string                   `json:"tags"`
		Workspace  string                     `json:"workspace"`
		Sandbox    string                     `json:"sandbox"`
		Exec       json.RawMessage            `json:"exec"`
		Identity   string                     `json:"identity_server"`
	}
	if json.Unmarshal(spec, &v) != nil || len(v.MCPServers) > 0 || len(v.Bootstrap) > 0 {
		return true
	}
	if isSet(v.Extensions) || isSet(v.Agents) || v.Type == TypeSystem || len(v.Tags) > 0 ||
		v.Workspace != "" || v.Sandbox != "" || isSet(v.Exec) || v.Identity != "" {
		return true
	}
	// A model at another base_url gets the provider's key from the
	// environment (ANTHROPIC_API_KEY when api_key_env is left out).
	for _, k := range []string{`"api_key_env"`, `"headers_env"`, `"base_url"`} {
		if bytes.Contains(spec, []byte(k)) {
			return true
		}
	}
	return false
}

// isSet reports whether a block of a spec says anything: not left out,
// null or empty.
func isSet(b json.RawMessage) bool {
	b = bytes.TrimSpace(b)
	return len(b) > 0 && !bytes.Equal(b, []byte("null")) && !bytes.Equal(b, []byte("{}"))
}

type agentRows struct{ r *Registry }

func (h agentRows) Activate(_ context.Context, e *store.Extension) error {
	if e.Provenance == store.ProvenanceFile && h.r.HasFile(e.Name) {
		h.r.RemoveRow(e.Name) // its file defines it
		h.r.Hide(e.Name, false)
		return nil
	}
	// A row a person or an agent wrote; or another node's agent file,
	// which defines the agent here too.
	def, err := h.r.ParseRow(e.Name, e.Spec)
	if err != nil {
		return err
	}
	// Made by a reseed from a document in the binary: built in, whoever
	// changed it since (Provenance is the last writer's).
	def.Builtin = e.CreatedBy == store.ProvenanceBuiltin
	h.r.SetRow(def)
	h.r.Hide(e.Name, false)
	return nil
}

// Deactivate removes the agent a row defined; a disabled row of an agent
// file takes the file's agent away too, until it is enabled.
func (h agentRows) Deactivate(_ context.Context, name string) error {
	h.r.RemoveRow(name)
	h.r.Hide(name, true)
	return nil
}

// Check decodes the definition as the agent files are, and checks the
// capabilities it includes exist; a name of a dynamic agent's id's shape
// is refused.
func (h agentRows) Check(_ context.Context, d *extension.Doc) []schema.Error {
	if !ValidID(d.Name) {
		return []schema.Error{{Pointer: "/name", Message: "an agent id is up to 64 letters, digits, - and _, starting with a letter or digit"}}
	}
	if store.IsInstanceID(d.Name) {
		// The registry finds rows before dynamic agents: such a row would
		// take a conversation's or a sub-agent's place.
		return []schema.Error{{Pointer: "/name", Message: "has the shape of a dynamic agent's id; choose a name"}}
	}
	def, err := h.r.ParseRow(d.Name, d.Spec)
	if err != nil {
		return fieldErrors(err)
	}
	var errs []schema.Error
	for i, c := range def.Capabilities {
		if !h.r.HasCapability(c) {
			errs = append(errs, schema.Error{Pointer: fmt.Sprintf("/spec/capabilities/%d", i),
				Message: fmt.Sprintf("no capability %q exists", c)})
		}
	}
	return errs
}

// fieldErrors turns a decoding error into errors at JSON pointers.
func fieldErrors(err error) []schema.Error {
	var ce *ConfigError
	if !errors.As(err, &ce) {
		return []schema.Error{{Pointer: "/spec", Message: err.Error()}}
	}
	out := make([]schema.Error, len(ce.Errors))
	for i, fe := range ce.Errors {
		out[i] = schema.Error{Pointer: "/spec" + pointer(fe.Field), Message: fe.Msg}
	}
	return out
}

// pointer turns a dotted path ("servers[0].url") into a JSON pointer.
func pointer(field string) string {
	if field == "" {
		return ""
	}
	field = strings.NewReplacer("[", ".", "]", "").Replace(field)
	var b strings.Builder
	for _, p := range strings.Split(field, ".") {
		b.WriteString("/" + schema.Escape(p))
	}
	return b.String()
}

// Seed is agent id's file as a seed document, nil when id has no file.
func (r *Registry) Seed(id string) (*extension.Seed, error) {
	spec, ok, err := r.FileSpec(id)
	if err != nil || !ok {
		return nil, err
	}
	return &extension.Seed{Doc: extension.Doc{Type: "agent", Name: id, Spec: spec},
		Provenance: store.ProvenanceFile, Source: AgentsDir + "/" + id + ".yaml"}, nil
}

// Seeds are the agent files as rows of type agent, provenance file.
func (r *Registry) Seeds() ([]extension.Seed, error) {
	r.mu.Lock()
	var ids []string
	for id, def := range r.files.defs {
		if def.File != "" {
			ids = append(ids, id)
		}
	}
	r.mu.Unlock()
	var seeds []extension.Seed
	var errs []error
	for _, id := range ids {
		spec, ok, err := r.FileSpec(id)
		if err != nil {
			errs = append(errs, err)
			continue
		}
		if ok {
			seeds = append(seeds, extension.Seed{Doc: extension.Doc{Type: "agent", Name: id, Spec: spec},
				Provenance: store.ProvenanceFile, Source: AgentsDir + "/" + id + ".yaml"})
		}
	}
	return seeds, errors.Join(errs...)
}

// CapabilityType is the extension type capability.
func (r *Registry) CapabilityType() extension.Type {
	return extension.Type{Name: "capability", Summary: "a named bundle of tools, skills, MCP servers and a prompt fragment agents include",
		Schema: capabilitySchema, Handler: capabilityRows{r}, Shared: true}
}

//go:embed capability.schema.json
var capabilitySchema json.RawMessage

type capabilityRows struct{ r *Registry }

func (h capabilityRows) Activate(_ context.Context, e *store.Extension) error {
	var c Capability
	dec := json.NewDecoder(bytes.NewReader(e.Spec))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&c); err != nil {
		return fmt.Errorf("agent: capability %s: %w", e.Name, err)
	}
	h.r.SetCapability(e.Name, &c)
	return nil
}

func (h capabilityRows) Deactivate(_ context.Context, name string) error {
	h.r.RemoveCapability(name)
	return nil
}
