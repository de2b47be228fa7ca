package mcp

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strings"

	"agentd/internal/tool"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"
)

// maxListPages bounds the pages of resources or prompts read from one server.
const maxListPages = 100

// Builtins returns the built-in tools over the servers' resources and
// prompts: mcp_list_resources, mcp_read_resource, mcp_list_prompts and
// mcp_get_prompt. They see the servers the calling agent uses.
func (m *Manager) Builtins() []tool.Tool {
	return []tool.Tool{
		tool.Func(tool.Spec{
			Name:        "mcp_list_resources",
			Description: "Lists the resources (documents, files, data) that connected MCP servers offer, as JSON: server, uri, name, description, mime type; resource templates have a uri_template instead of a uri. Read one with mcp_read_resource.",
			InputSchema: json.RawMessage(`{"type":"object","properties":{"server":{"type":"string","description":"Only this MCP server. Default: every connected server that offers resources."}},"additionalProperties":false}`),
			ReadOnly:    true,
			Idempotent:  true,
		}, m.listResources),
		tool.Func(tool.Spec{
			Name:        "mcp_read_resource",
			Description: "Reads one resource of an MCP server by its URI (see mcp_list_resources) and returns its text; binary contents are described, not returned.",
			InputSchema: json.RawMessage(`{"type":"object","properties":{"server":{"type":"string","description":"The MCP server."},"uri":{"type":"string","description":"The resource's URI."}},"required":["server","uri"],"additionalProperties":false}`),
			ReadOnly:    true,
			Idempotent:  true,
		}, m.readResource),
		tool.Func(tool.Spec{
			Name:        "mcp_list_prompts",
			Description: "Lists the prompt templates that connected MCP servers offer, as JSON: server, name, description and arguments. Fill one in with mcp_get_prompt.",
			InputSchema: json.RawMessage(`{"type":"object","properties":{"server":{"type":"string","description":"Only this MCP server. Default: every connected server that offers prompts."}},"additionalProperties":false}`),
			ReadOnly:    true,
			Idempotent:  true,
		}, m.listPrompts),
		tool.Func(tool.Spec{
			Name:        "mcp_get_prompt",
			Description: "Fills in a prompt template of an MCP server (see mcp_list_prompts) with arguments and returns its messages.",
			InputSchema: json.RawMessage(`{"type":"object","properties":{"server":{"type":"string","description":"The MCP server."},"name":{"type":"string","description":"The prompt's name."},"arguments":{"type":"object","additionalProperties":{"type":"string"},"description":"The prompt's arguments, by name."}},"required":["server","name"],"additionalProperties":false}`),
			ReadOnly:    true,
			Idempotent:  true,
		}, m.getPrompt),
	}
}

type resourceItem struct {
	Server      string `json:"server"`
	URI         string `json:"uri,omitempty"`
	URITemplate string `json:"uri_template,omitempty"`
	Name        string `json:"name,omitempty"`
	Description string `json:"description,omitempty"`
	MIMEType    string `json:"mime_type,omitempty"`
	Error       string `json:"error,omitempty"`
}

func (m *Manager) listResources(ctx context.Context, c *tool.Call) (tool.Result, error) {
	var args struct {
		Server string `json:"server"`
	}
	if err := decodeArgs(c, &args); err != nil {
		return tool.Result{}, err
	}
	conns, err := m.builtinTargets(c, args.Server, "resources")
	if err != nil {
		return tool.Result{}, err
	}
	items := []resourceItem{}
	for _, t := range conns {
		got, err := t.resources(ctx)
		if err != nil {
			if args.Server != "" {
				return tool.Result{}, err
			}
			items = append(items, resourceItem{Server: t.s.name, Error: err.Error()})
			continue
		}
		items = append(items, got...)
	}
	return jsonResult(items)
}

// target is a connected server a built-in may use.
type target struct {
	s  *server
	cn *conn
}

func (t target) resources(ctx context.Context) ([]resourceItem, error) {
	var items []resourceItem
	p := &sdk.ListResourcesParams{}
	for range maxListPages {
		res, err := t.cn.cs.ListResources(ctx, p)
		if err != nil {
			return nil, fmt.Errorf("mcp: %s: listing resources: %w", t.s.name, err)
		}
		for _, r := range res.Resources {
			items = append(items, resourceItem{Server: t.s.name, URI: r.URI, Name: r.Name, Description: r.Description, MIMEType: r.MIMEType})
		}
		if res.NextCursor == "" || res.NextCursor == p.Cursor {
			break
		}
		p = &sdk.ListResourcesParams{Cursor: res.NextCursor}
	}
	tp := &sdk.ListResourceTemplatesParams{}
	for range maxListPages {
		res, err := t.cn.cs.ListResourceTemplates(ctx, tp)
		if err != nil {
			// Templates are optional; a server may not implement the method.
			if isRPCError(err) {
				break
			}
			return nil, fmt.Errorf("mcp: %s: listing resource templates: %w", t.s.name, err)
		}
		for _, r := range res.ResourceTemplates {
			items = append(items, resourceItem{Server: t.s.name, URITemplate: r.URITemplate, Name: r.Name, Description: r.Description, MIMEType: r.MIMEType})
		}
		if res.NextCursor == "" || res.NextCursor == tp.Cursor {
			break
		}
		tp = &sdk.ListResourceTemplatesParams{Cursor: res.NextCursor}
	}
	return items, nil
}

func (m *Manager) readResource(ctx context.Context, c *tool.Call) (tool.Result, error) {
	var args struct {
		Server string `json:"server"`
		URI    string `json:"uri"`
	}
	if err := decodeArgs(c, &args); err != nil {
		return tool.Result{}, err
	}
	if args.Server == "" || args.URI == "" {
		return tool.Result{}, fmt.Errorf("mcp: server and uri are required")
	}
	ts, err := m.builtinTargets(c, args.Server, "resources")
	if err != nil {
		return tool.Result{}, err
	}
	t := ts[0]
	res, err := t.cn.cs.ReadResource(ctx, &sdk.ReadResourceParams{URI: args.URI})
	if err != nil {
		return tool.Result{}, fmt.Errorf("mcp: %s: reading %s: %w", t.s.name, args.URI, err)
	}
	var parts []string
	for _, rc := range res.Contents {
		if rc == nil {
			continue
		}
		if rc.Blob != nil {
			parts = append(parts, fmt.Sprintf("[resource %s, %s, %d bytes]", rc.URI, orUnknown(rc.MIMEType), len(rc.Blob)))
			continue
		}
		parts = append(parts, rc.Text)
	}
	return tool.Result{Output: strings.Join(parts, "\n")}, nil
}

type promptItem struct {
	Server      string          `json:"server"`
	Name        string          `json:"name,omitempty"`
	Description string          `json:"description,omitempty"`
	Arguments   []promptArgItem `json:"arguments,omitempty"`
	Error       string          `json:"error,omitempty"`
}

type promptArgItem struct {
	Name        string `json:"name"`
	Description string `json:"description,omitempty"`
	Required    bool   `json:"required,omitempty"`
}

func (m *Manager) listPrompts(ctx context.Context, c *tool.Call) (tool.Result, error) {
	var args struct {
		Server string `json:"server"`
	}
	if err := decodeArgs(c, &args); err != nil {
		return tool.Result{}, err
	}
	ts, err := m.builtinTargets(c, args.Server, "prompts")
	if err != nil {
		return tool.Result{}, err
	}
	items := []promptItem{}
	for _, t := range ts {
		got, err := t.prompts(ctx)
		if err != nil {
			if args.Server != "" {
				return tool.Result{}, err
			}
			items = append(items, promptItem{Server: t.s.name, Error: err.Error()})
			continue
		}
		items = append(items, got...)
	}
	return jsonResult(items)
}

func (t target) prompts(ctx context.Context) ([]promptItem, error) {
	var items []promptItem
	p := &sdk.ListPromptsParams{}
	for range maxListPages {
		res, err := t.cn.cs.ListPrompts(ctx, p)
		if err != nil {
			return nil, fmt.Errorf("mcp: %s: listing prompts: %w", t.s.name, err)
		}
		for _, pr := range res.Prompts {
			it := promptItem{Server: t.s.name, Name: pr.Name, Description: pr.Description}
			for _, a := range pr.Arguments {
				if a != nil {
					it.Arguments = append(it.Arguments, promptArgItem{Name: a.Name, Description: a.Description, Required: a.Required})
				}
			}
			items = append(items, it)
		}
		if res.NextCursor == "" || res.NextCursor == p.Cursor {
			break
		}
		p = &sdk.ListPromptsParams{Cursor: res.NextCursor}
	}
	return items, nil
}

func (m *Manager) getPrompt(ctx context.Context, c *tool.Call) (tool.Result, error) {
	var args struct {
		Server    string            `json:"server"`
		Name      string            `json:"name"`
		Arguments map[string]string `json:"arguments"`
	}
	if err := decodeArgs(c, &args); err != nil {
		return tool.Result{}, err
	}
	if args.Server == "" || args.Name == "" {
		return tool.Result{}, fmt.Errorf("mcp: server and name are required")
	}
	ts, err := m.builtinTargets(c, args.Server, "prompts")
	if err != nil {
		return tool.Result{}, err
	}
	t := ts[0]
	res, err := t.cn.cs.GetPrompt(ctx, &sdk.GetPromptParams{Name: args.Name, Arguments: args.Arguments})
	if err != nil {
		return tool.Result{}, fmt.Errorf("mcp: %s: getting prompt %s: %w", t.s.name, args.Name, err)
	}
	var b strings.Builder
	if res.Description != "" {
		b.WriteString(res.Description)
		b.WriteString("\n\n")
	}
	for i, msg := range res.Messages {
		if msg == nil {
			continue
		}
		if i > 0 {
			b.WriteString("\n\n")
		}
		fmt.Fprintf(&b, "[%s]\n", msg.Role)
		if msg.Content != nil {
			b.WriteString(convertResult(&sdk.CallToolResult{Content: []sdk.Content{msg.Content}}).Output)
		}
	}
	return tool.Result{Output: b.String()}, nil
}

// builtinTargets returns the connected server called name, or when name is
// "" every connected server with the capability, that the calling agent
// uses. capability is "resources" or "prompts".
func (m *Manager) builtinTargets(c *tool.Call, name, capability string) ([]target, error) {
	if name != "" {
		s := m.lookup(name)
		if s == nil || !m.visible(s, c) {
			return nil, fmt.Errorf("mcp: %w: no MCP server called %q; see mcp_list_resources or mcp_list_prompts for the servers available", ErrNotFound, name)
		}
		cn, err := s.session()
		if err != nil {
			return nil, fmt.Errorf("mcp: %w", err)
		}
		if !hasCapability(cn, capability) {
			return nil, fmt.Errorf("mcp: %w: server %s offers no %s", ErrUnsupported, name, capability)
		}
		return []target{{s, cn}}, nil
	}
	m.mu.Lock()
	servers := make([]*server, 0, len(m.servers))
	for _, n := range sortedKeys(m.servers) {
		servers = append(servers, m.servers[n])
	}
	m.mu.Unlock()
	var out []target
	for _, s := range servers {
		cn := s.conn.Load()
		if cn == nil || !m.visible(s, c) || !hasCapability(cn, capability) {
			continue
		}
		out = append(out, target{s, cn})
	}
	return out, nil
}

// visible reports whether the caller of c may use s: its agent sees the
// server, and for a skill's server its session loaded the skill (c.Skills).
// A call without an agent (nil, or a person's) may use every server.
func (m *Manager) visible(s *server, c *tool.Call) bool {
	if c == nil || c.Agent == "" {
		return true
	}
	s.mu.Lock()
	scope, skills := s.scope, s.skills
	s.mu.Unlock()
	if skills != nil && !slices.ContainsFunc(skills, func(sk string) bool { return slices.Contains(c.Skills, sk) }) {
		return false
	}
	if scope != nil {
		return slices.Contains(scope, c.Agent)
	}
	return m.opts.Uses == nil || m.opts.Uses(c.Agent, s.name)
}

func hasCapability(cn *conn, capability string) bool {
	r := cn.cs.InitializeResult()
	if r == nil || r.Capabilities == nil {
		return false
	}
	switch capability {
	case "resources":
		return r.Capabilities.Resources != nil
	case "prompts":
		return r.Capabilities.Prompts != nil
	}
	return false
}

func decodeArgs(c *tool.Call, v any) error {
	if c == nil || len(c.Args) == 0 || string(c.Args) == "null" {
		return nil
	}
	if err := json.Unmarshal(c.Args, v); err != nil {
		return fmt.Errorf("mcp: invalid arguments: %v", err)
	}
	return nil
}

func jsonResult(v any) (tool.Result, error) {
	b, err := json.Marshal(v)
	if err != nil {
		return tool.Result{}, fmt.Errorf("mcp: encoding the result: %w", err)
	}
	return tool.Result{Output: string(b)}, nil
}
