package event

import (
	"encoding/json"
	"strings"
	"time"
)

// Kind names what an event records.
type Kind string

// The kinds of stored events (the package doc says who writes each).
const (
	Input         Kind = "input"          // a message that starts a turn (InputData)
	SystemMessage Kind = "system_message" // a system or inter-agent message (InputData); silent ones start no turn
	Thought       Kind = "thought"        // model reasoning (TextData)
	Text          Kind = "text"           // assistant text of one model step (TextData)
	ToolCall      Kind = "tool_call"      // a tool call, durable before the tool runs (ToolCallData)
	ToolResult    Kind = "tool_result"    // the result of a tool call (ToolResultData)
	ModelCall     Kind = "model_call"     // one model attempt: usage, cost, latency (ModelCallData)
	Reset         Kind = "reset"          // reset marker: the context restarts after it (MarkerData)
	Marker        Kind = "marker"         // other markers: start, compaction (MarkerData)
	Error         Kind = "error"          // an error inside a turn (ErrorData)
	TurnEnd       Kind = "turn_end"       // the end of a turn and why (TurnEndData)

	ApprovalRequested Kind = "approval_requested" // a tool call waits for a person (ApprovalRequestData)
	ApprovalResolved  Kind = "approval_resolved"  // it was granted, denied or timed out (ApprovalResolvedData)
	Lifecycle         Kind = "lifecycle"          // a step of the message lifecycle outside the model loop (LifecycleData)
	WorkingMemory     Kind = "working_memory"     // a session's working memory key was set or deleted (WorkingMemoryData)
	Agent             Kind = "agent"              // a dynamic agent was started, created or stopped, or a guard refused (AgentData)
	Delivery          Kind = "delivery"           // a connector's reply was not delivered, or may have been twice (DeliveryData)
)

// Live-only kinds are published on the bus but never stored.
const (
	TextDelta Kind = "text_delta"    // a streamed piece of text (DeltaData)
	TurnStart Kind = "turn_start"    // a turn began (no payload besides Turn)
	ToolStart Kind = "tool_start"    // a tool call began (ToolCallData)
	ToolEnd   Kind = "tool_end"      // a tool call ended (ToolResultData)
	State     Kind = "session_state" // a session's state changed (StateData)
)

// Live reports whether events of kind k are only published, never stored.
func (k Kind) Live() bool {
	switch k {
	case TextDelta, TurnStart, ToolStart, ToolEnd, State, Extension:
		return true
	}
	return false
}

// Event is one entry of a session's log.
type Event struct {
	Session int64           `json:"session"`        // session id
	Seq     int64           `json:"seq"`            // per-session sequence number, from 1; 0 for live-only events
	Turn    int64           `json:"turn,omitempty"` // the turn (inbox item) that produced it, 0 if none
	Kind    Kind            `json:"kind"`
	Time    time.Time       `json:"time"`
	Data    json.RawMessage `json:"data,omitempty"`
}

// Decode unmarshals the event's payload into v.
func (e *Event) Decode(v any) error {
	if decodeFast(e.Data, v) {
		return nil
	}
	return json.Unmarshal(e.Data, v)
}

// New builds an event with a payload; the store assigns Seq.
func New(session, turn int64, kind Kind, payload any) Event {
	var data json.RawMessage
	if payload != nil {
		b, err := json.Marshal(payload)
		if err != nil {
			// Payload types are this package's own plain structs; failing to
			// encode one is a programming error.
			panic("event: encode " + string(kind) + ": " + err.Error())
		}
		data = b
	}
	return Event{Session: session, Turn: turn, Kind: kind, Time: time.Now().UTC(), Data: data}
}

// InputData is the payload of Input and SystemMessage events.
type InputData struct {
	Text           string `json:"text"`
	Source         string `json:"source,omitempty"`          // cli, api, agent:<id>, job, heartbeat (SourceHeartbeat), ...
	Origin         string `json:"origin,omitempty"`          // for system messages: who sent it
	IdempotencyKey string `json:"idempotency_key,omitempty"` // as given by the sender
	Silent         bool   `json:"silent,omitempty"`
	// Images are the message's attached images, checked when the input
	// was accepted (model.CheckImages).
	Images []ImageRef `json:"images,omitempty"`
	// Hops counts the agent messages of the chain this one ends: 0 for a
	// message from a person or a job, the hops of the input the sending
	// agent's turn served plus one for a message an agent sent.
	Hops int `json:"hops,omitempty"`
}

// SourceHeartbeat is the Source of a heartbeat's input: the periodic turn
// a job's heartbeat trigger starts in an agent's main session.
const SourceHeartbeat = "heartbeat"

// HeartbeatOK is an agent's whole answer to a heartbeat when nothing needs
// attention.
const HeartbeatOK = "HEARTBEAT_OK"

// Heartbeat reports whether the input is a heartbeat's.
func (d *InputData) Heartbeat() bool { return d.Source == SourceHeartbeat }

// NothingToDo reports whether a turn ended done with a reply of exactly
// HeartbeatOK (white space around it aside): of a heartbeat's turn, that
// nothing needed attention. Such a turn is left out of the model's context
// and of the console's chat; the log keeps it.
func (d *TurnEndData) NothingToDo() bool {
	return d.Status == StatusDone && strings.TrimSpace(d.Reply) == HeartbeatOK
}

// ImageRef is an image as the log stores it: whole, so that the context
// can be rebuilt from the log alone.
type ImageRef struct {
	MIMEType string `json:"mime_type"` // image/png, image/jpeg, image/gif or image/webp
	Size     int    `json:"size"`      // bytes
	Data     []byte `json:"data"`      // the bytes; base64 in JSON
}

// TextData is the payload of Text and Thought events.
type TextData struct {
	Text string `json:"text"`
	Step int    `json:"step,omitempty"`
}

// ToolCallData is the payload of a ToolCall event.
type ToolCallData struct {
	ID   string          `json:"id"`
	Name string          `json:"name"`
	Args json.RawMessage `json:"args"`
	Step int             `json:"step,omitempty"`
}

// ToolResultData is the payload of a ToolResult event.
type ToolResultData struct {
	ID          string `json:"id"`
	Name        string `json:"name"`
	Output      string `json:"output"`
	IsError     bool   `json:"is_error,omitempty"`
	Interrupted bool   `json:"interrupted,omitempty"` // the process restarted before the call finished
	Truncated   bool   `json:"truncated,omitempty"`
	DurationMS  int64  `json:"duration_ms"`
	// Images are images the tool returned besides its output.
	Images []ImageRef `json:"images,omitempty"`
	// ResolvedArgs are the arguments the tool was called with when they
	// differ from the call's: its template references ({{calls[0].data}})
	// resolved.
	ResolvedArgs json.RawMessage `json:"resolved_args,omitempty"`
}

// ModelCallData is the payload of a ModelCall event: one attempt at one model.
type ModelCallData struct {
	Provider     string  `json:"provider"`
	Model        string  `json:"model"`
	Step         int     `json:"step"`
	Attempt      int     `json:"attempt"`
	LatencyMS    float64 `json:"latency_ms"`
	InputTokens  int     `json:"input_tokens"`
	OutputTokens int     `json:"output_tokens"`
	CostUSD      float64 `json:"cost_usd"`
	StopReason   string  `json:"stop_reason,omitempty"`
	Error        string  `json:"error,omitempty"`
	ErrorKind    string  `json:"error_kind,omitempty"`
}

// MarkerData is the payload of Reset and Marker events.
type MarkerData struct {
	Name   string `json:"name"` // reset, start, compaction
	Reason string `json:"reason,omitempty"`
}

// ErrorData is the payload of an Error event.
type ErrorData struct {
	Kind    string `json:"kind"`
	Message string `json:"message"`
}

// Turn end statuses.
const (
	StatusDone        = "done"
	StatusBudget      = "budget"
	StatusCancelled   = "cancelled"
	StatusInterrupted = "interrupted"
	StatusError       = "error"
)

// TurnEndData is the payload of a TurnEnd event.
type TurnEndData struct {
	Status       string  `json:"status"`           // done, budget, cancelled, interrupted, error
	Budget       string  `json:"budget,omitempty"` // which budget stopped the turn
	Reason       string  `json:"reason,omitempty"`
	Reply        string  `json:"reply"` // the final text the turn produced
	Steps        int     `json:"steps"`
	InputTokens  int     `json:"input_tokens"`
	OutputTokens int     `json:"output_tokens"`
	CostUSD      float64 `json:"cost_usd"`
	DurationMS   float64 `json:"duration_ms"`
	// Outputs are the turn's outputs in order (the text reply is one of
	// type text); absent for a turn that produced none.
	Outputs []OutputRef `json:"outputs,omitempty"`
}

// OutputRef is one output of a turn.
type OutputRef struct {
	Type   string `json:"type"`              // text, message, artifact, memory, or an output extension's name
	CallID string `json:"call_id,omitempty"` // the output tool call that handled it ("" for text)
	Status string `json:"status"`            // ok or error
	Error  string `json:"error,omitempty"`   // why the handler refused it
}

// ApprovalRequestData is the payload of an ApprovalRequested event.
type ApprovalRequestData struct {
	ID        string          `json:"id"`      // what approve / deny name
	CallID    string          `json:"call_id"` // the tool call waiting
	Tool      string          `json:"tool"`
	Args      json.RawMessage `json:"args"`
	Reason    string          `json:"reason"` // why the policy asks
	ExpiresAt time.Time       `json:"expires_at"`
	// Card is what the call will do, as its tool says (a tool.Card:
	// the command, the diff, the URL); absent for a tool without one.
	Card json.RawMessage `json:"card,omitempty"`
}

// ApprovalResolvedData is the payload of an ApprovalResolved event.
type ApprovalResolvedData struct {
	ID      string `json:"id"`
	CallID  string `json:"call_id"`
	Tool    string `json:"tool"`
	Granted bool   `json:"granted"`
	Expired bool   `json:"expired,omitempty"` // nobody answered in time
	Reason  string `json:"reason,omitempty"`  // a denial's reason
	By      string `json:"by,omitempty"`      // who answered
	// Scope is what a grant covers: "" (this call), "session" (every call
	// of this tool in this session) or "always" (this exact call, in every
	// session of the agent); Grant is the id of the standing grant it made
	// or, when no person was asked, the grant that allowed the call.
	Scope string `json:"scope,omitempty"`
	Grant string `json:"grant,omitempty"`
}

// Lifecycle phases.
const (
	PhaseApproval    = "approval"     // the message was signed (what, and the signature's fingerprint)
	PhaseContext     = "context"      // a context tool's result
	PhaseAction      = "action"       // an action tool's result
	PhaseHook        = "hook"         // a hook: internal tool, then the server's hook tool
	PhasePostprocess = "postprocess"  // a post-process tool's result
	PhaseBootstrap   = "bootstrap"    // a tool called at start-up
	PhaseMemoryFlush = "memory_flush" // a call the model made to store memories before compaction
	// A context instance's hooks: onRun after a run that ended well,
	// onError after one that failed.
	PhaseContextRun   = "context_run"
	PhaseContextError = "context_error"
)

// LifecycleData is the payload of a Lifecycle event.
type LifecycleData struct {
	Phase string `json:"phase"`
	// Start, when set, lists the tools a phase is about to call; it is
	// logged before tools whose second run would not be harmless.
	Start       []string        `json:"start,omitempty"`
	Tool        string          `json:"tool,omitempty"`
	Target      string          `json:"target,omitempty"` // the server tool a hook called
	Args        json.RawMessage `json:"args,omitempty"`
	Output      string          `json:"output,omitempty"`
	IsError     bool            `json:"is_error,omitempty"`
	Interrupted bool            `json:"interrupted,omitempty"`
	DurationMS  float64         `json:"duration_ms,omitempty"`
	// What a context tool contributed.
	Context []string          `json:"context,omitempty"`
	Tools   []json.RawMessage `json:"tools,omitempty"`
	// Hooks an action tool asked for.
	Hooks []json.RawMessage `json:"hooks,omitempty"`
	// Approval is what the agent signed and the signature's fingerprint,
	// never the signature (PhaseApproval; engine.ApprovalView).
	Approval json.RawMessage `json:"approval,omitempty"`
}

// WorkingMemoryData is the payload of a WorkingMemory event: one key of the
// session's working memory (a key-value store) set to Value, or deleted.
type WorkingMemoryData struct {
	Key     string          `json:"key"`
	Value   json.RawMessage `json:"value,omitempty"` // JSON; absent when Deleted
	Deleted bool            `json:"deleted,omitempty"`
}

// DeltaData is the payload of a live TextDelta event.
type DeltaData struct {
	Text      string `json:"text"`
	Reasoning bool   `json:"reasoning,omitempty"`
	Step      int    `json:"step"`
	Attempt   int    `json:"attempt"`
}

// StateData is the payload of a live State event.
type StateData struct {
	State string `json:"state"`
}
