package output

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"

	"agentd/internal/schema"
	"agentd/internal/tool"
)

// The built-in output types' names.
const (
	Message  = "message"
	Artifact = "artifact"
	Memory   = "memory"
)

// reserved are the names no output row may take: the built-in types and
// text (the reply).
var reserved = []string{"text", Message, Artifact, Memory}

const messageSchema = `{
	"type": "object",
	"properties": {
		"connector": {"type": "string", "minLength": 1, "description": "the connector (integration row) that speaks for you"},
		"chat": {"type": "string", "minLength": 1, "description": "the chat's id (and \"/\" + thread)"},
		"text": {"type": "string", "minLength": 1, "maxLength": 32768}
	},
	"required": ["connector", "chat", "text"],
	"additionalProperties": false
}`

const artifactSchema = `{
	"type": "object",
	"properties": {
		"name": {"type": "string", "maxLength": 64, "pattern": "^[A-Za-z0-9][A-Za-z0-9_-]*(\\.[A-Za-z0-9_-]+)*$"},
		"kind": {"type": "string", "enum": ["markdown", "code", "csv", "html", "image", "text"]},
		"content": {"type": "string", "description": "the whole document, at most 1 MiB"}
	},
	"required": ["name", "kind", "content"],
	"additionalProperties": false
}`

const memorySchema = `{
	"type": "object",
	"properties": {
		"text": {"type": "string", "minLength": 1, "description": "what to remember, self-contained"}
	},
	"required": ["text"],
	"additionalProperties": false
}`

// builtins returns the built-in types, in the order they are offered.
func (s *Set) builtins() []*kind {
	ks := []*kind{
		{name: Message, description: "a message to a chat of a connector that speaks for you", schema: json.RawMessage(messageSchema), handle: s.message},
		{name: Artifact, description: "a document for people, shown beside the conversation with its versions (saved by name: the same name makes a new version)", schema: json.RawMessage(artifactSchema), handle: s.artifact},
		{name: Memory, description: "a note stored in your long-term memory", schema: json.RawMessage(memorySchema), handle: s.memory},
	}
	for _, k := range ks {
		k.compiled = must(schema.Compile(k.schema))
	}
	return ks
}

func must(s *schema.Schema, err error) *schema.Schema {
	if err != nil {
		panic(err) // a built-in schema: a test compiles them
	}
	return s
}

// message queues a message to a connector's chat; the connector must
// speak for the calling agent.
func (s *Set) message(ctx context.Context, c *tool.Call, content json.RawMessage) (string, error) {
	var m struct{ Connector, Chat, Text string }
	if err := json.Unmarshal(content, &m); err != nil {
		return "", err
	}
	if s.o.Notifier == nil {
		return "", errors.New("this agentd runs no connectors")
	}
	who, ok := s.o.Notifier.Agent(m.Connector)
	if !ok {
		return "", fmt.Errorf("no connector named %q", m.Connector)
	}
	if who != c.Agent {
		return "", fmt.Errorf("connector %s speaks for agent %s, not for you", m.Connector, who)
	}
	if err := s.o.Notifier.Notify(ctx, m.Connector, m.Chat, m.Text); err != nil {
		return "", err
	}
	return fmt.Sprintf("sent to %s chat %s (queued in its outbox for delivery)", m.Connector, m.Chat), nil
}

// artifact saves the artifact through the artifact tool: a new one, or a
// new version of the one of that name.
func (s *Set) artifact(ctx context.Context, c *tool.Call, content json.RawMessage) (string, error) {
	var a struct{ Name, Kind, Content string }
	if err := json.Unmarshal(content, &a); err != nil {
		return "", err
	}
	args := map[string]any{"action": "create", "name": a.Name, "title": a.Name, "kind": a.Kind, "content": a.Content}
	if _, err := s.run(ctx, c, "artifact", map[string]any{"action": "get", "name": a.Name}); err == nil {
		args = map[string]any{"action": "update", "name": a.Name, "kind": a.Kind, "content": a.Content}
	}
	out, err := s.run(ctx, c, "artifact", args)
	if err != nil {
		return "", err
	}
	var r struct {
		Version int64 `json:"version"`
	}
	_ = json.Unmarshal([]byte(out), &r)
	return fmt.Sprintf("artifact %s saved (version %d)", a.Name, r.Version), nil
}

// memory stores the text as an insight through the remember tool.
func (s *Set) memory(ctx context.Context, c *tool.Call, content json.RawMessage) (string, error) {
	var m struct{ Text string }
	if err := json.Unmarshal(content, &m); err != nil {
		return "", err
	}
	out, err := s.run(ctx, c, "remember", map[string]any{"insight": m.Text})
	if err != nil {
		return "", err
	}
	return "remembered: " + out, nil
}
