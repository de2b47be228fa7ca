// Package model defines what agentd needs from a language-model API: a
// provider-neutral request, a streamed response, and typed errors that the
// engine uses to retry, back off and fall back.
//
// The wire formats live in sub-packages: model/openai (OpenAI-compatible Chat
// Completions, which also covers Ollama, vLLM, llama.cpp and LM Studio),
// model/anthropic (Anthropic Messages), and model/fakellm, a real HTTP server
// speaking both formats from a script, for tests, benchmarks and demos.
package model

import (
	"context"
	"encoding/json"
	"time"
)

// Provider streams one model response.
//
// Stream sends the request and calls onDelta for each piece of text or
// reasoning as it arrives (onDelta may be nil). It returns the complete
// response, or an error that is, or wraps, an *Error when the failure is one
// the engine can act on.
type Provider interface {
	Stream(ctx context.Context, req *Request, onDelta func(Delta)) (*Response, error)
}

// Role is who a message is from.
type Role string

// Message roles.
const (
	RoleUser      Role = "user"
	RoleAssistant Role = "assistant"
	RoleTool      Role = "tool"
)

// Request is one call to a model.
type Request struct {
	Model       string
	System      string // the system (identity) prompt
	Messages    []Message
	Tools       []ToolSpec
	MaxTokens   int      // 0: provider default
	Temperature *float64 // nil: provider default
	TopP        *float64
	Stop        []string
	// Extra holds further provider parameters merged into the request body
	// as given in the agent's model params (e.g. "seed", "top_k").
	Extra map[string]any
	// NoStream asks for the response whole instead of streamed, for a
	// server that cannot stream. onDelta then gets the whole text at once.
	NoStream bool
	// IdleTimeout, if positive, bounds the wait for each next piece of the
	// response once its headers arrived: a response that stalls longer
	// fails with ErrTransport, which is retried.
	IdleTimeout time.Duration
}

// Message is one entry of the conversation sent to a model.
type Message struct {
	Role       Role
	Content    string     // text; for RoleTool the tool's output
	ToolCalls  []ToolCall // RoleAssistant: calls the model asked for
	ToolCallID string     // RoleTool: the call this answers
	ToolName   string     // RoleTool: the tool's name (some APIs want it)
	IsError    bool       // RoleTool: the call failed
	// Images: RoleUser, the user's attachments; RoleTool, images the tool
	// returned. See Image.
	Images []Image
	// Wire, if not nil, keeps the message's wire encodings (see Encoded):
	// set it on a message that will not change, and give a message that
	// changes a new one.
	Wire *Encoded
}

// ToolSpec describes a tool offered to the model.
type ToolSpec struct {
	Name        string
	Description string
	Parameters  json.RawMessage // JSON Schema of the arguments (an object schema)
	// Wire, if not nil, keeps the tool's wire encodings (see Encoded).
	Wire *Encoded
}

// ToolCall is a call the model asked for.
type ToolCall struct {
	ID   string
	Name string
	Args json.RawMessage // a JSON object; "{}" when the model gave none
}

// Usage counts tokens as the provider reports them.
type Usage struct {
	InputTokens  int
	OutputTokens int
}

// Response is a complete model response.
type Response struct {
	Text       string
	Reasoning  string
	ToolCalls  []ToolCall
	Usage      Usage
	StopReason string // as the provider says it: stop, tool_calls, end_turn, length, max_tokens ...
	Model      string // the model that answered, when the provider says
}

// Delta is a streamed piece of a response.
type Delta struct {
	Text      string
	Reasoning bool // Text is reasoning (reasoning_content, thinking)
}
