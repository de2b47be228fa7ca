package mcp

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"slices"
	"strings"

	"agentd/internal/model"
	"agentd/internal/tool"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"
)

// maxToolName is the longest tool name model APIs accept.
const maxToolName = 64

// remoteTool is one of a server's tools, as registered with agentd.
type remoteTool struct {
	srv    *server
	remote string // the server's own name for it
	spec   tool.Spec
}

func (t *remoteTool) Spec() tool.Spec { return t.spec }

func (t *remoteTool) Call(ctx context.Context, c *tool.Call) (tool.Result, error) {
	return t.srv.call(ctx, t.remote, c.Args, c)
}

// remoteTools builds the tools of list, by the server's own names. s.mu is
// held.
func (s *server) remoteTools(list []*sdk.Tool) map[string]*remoteTool {
	names := make([]string, 0, len(list))
	byName := make(map[string]*sdk.Tool, len(list))
	for _, t := range list {
		if t == nil || t.Name == "" {
			continue
		}
		if byName[t.Name] != nil {
			s.log.Warn("mcp: the server lists a tool twice; keeping the first", "tool", t.Name)
			continue
		}
		byName[t.Name] = t
		names = append(names, t.Name)
	}
	full := toolNames(s.name, names)
	out := make(map[string]*remoteTool, len(names))
	for _, n := range names {
		spec, err := s.toolSpec(full[n], byName[n])
		if err != nil {
			s.log.Warn("mcp: tool skipped", "tool", n, "error", err)
			continue
		}
		out[n] = &remoteTool{srv: s, remote: n, spec: spec}
	}
	return out
}

// toolSpec is the spec of the server's tool t, registered as name.
func (s *server) toolSpec(name string, t *sdk.Tool) (tool.Spec, error) {
	schema := json.RawMessage(`{"type":"object"}`)
	if t.InputSchema != nil {
		b, err := json.Marshal(t.InputSchema)
		if err != nil {
			return tool.Spec{}, fmt.Errorf("input schema: %v", err)
		}
		schema = b
	}
	spec := tool.Spec{
		Name:        name,
		Description: t.Description,
		InputSchema: schema,
		Kind:        s.toolKind(t),
		Server:      s.name,
		Scope:       slices.Clone(s.scope),
		Skills:      slices.Clone(s.skills),
	}
	if a := t.Annotations; a != nil {
		spec.ReadOnly = a.ReadOnlyHint
		spec.Idempotent = a.IdempotentHint || a.ReadOnlyHint
		spec.Destructive = a.DestructiveHint != nil && *a.DestructiveHint && !a.ReadOnlyHint
	}
	return spec, nil
}

// toolKind is the lifecycle kind of t: the configuration's Kinds entry
// (the operator's word is last), else its _meta "agentd/kind" when valid,
// else the configuration's Kind, else model.
func (s *server) toolKind(t *sdk.Tool) string {
	if k := s.cfg.Kinds[t.Name]; validKind(k) {
		return k
	}
	if k, ok := t.Meta[MetaKind].(string); ok && validKind(k) {
		return k
	}
	if validKind(s.cfg.Kind) {
		return s.cfg.Kind
	}
	return tool.KindModel
}

func validKind(k string) bool {
	switch k {
	case tool.KindModel, tool.KindContext, tool.KindAction, tool.KindPostprocess, tool.KindServer:
		return true
	}
	return false
}

func sameSpec(a, b tool.Spec) bool {
	return a.Name == b.Name && a.Description == b.Description && bytes.Equal(a.InputSchema, b.InputSchema) &&
		a.Kind == b.Kind && a.ReadOnly == b.ReadOnly && a.Idempotent == b.Idempotent && a.Risky == b.Risky &&
		a.Destructive == b.Destructive && a.Server == b.Server &&
		sameList(a.Scope, b.Scope) && sameList(a.Skills, b.Skills)
}

// toolNames maps each of a server's tool names to the name agentd
// registers: <server>__<tool>, with characters outside [a-zA-Z0-9_-]
// replaced by '_'. A name longer than 64 is shortened and ends with a hash of
// the original; so does a replaced name that would collide with another.
func toolNames(server string, names []string) map[string]string {
	out := make(map[string]string, len(names))
	count := map[string]int{}
	for _, n := range names {
		full := sanitizeName(server + "__" + n)
		out[n] = full
		count[full]++
	}
	for _, n := range names {
		full := server + "__" + n
		if out[n] == full && len(full) <= maxToolName {
			continue // unchanged: keeps its name even if a replaced one collides with it
		}
		if len(out[n]) > maxToolName || count[out[n]] > 1 {
			out[n] = hashedName(sanitizeName(full), full)
		}
	}
	return out
}

// sanitizeName replaces characters outside [a-zA-Z0-9_-] with '_'.
func sanitizeName(s string) string {
	b := []byte(s)
	changed := false
	for i, c := range b {
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '_' || c == '-') {
			b[i] = '_'
			changed = true
		}
	}
	if !changed {
		return s
	}
	return string(b)
}

// hashedName is clean, cut to fit 64 characters with "_" and 8 hex digits
// of the hash of original.
func hashedName(clean, original string) string {
	sum := sha256.Sum256([]byte(original))
	suffix := "_" + hex.EncodeToString(sum[:4])
	if len(clean) > maxToolName-len(suffix) {
		clean = clean[:maxToolName-len(suffix)]
	}
	return clean + suffix
}

// convertResult turns a tool result into what the model reads: text
// joined with "\n", placeholders for binary content, the structured
// content's JSON when there is no text. Images of a type models take are
// passed on as images too, beside their placeholder (the tool registry
// checks them further). What was cut from the result as it was read
// (_meta "agentd/omitted") becomes Omitted.
func convertResult(r *sdk.CallToolResult) tool.Result {
	var parts []string
	var images []model.Image
	hasText := false
	for _, c := range r.Content {
		switch c := c.(type) {
		case *sdk.TextContent:
			parts = append(parts, c.Text)
			hasText = true
		case *sdk.ImageContent:
			parts = append(parts, fmt.Sprintf("[image %s, %d bytes]", orUnknown(c.MIMEType), len(c.Data)))
			if model.SupportedImageType(c.MIMEType) {
				images = append(images, model.Image{MIMEType: c.MIMEType, Data: c.Data})
			}
		case *sdk.AudioContent:
			parts = append(parts, fmt.Sprintf("[audio %s, %d bytes]", orUnknown(c.MIMEType), len(c.Data)))
		case *sdk.ResourceLink:
			parts = append(parts, fmt.Sprintf("[resource %s]", c.URI))
		case *sdk.EmbeddedResource:
			if c.Resource == nil {
				continue
			}
			if c.Resource.Blob != nil {
				parts = append(parts, fmt.Sprintf("[resource %s, %s, %d bytes]", c.Resource.URI, orUnknown(c.Resource.MIMEType), len(c.Resource.Blob)))
			} else {
				parts = append(parts, c.Resource.Text)
				hasText = true
			}
		default:
			parts = append(parts, "[unsupported content]")
		}
	}
	if !hasText && r.StructuredContent != nil {
		if b, err := json.Marshal(r.StructuredContent); err == nil {
			parts = append([]string{string(b)}, parts...)
		}
	}
	return tool.Result{Output: strings.Join(parts, "\n"), IsError: r.IsError, Images: images, Omitted: omitted(r.Meta)}
}

// omitted reads the bytes a limitReader cut from a result.
func omitted(m sdk.Meta) int64 {
	switch n := m[MetaOmitted].(type) {
	case float64:
		return int64(n)
	case int64:
		return n
	case json.Number:
		v, _ := n.Int64()
		return v
	}
	return 0
}

func orUnknown(mime string) string {
	if mime == "" {
		return "application/octet-stream"
	}
	return mime
}
