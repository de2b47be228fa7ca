// Package mcpdemo is a small MCP server that shows every kind of tool agentd
// knows. agentd's tests, benchmarks and docs use it as a known tool server,
// and `agentd mcp demo` serves it over stdio.
//
// Each tool declares its lifecycle kind in its _meta under "agentd/kind":
//
//	model        echo, add, counter, whoami, fill, change_tools (and late,
//	             crash)
//	             offered to the model as ordinary function calls
//	context      notes: called before inference with the message's
//	             lifecycle fields; returns context lines and tools
//	action       quote: called with the turn's output; asks agentd, through
//	             a hook, to sign a payload and call submit with it
//	postprocess  remember: called last; remembers the exchange per channel
//	server       submit: called only on demand (here, by the hook); checks
//	             the ed25519 signature
//
// whoami checks the signed approval agentd sends in a request's _meta (see
// package agentd/approval). counter is deliberately neither read-only nor
// idempotent, so a test can see that a call is not repeated; change_tools
// adds a tool, so a client receives notifications/tools/list_changed; fill
// returns as many bytes of text as asked, for tests of large results; crash,
// present only with Options.AllowCrash, ends the process, for reconnect
// tests. Every result is deterministic for the same inputs and state.
package mcpdemo

import (
	"context"
	"crypto/ed25519"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"math"
	"os"
	"slices"
	"strconv"
	"strings"
	"sync"

	"github.com/google/jsonschema-go/jsonschema"
	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/mr-tron/base58"

	"agentd/approval"
)

// KindMeta is the _meta key that holds a tool's lifecycle kind.
const KindMeta = "agentd/kind"

// The lifecycle kinds.
const (
	KindModel       = "model"
	KindContext     = "context"
	KindAction      = "action"
	KindPostprocess = "postprocess"
	KindServer      = "server"
)

// ConnectedLine is the context line notes always returns first.
const ConnectedLine = "the demo server is connected"

// CrashStatus is the exit status of the process after a call to crash.
const CrashStatus = 3

// maxNotes bounds what remember keeps per channel; older lines are dropped.
const maxNotes = 100

// MaxFill is the most text fill returns.
const MaxFill = 64 << 20

// Options configure the demo server. The zero value is ready to use.
type Options struct {
	Logger *slog.Logger // nil: discard
	// AllowCrash adds the crash tool, which ends the process.
	AllowCrash bool
	// Trusted lists the base58 public keys submit and whoami accept;
	// empty means any key.
	Trusted []string
	// Audience lists the names whoami accepts approvals for: the name the
	// agent gives this server (a stdio server's audience) or its URL.
	// Empty means "demo", the name the examples give it.
	Audience []string
	// Record, if set, is told of every call with a side effect before it
	// returns: quote and remember with the message id, submit with the
	// order. Tests count calls with it across restarts of agentd.
	Record func(tool, key string)
}

// demo is one server's state.
type demo struct {
	log     *slog.Logger
	srv     *mcp.Server
	record  func(tool, key string)
	trusted map[string]bool // base58 of the decoded keys; nil: any
	aud     []string        // the audiences whoami accepts

	mu      sync.Mutex
	counter int64
	notes   map[string][]string // channel id -> remembered exchanges
}

// New returns the demo server, ready to Run on a transport.
func New(o *Options) *mcp.Server {
	var opts Options
	if o != nil {
		opts = *o
	}
	if opts.Logger == nil {
		opts.Logger = slog.New(slog.DiscardHandler)
	}
	d := &demo{log: opts.Logger, notes: map[string][]string{}, record: opts.Record, aud: opts.Audience}
	if len(d.aud) == 0 {
		d.aud = []string{"demo"}
	}
	if d.record == nil {
		d.record = func(string, string) {}
	}
	if len(opts.Trusted) > 0 {
		d.trusted = map[string]bool{}
		for _, k := range opts.Trusted {
			pub, err := approval.ParsePublicKey(k)
			if err != nil {
				opts.Logger.Warn("mcpdemo: ignoring a trusted key that is not a base58 ed25519 public key", "key", k)
				continue
			}
			d.trusted[base58.Encode(pub)] = true
		}
	}
	d.srv = mcp.NewServer(&mcp.Implementation{Name: "agentd-demo", Title: "agentd demo tools", Version: "1.0.0"}, &mcp.ServerOptions{
		Logger:       opts.Logger,
		Instructions: "Demo tools of every lifecycle kind, for testing agentd.",
		Capabilities: &mcp.ServerCapabilities{Tools: &mcp.ToolCapabilities{ListChanged: true}},
	})
	d.addTools(opts.AllowCrash)
	return d.srv
}

func meta(kind string) mcp.Meta { return mcp.Meta{KindMeta: kind} }

func readOnly() *mcp.ToolAnnotations {
	return &mcp.ToolAnnotations{ReadOnlyHint: true, OpenWorldHint: jsonschema.Ptr(false)}
}

// lifecycleFields returns the fields agentd sends to lifecycle tools, with
// what they hold.
func lifecycleFields() map[string]string {
	return map[string]string{
		"message":      "the user's message",
		"messageId":    "a unique id of the message",
		"channelId":    "the room the message belongs to; may be empty",
		"createdAt":    "when the message came in",
		"daemonPubkey": "the agent's base58 ed25519 public key",
		"approval":     "the agent's signature over message, createdAt, messageId and channelId",
		"output":       "the agent's reply (action and postprocess tools)",
	}
}

// lifecycle returns the input schema of a lifecycle tool: the fields the
// tool reads are typed strings (required ones must be there), the other
// lifecycle fields are described, and anything else agentd sends is
// accepted and ignored.
func lifecycle(required []string, reads ...string) *jsonschema.Schema {
	fields := lifecycleFields()
	props := map[string]*jsonschema.Schema{}
	for name, desc := range fields {
		props[name] = &jsonschema.Schema{Description: desc}
	}
	for _, name := range append(slices.Clone(required), reads...) {
		props[name] = &jsonschema.Schema{Type: "string", Description: fields[name]}
	}
	return &jsonschema.Schema{Type: "object", Properties: props, Required: required}
}

// Tool inputs.

type textIn struct {
	Text string `json:"text" jsonschema:"the text to return"`
}

type fillIn struct {
	Bytes int `json:"bytes" jsonschema:"how many bytes of text to return"`
}

type addIn struct {
	A float64 `json:"a" jsonschema:"the first number"`
	B float64 `json:"b" jsonschema:"the second number"`
}

type lifecycleIn struct {
	Message   string `json:"message"`
	MessageID string `json:"messageId"`
	ChannelID string `json:"channelId"`
	Output    string `json:"output"`
}

type submitIn struct {
	Order        string `json:"order"`
	Payload      string `json:"payload"`
	Signature    string `json:"signature"`
	DaemonPubkey string `json:"daemonPubkey"`
}

// Tool outputs of the lifecycle kinds.

// ContextResult is what notes returns (as JSON text).
type ContextResult struct {
	Context []string   `json:"context"`
	Tools   []ToolHint `json:"tools"`
}

// ToolHint names a tool a context tool suggests for the turn.
type ToolHint struct {
	Name        string `json:"name"`
	Description string `json:"description"`
}

// ActionResult is what quote returns (as JSON text).
type ActionResult struct {
	Hooks []Hook `json:"hooks"`
}

// Hook asks agentd to run one of its own tools (daemonTool, e.g. sign) and
// then call hookTool with the tool's output merged into toolArgs.
type Hook struct {
	DaemonTool string         `json:"daemonTool"`
	DaemonArgs map[string]any `json:"daemonArgs"`
	HookTool   HookTool       `json:"hookTool"`
}

// HookTool is the tool a hook calls back.
type HookTool struct {
	ToolName string         `json:"toolName"`
	ToolArgs map[string]any `json:"toolArgs"`
}

func (d *demo) addTools(allowCrash bool) {
	mcp.AddTool(d.srv, &mcp.Tool{
		Name: "echo", Description: "Return the text unchanged.",
		Meta: meta(KindModel), Annotations: readOnly(),
	}, echo)
	mcp.AddTool(d.srv, &mcp.Tool{
		Name: "add", Description: "Add two numbers.",
		Meta: meta(KindModel), Annotations: &mcp.ToolAnnotations{ReadOnlyHint: true, IdempotentHint: true, OpenWorldHint: jsonschema.Ptr(false)},
	}, add)
	mcp.AddTool(d.srv, &mcp.Tool{
		Name: "counter", Description: "Increment this server's counter and return its new value. Every call counts.",
		Meta: meta(KindModel),
	}, d.count)
	mcp.AddTool(d.srv, &mcp.Tool{
		Name: "notes", Description: "Context for a message: what this server remembers of the channel, and the tools it offers.",
		Meta: meta(KindContext), Annotations: readOnly(),
		InputSchema: lifecycle(nil, "channelId"),
	}, d.notesFor)
	mcp.AddTool(d.srv, &mcp.Tool{
		Name: "remember", Description: "Remember what the user said and what the agent answered, per channel.",
		Meta:        meta(KindPostprocess),
		InputSchema: lifecycle([]string{"message", "output"}, "channelId"),
	}, d.remember)
	mcp.AddTool(d.srv, &mcp.Tool{
		Name: "quote", Description: "Prepare an order from the agent's output and ask agentd to sign it and submit it.",
		Meta:        meta(KindAction),
		InputSchema: lifecycle([]string{"output"}, "message"),
	}, d.quote)
	mcp.AddTool(d.srv, &mcp.Tool{
		Name: "submit", Description: "Accept an order whose payload is signed by the agent's key.",
		Meta: meta(KindServer),
		InputSchema: &jsonschema.Schema{Type: "object", Required: []string{"order", "payload", "signature", "daemonPubkey"}, Properties: map[string]*jsonschema.Schema{
			"order":        {Type: "string", Description: "the order id quote returned"},
			"payload":      {Type: "string", Description: "the payload quote asked agentd to sign"},
			"signature":    {Type: "string", Description: "base58 ed25519 signature over the payload's bytes"},
			"daemonPubkey": {Type: "string", Description: "the signer's base58 ed25519 public key"},
		}},
	}, d.submit)
	mcp.AddTool(d.srv, &mcp.Tool{
		Name: "whoami", Description: "Tell who signed the approval sent with this call, after checking it.",
		Meta: meta(KindModel), Annotations: readOnly(),
	}, d.whoami)
	mcp.AddTool(d.srv, &mcp.Tool{
		Name: "fill", Description: fmt.Sprintf("Return that many bytes of text (at most %d): lines of digits, each line ending with its own byte offset.", MaxFill),
		Meta: meta(KindModel), Annotations: &mcp.ToolAnnotations{ReadOnlyHint: true, IdempotentHint: true, OpenWorldHint: jsonschema.Ptr(false)},
	}, fill)
	mcp.AddTool(d.srv, &mcp.Tool{
		Name: "change_tools", Description: "Add the tool late to this server.",
		Meta: meta(KindModel),
	}, d.changeTools)
	if allowCrash {
		mcp.AddTool(d.srv, &mcp.Tool{
			Name: "crash", Description: fmt.Sprintf("End the server process with exit status %d.", CrashStatus),
			Meta: meta(KindModel),
		}, d.crash)
	}
}

func textResult(s string) *mcp.CallToolResult {
	return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: s}}}
}

func jsonResult(v any) (*mcp.CallToolResult, error) {
	b, err := json.Marshal(v)
	if err != nil {
		return nil, err
	}
	return textResult(string(b)), nil
}

func echo(_ context.Context, _ *mcp.CallToolRequest, in textIn) (*mcp.CallToolResult, any, error) {
	return textResult(in.Text), nil, nil
}

func add(_ context.Context, _ *mcp.CallToolRequest, in addIn) (*mcp.CallToolResult, any, error) {
	sum := in.A + in.B
	if math.IsInf(sum, 0) {
		return nil, nil, errors.New("the sum is out of range")
	}
	return textResult(strconv.FormatFloat(sum, 'g', -1, 64)), nil, nil
}

// fill returns in.Bytes bytes of ASCII text: 64-byte lines of digits,
// each ending with the offset of its first byte, so that a cut shows where
// it was made.
func fill(_ context.Context, _ *mcp.CallToolRequest, in fillIn) (*mcp.CallToolResult, any, error) {
	if in.Bytes < 0 || in.Bytes > MaxFill {
		return nil, nil, fmt.Errorf("bytes must be 0 to %d", MaxFill)
	}
	b := make([]byte, 0, in.Bytes+64)
	for len(b) < in.Bytes {
		off := strconv.Itoa(len(b))
		line := strings.Repeat("0123456789", 7)[:63-len(off)-1] + " " + off + "\n"
		b = append(b, line...)
	}
	return textResult(string(b[:in.Bytes])), nil, nil
}

func (d *demo) count(context.Context, *mcp.CallToolRequest, struct{}) (*mcp.CallToolResult, any, error) {
	d.mu.Lock()
	d.counter++
	n := d.counter
	d.mu.Unlock()
	return textResult(strconv.FormatInt(n, 10)), nil, nil
}

func (d *demo) notesFor(_ context.Context, _ *mcp.CallToolRequest, in lifecycleIn) (*mcp.CallToolResult, any, error) {
	d.mu.Lock()
	lines := append([]string{ConnectedLine}, d.notes[in.ChannelID]...)
	d.mu.Unlock()
	res, err := jsonResult(ContextResult{
		Context: lines,
		Tools:   []ToolHint{{Name: "quote", Description: "Turns the reply into an order that agentd signs and submits."}},
	})
	return res, nil, err
}

func (d *demo) remember(_ context.Context, _ *mcp.CallToolRequest, in lifecycleIn) (*mcp.CallToolResult, any, error) {
	line := fmt.Sprintf("user said %s / agent answered %s", in.Message, in.Output)
	d.mu.Lock()
	notes := append(d.notes[in.ChannelID], line)
	if len(notes) > maxNotes {
		notes = slices.Delete(notes, 0, len(notes)-maxNotes)
	}
	d.notes[in.ChannelID] = notes
	d.mu.Unlock()
	d.record("remember", in.MessageID)
	return textResult("remembered"), nil, nil
}

// OrderFor returns the order id and the payload to sign that quote derives
// from an output.
func OrderFor(output string) (order, payload string) {
	sum := sha256.Sum256([]byte(output))
	order = "q-" + hex.EncodeToString(sum[:6])
	return order, "agentd-demo order " + order + " " + hex.EncodeToString(sum[:])
}

func (d *demo) quote(_ context.Context, _ *mcp.CallToolRequest, in lifecycleIn) (*mcp.CallToolResult, any, error) {
	if in.Output == "" {
		return nil, nil, errors.New("output must not be empty: there is nothing to quote")
	}
	d.record("quote", in.MessageID)
	order, payload := OrderFor(in.Output)
	res, err := jsonResult(ActionResult{Hooks: []Hook{{
		DaemonTool: "sign",
		DaemonArgs: map[string]any{"payload": payload},
		HookTool:   HookTool{ToolName: "submit", ToolArgs: map[string]any{"order": order}},
	}}})
	return res, nil, err
}

func (d *demo) submit(_ context.Context, _ *mcp.CallToolRequest, in submitIn) (*mcp.CallToolResult, any, error) {
	pub, err := approval.ParsePublicKey(in.DaemonPubkey)
	if err != nil {
		return nil, nil, fmt.Errorf("daemonPubkey: %w", err)
	}
	if !d.isTrusted(pub) {
		return nil, nil, fmt.Errorf("untrusted key %s", in.DaemonPubkey)
	}
	if err := approval.CheckHook(in.DaemonPubkey, in.Payload, in.Signature); err != nil {
		return nil, nil, errors.New("bad signature")
	}
	if f := strings.Fields(in.Payload); len(f) != 4 || f[0] != "agentd-demo" || f[1] != "order" || f[2] != in.Order {
		return nil, nil, fmt.Errorf("the payload is not for order %s", in.Order)
	}
	d.record("submit", in.Order)
	return textResult("accepted " + in.Order), nil, nil
}

func (d *demo) whoami(_ context.Context, req *mcp.CallToolRequest, _ struct{}) (*mcp.CallToolResult, any, error) {
	a, err := approval.FromMeta(req.Params.GetMeta())
	if err != nil {
		return nil, nil, err
	}
	// The approval must be for this call: this server, whoami and the
	// arguments received.
	au := d.aud[0]
	if slices.Contains(d.aud, a.Audience) {
		au = a.Audience
	}
	if err := a.Check(au, req.Params.Name, req.Params.Arguments); err != nil {
		return nil, nil, err
	}
	pub, _ := approval.ParsePublicKey(a.Pubkey) // Check parsed it
	if !d.isTrusted(pub) {
		return nil, nil, fmt.Errorf("%w: %s", approval.ErrUntrusted, a.Pubkey)
	}
	return textResult(a.Pubkey + " " + a.MessageID + " verified"), nil, nil
}

func (d *demo) isTrusted(pub ed25519.PublicKey) bool {
	return d.trusted == nil || d.trusted[base58.Encode(pub)]
}

func (d *demo) changeTools(context.Context, *mcp.CallToolRequest, struct{}) (*mcp.CallToolResult, any, error) {
	mcp.AddTool(d.srv, &mcp.Tool{
		Name: "late", Description: "Return the text unchanged (added by change_tools).",
		Meta: meta(KindModel), Annotations: readOnly(),
	}, echo)
	return textResult("added late"), nil, nil
}

func (d *demo) crash(context.Context, *mcp.CallToolRequest, struct{}) (*mcp.CallToolResult, any, error) {
	d.log.Warn("mcpdemo: crash called; exiting", "status", CrashStatus)
	os.Exit(CrashStatus)
	return nil, nil, nil
}
