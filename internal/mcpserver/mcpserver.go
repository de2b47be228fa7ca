// Package mcpserver serves agentd as a Model Context Protocol server, so that
// any MCP client (an editor, a desktop assistant, another agent runtime) can
// talk to agentd's agents.
//
// Each agent appears as one tool, ask_<agent id>, that sends a message to the
// agent, waits for the turn to end and returns the reply. Three read-only
// tools complete the picture: list_agents, list_sessions and
// read_session_log, which pages through a session's event log.
//
// The facade speaks MCP over stdio (ServeStdio), over any transport of the
// MCP Go SDK (Serve) and over streamable HTTP (Handler). The HTTP handler
// checks the Host and Origin headers against allow-lists before the MCP
// layer sees a request, so a web page cannot reach a local agentd through
// DNS rebinding.
//
// What the facade needs from agentd is the small Backend interface; call
// Sync once before serving and again whenever the set of agents changes.
package mcpserver

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"strings"
	"sync"
	"time"

	"github.com/google/jsonschema-go/jsonschema"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"agentd/internal/event"
)

// ErrClosed is returned by Serve and ServeStdio after Close.
var ErrClosed = errors.New("mcpserver: server closed")

// Agent is an agent as MCP clients see it.
type Agent struct {
	ID, Name, Description string
}

// Session is a session as MCP clients see it.
type Session struct {
	Address   string // <agent>/<key>
	State     string
	UpdatedAt time.Time
	LastSeq   int64 // the sequence number of the session's last event
}

// Backend is what the facade needs from agentd.
type Backend interface {
	// Agents lists the agents clients may talk to.
	Agents(ctx context.Context) ([]Agent, error)
	// Ask sends text to the agent's session with the given key, runs the
	// turn and waits for it to end. status is the turn_end status (done,
	// budget, cancelled, interrupted, error). When the turn ran but did
	// not end done, err, if not nil, says why; when the message could not
	// be submitted at all, status is "" and err says why.
	Ask(ctx context.Context, agentID, sessionKey, text string) (reply, status string, err error)
	// Sessions lists sessions, most recently updated first; agentID ""
	// lists those of every agent.
	Sessions(ctx context.Context, agentID string, limit int) ([]Session, error)
	// Events returns up to limit events of a session's log with a sequence
	// number greater than after, in order.
	Events(ctx context.Context, address string, after int64, limit int) ([]event.Event, error)
}

// Options configure a Server. The zero value is ready to use.
type Options struct {
	Logger  *slog.Logger // nil: discard
	Name    string       // the server name clients see; default "agentd"
	Version string       // default "dev"
}

// Tool-call limits and defaults.
const (
	DefaultSessionKey = "mcp" // the session ask_* tools use when none is given
	defaultLogLimit   = 100
	maxLogLimit       = 1000
	defaultListLimit  = 100
	maxListLimit      = 1000
	maxKeyLen         = 256
	askPrefix         = "ask_"
)

// Server is agentd's MCP facade. Its methods are safe for concurrent use.
type Server struct {
	b   Backend
	log *slog.Logger
	mcp *mcp.Server

	// ctx is cancelled by Close; it bounds every backend call a tool makes.
	ctx    context.Context
	cancel context.CancelFunc

	mu   sync.Mutex       // serializes Sync
	asks map[string]Agent // tool name -> the agent it asks
}

// New returns a facade over b with the list and read tools registered; the
// per-agent ask tools appear with the first Sync.
func New(b Backend, o *Options) *Server {
	var opts Options
	if o != nil {
		opts = *o
	}
	if opts.Logger == nil {
		opts.Logger = slog.New(slog.DiscardHandler)
	}
	if opts.Name == "" {
		opts.Name = "agentd"
	}
	if opts.Version == "" {
		opts.Version = "dev"
	}
	ctx, cancel := context.WithCancel(context.Background())
	s := &Server{b: b, log: opts.Logger, ctx: ctx, cancel: cancel, asks: map[string]Agent{}}
	s.mcp = mcp.NewServer(&mcp.Implementation{Name: opts.Name, Title: "agentd", Version: opts.Version}, &mcp.ServerOptions{
		Logger:       slog.New(minLevel{h: opts.Logger.Handler(), min: slog.LevelWarn}),
		Instructions: "Each ask_<agent> tool sends a message to one agentd agent and returns its reply; the conversation continues in the session named by the session argument (default \"mcp\"). list_agents, list_sessions and read_session_log show agents, sessions and what happened in a session.",
		Capabilities: &mcp.ServerCapabilities{Tools: &mcp.ToolCapabilities{ListChanged: true}},
	})
	s.addStaticTools()
	return s
}

// Sync rebuilds the ask_* tools from Backend.Agents: tools of agents that
// are gone are removed, new or changed agents get their tool (re)added.
// Connected clients receive notifications/tools/list_changed when the set
// changed. Agents whose ID cannot form a tool name are skipped with a
// warning. On error the current tools stay as they are.
func (s *Server) Sync(ctx context.Context) error {
	agents, err := s.b.Agents(ctx)
	if err != nil {
		return fmt.Errorf("mcpserver: sync: list agents: %w", err)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	want := make(map[string]Agent, len(agents))
	for _, a := range agents {
		name, ok := askToolName(a.ID)
		if !ok {
			s.log.Warn("mcp: agent id cannot name a tool; skipped", "agent", a.ID)
			continue
		}
		if _, dup := want[name]; dup {
			s.log.Warn("mcp: agent listed twice; keeping the first", "agent", a.ID)
			continue
		}
		want[name] = a
	}
	var gone []string
	for name := range s.asks {
		if _, ok := want[name]; !ok {
			gone = append(gone, name)
		}
	}
	if len(gone) > 0 {
		s.mcp.RemoveTools(gone...)
	}
	for name, a := range want {
		if old, ok := s.asks[name]; ok && old == a {
			continue
		}
		mcp.AddTool(s.mcp, askTool(name, a), s.askHandler(a))
	}
	s.asks = want
	return nil
}

// Serve serves one MCP client over t until the client disconnects (nil),
// ctx is cancelled (ctx.Err()) or Close is called (ErrClosed).
func (s *Server) Serve(ctx context.Context, t mcp.Transport) error {
	if s.ctx.Err() != nil {
		return ErrClosed
	}
	ss, err := s.mcp.Connect(ctx, t, nil)
	if err != nil {
		return fmt.Errorf("mcpserver: connect: %w", err)
	}
	done := make(chan error, 1)
	go func() { done <- ss.Wait() }()
	select {
	case err = <-done:
		if s.ctx.Err() != nil {
			return ErrClosed
		}
		if err != nil && !errors.Is(err, io.EOF) && !errors.Is(err, io.ErrClosedPipe) && !errors.Is(err, mcp.ErrConnectionClosed) {
			return fmt.Errorf("mcpserver: session: %w", err)
		}
		return nil
	case <-ctx.Done():
		ss.Close()
		<-done
		return ctx.Err()
	case <-s.ctx.Done():
		ss.Close()
		<-done
		return ErrClosed
	}
}

// ServeStdio serves one MCP client speaking newline-delimited JSON-RPC on
// in and out (a process's stdin and stdout), as Serve does. When it
// returns, in and out are closed if they are io.Closers, which also ends
// the goroutine reading in.
func (s *Server) ServeStdio(ctx context.Context, in io.Reader, out io.Writer) error {
	return s.Serve(ctx, &mcp.IOTransport{Reader: readCloser(in), Writer: writeCloser(out)})
}

// Close ends every connected MCP session (stdio and HTTP) and cancels the
// backend calls tools are making. Serving afterwards fails with ErrClosed.
func (s *Server) Close() error {
	s.cancel()
	var errs []error
	for ss := range s.mcp.Sessions() {
		if err := ss.Close(); err != nil && !errors.Is(err, mcp.ErrConnectionClosed) {
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}

// scope bounds a backend call by the tool call's ctx and by Close.
func (s *Server) scope(ctx context.Context) (context.Context, context.CancelFunc) {
	ctx, cancel := context.WithCancel(ctx)
	stop := context.AfterFunc(s.ctx, cancel)
	return ctx, func() { stop(); cancel() }
}

func askToolName(agentID string) (string, bool) {
	if agentID == "" || len(agentID) > 64 {
		return "", false
	}
	for _, r := range agentID {
		if !(r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || r == '_' || r == '-' || r == '.') {
			return "", false
		}
	}
	return askPrefix + agentID, true
}

// Tool inputs.

type askIn struct {
	Message string `json:"message"`
	Session string `json:"session"`
}

type listSessionsIn struct {
	Agent string `json:"agent"`
	Limit int    `json:"limit"`
}

type readLogIn struct {
	Session string `json:"session"`
	After   int64  `json:"after"`
	Limit   int    `json:"limit"`
}

// Tool outputs (structured content; the text content is the same JSON).

type agentOut struct {
	ID          string `json:"id"`
	Name        string `json:"name,omitempty"`
	Description string `json:"description,omitempty"`
	Tool        string `json:"tool,omitempty"` // the ask tool, if the id can name one
}

type agentsOut struct {
	Agents []agentOut `json:"agents"`
}

type sessionOut struct {
	Address   string    `json:"address"`
	State     string    `json:"state"`
	UpdatedAt time.Time `json:"updated_at"`
	LastSeq   int64     `json:"last_seq"`
}

type sessionsOut struct {
	Sessions []sessionOut `json:"sessions"`
}

type eventOut struct {
	Seq  int64           `json:"seq"`
	Turn int64           `json:"turn,omitempty"`
	Kind string          `json:"kind"`
	Time time.Time       `json:"time"`
	Data json.RawMessage `json:"data,omitempty"`
}

type logOut struct {
	Session string     `json:"session"`
	Events  []eventOut `json:"events"`
	// Next is the cursor to pass as after to read on: the last event's
	// sequence number, or after itself when there were no events.
	Next int64 `json:"next"`
	// More reports that further events were already there.
	More bool `json:"more"`
}

func askTool(name string, a Agent) *mcp.Tool {
	who := a.ID
	if a.Name != "" && a.Name != a.ID {
		who = fmt.Sprintf("%s (%s)", a.Name, a.ID)
	}
	desc := fmt.Sprintf("Send a message to the agent %s and get its reply.", who)
	if d := strings.TrimSpace(a.Description); d != "" {
		desc += " " + d
	}
	title := a.Name
	if title == "" {
		title = a.ID
	}
	return &mcp.Tool{
		Name:        name,
		Title:       "Ask " + title,
		Description: desc,
		InputSchema: object(map[string]*jsonschema.Schema{
			"message": {Type: "string", MinLength: jsonschema.Ptr(1), Description: "The message to send."},
			"session": {Type: "string", MinLength: jsonschema.Ptr(1), MaxLength: jsonschema.Ptr(maxKeyLen), Default: json.RawMessage(`"` + DefaultSessionKey + `"`),
				Description: "The session key: messages with the same key continue one conversation with the agent."},
		}, "message"),
		Annotations: &mcp.ToolAnnotations{Title: "Ask " + title},
	}
}

func (s *Server) addStaticTools() {
	closed := jsonschema.Ptr(false)
	mcp.AddTool(s.mcp, &mcp.Tool{
		Name:         "list_agents",
		Title:        "List agents",
		Description:  "List the agents of this agentd, with the ask tool that talks to each.",
		InputSchema:  object(nil),
		OutputSchema: agentsSchema(),
		Annotations:  &mcp.ToolAnnotations{Title: "List agents", ReadOnlyHint: true, IdempotentHint: true, OpenWorldHint: closed},
	}, s.listAgents)
	mcp.AddTool(s.mcp, &mcp.Tool{
		Name:        "list_sessions",
		Title:       "List sessions",
		Description: "List sessions (conversations), most recently updated first, with their address (<agent>/<key>), state and last event's sequence number.",
		InputSchema: object(map[string]*jsonschema.Schema{
			"agent": {Type: "string", Description: "Only this agent's sessions; all agents when left out."},
			"limit": {Type: "integer", Minimum: jsonschema.Ptr(1.0), Maximum: jsonschema.Ptr(float64(maxListLimit)), Default: json.RawMessage(fmt.Sprint(defaultListLimit)),
				Description: "The most sessions to return."},
		}),
		OutputSchema: sessionsSchema(),
		Annotations:  &mcp.ToolAnnotations{Title: "List sessions", ReadOnlyHint: true, IdempotentHint: true, OpenWorldHint: closed},
	}, s.listSessions)
	mcp.AddTool(s.mcp, &mcp.Tool{
		Name:  "read_session_log",
		Title: "Read a session's log",
		Description: "Read a session's event log in order: inputs, thoughts, text, tool calls and results, model calls and turn ends, each with its sequence number, kind, time and data. " +
			"Pass the returned next as after to read on.",
		InputSchema: object(map[string]*jsonschema.Schema{
			"session": {Type: "string", MinLength: jsonschema.Ptr(3), Description: "The session's address, <agent>/<key>, e.g. assistant/mcp."},
			"after":   {Type: "integer", Minimum: jsonschema.Ptr(0.0), Default: json.RawMessage("0"), Description: "Return events with a sequence number greater than this."},
			"limit": {Type: "integer", Minimum: jsonschema.Ptr(1.0), Maximum: jsonschema.Ptr(float64(maxLogLimit)), Default: json.RawMessage(fmt.Sprint(defaultLogLimit)),
				Description: "The most events to return."},
		}, "session"),
		OutputSchema: logSchema(),
		Annotations:  &mcp.ToolAnnotations{Title: "Read a session's log", ReadOnlyHint: true, IdempotentHint: true, OpenWorldHint: closed},
	}, s.readLog)
}

func (s *Server) askHandler(a Agent) mcp.ToolHandlerFor[askIn, any] {
	return func(ctx context.Context, _ *mcp.CallToolRequest, in askIn) (*mcp.CallToolResult, any, error) {
		if strings.TrimSpace(in.Message) == "" {
			return nil, nil, errors.New("message must not be empty")
		}
		key := in.Session
		if key == "" {
			key = DefaultSessionKey
		}
		if err := checkKey(key); err != nil {
			return nil, nil, err
		}
		ctx, stop := s.scope(ctx)
		defer stop()
		reply, status, err := s.b.Ask(ctx, a.ID, key, in.Message)
		switch {
		case status == event.StatusDone:
			return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: reply}}}, nil, nil
		case status == "" && err != nil:
			return nil, nil, fmt.Errorf("asking agent %s failed: %w", a.ID, err)
		case status == "":
			return nil, nil, fmt.Errorf("asking agent %s failed: the turn ended without a status", a.ID)
		}
		msg := fmt.Sprintf("the turn ended with status %s", status)
		if err != nil {
			msg += ": " + err.Error()
		}
		if reply != "" {
			msg += "\n\nreply so far:\n" + reply
		}
		return nil, nil, errors.New(msg)
	}
}

func (s *Server) listAgents(ctx context.Context, _ *mcp.CallToolRequest, _ struct{}) (*mcp.CallToolResult, *agentsOut, error) {
	ctx, stop := s.scope(ctx)
	defer stop()
	agents, err := s.b.Agents(ctx)
	if err != nil {
		return nil, nil, fmt.Errorf("listing agents failed: %w", err)
	}
	out := &agentsOut{Agents: make([]agentOut, 0, len(agents))}
	for _, a := range agents {
		tool, _ := askToolName(a.ID)
		out.Agents = append(out.Agents, agentOut{ID: a.ID, Name: a.Name, Description: a.Description, Tool: tool})
	}
	return nil, out, nil
}

func (s *Server) listSessions(ctx context.Context, _ *mcp.CallToolRequest, in listSessionsIn) (*mcp.CallToolResult, *sessionsOut, error) {
	limit := in.Limit
	if limit == 0 {
		limit = defaultListLimit
	}
	if limit < 1 || limit > maxListLimit {
		return nil, nil, fmt.Errorf("limit must be between 1 and %d, got %d", maxListLimit, in.Limit)
	}
	ctx, stop := s.scope(ctx)
	defer stop()
	sessions, err := s.b.Sessions(ctx, in.Agent, limit)
	if err != nil {
		return nil, nil, fmt.Errorf("listing sessions failed: %w", err)
	}
	out := &sessionsOut{Sessions: make([]sessionOut, 0, len(sessions))}
	for _, ss := range sessions {
		out.Sessions = append(out.Sessions, sessionOut(ss))
	}
	return nil, out, nil
}

func (s *Server) readLog(ctx context.Context, _ *mcp.CallToolRequest, in readLogIn) (*mcp.CallToolResult, *logOut, error) {
	if err := checkAddress(in.Session); err != nil {
		return nil, nil, err
	}
	limit := in.Limit
	if limit == 0 {
		limit = defaultLogLimit
	}
	if limit < 1 || limit > maxLogLimit {
		return nil, nil, fmt.Errorf("limit must be between 1 and %d, got %d", maxLogLimit, in.Limit)
	}
	if in.After < 0 {
		return nil, nil, fmt.Errorf("after must not be negative, got %d", in.After)
	}
	ctx, stop := s.scope(ctx)
	defer stop()
	// One more than asked for tells whether there is more.
	evs, err := s.b.Events(ctx, in.Session, in.After, limit+1)
	if err != nil {
		return nil, nil, fmt.Errorf("reading session %s failed: %w", in.Session, err)
	}
	out := &logOut{Session: in.Session, Next: in.After}
	if len(evs) > limit {
		evs, out.More = evs[:limit], true
	}
	out.Events = make([]eventOut, 0, len(evs))
	for _, e := range evs {
		data := e.Data
		if len(data) > 0 && !json.Valid(data) {
			// Keep a damaged payload readable rather than failing the page.
			data, _ = json.Marshal(string(data))
		}
		out.Events = append(out.Events, eventOut{Seq: e.Seq, Turn: e.Turn, Kind: string(e.Kind), Time: e.Time, Data: data})
		out.Next = e.Seq
	}
	return nil, out, nil
}

// checkKey reports whether key can name a session of an agent.
func checkKey(key string) error {
	switch {
	case key == "":
		return errors.New("session key must not be empty")
	case len(key) > maxKeyLen:
		return fmt.Errorf("session key must be at most %d bytes", maxKeyLen)
	case strings.Contains(key, "/"):
		return fmt.Errorf("session key %q must not contain \"/\"", key)
	case hasControl(key):
		return errors.New("session key must not contain control characters")
	}
	return nil
}

// checkAddress reports whether addr has the form <agent>/<key>.
func checkAddress(addr string) error {
	agentID, key, ok := strings.Cut(addr, "/")
	if !ok || agentID == "" || key == "" || strings.Contains(key, "/") || hasControl(addr) {
		return fmt.Errorf("session %q must be an address <agent>/<key>, e.g. assistant/%s", addr, DefaultSessionKey)
	}
	if len(key) > maxKeyLen {
		return fmt.Errorf("session key must be at most %d bytes", maxKeyLen)
	}
	return nil
}

func hasControl(s string) bool {
	for _, c := range s {
		if c < 0x20 || (c >= 0x7f && c <= 0x9f) {
			return true
		}
	}
	return false
}

// Schemas.

func object(props map[string]*jsonschema.Schema, required ...string) *jsonschema.Schema {
	if props == nil {
		props = map[string]*jsonschema.Schema{}
	}
	return &jsonschema.Schema{Type: "object", Properties: props, Required: required, AdditionalProperties: &jsonschema.Schema{Not: &jsonschema.Schema{}}}
}

func arrayOf(items *jsonschema.Schema) *jsonschema.Schema {
	return &jsonschema.Schema{Type: "array", Items: items}
}

func str() *jsonschema.Schema     { return &jsonschema.Schema{Type: "string"} }
func integer() *jsonschema.Schema { return &jsonschema.Schema{Type: "integer"} }
func when() *jsonschema.Schema    { return &jsonschema.Schema{Type: "string", Format: "date-time"} }

func agentsSchema() *jsonschema.Schema {
	return object(map[string]*jsonschema.Schema{
		"agents": arrayOf(object(map[string]*jsonschema.Schema{
			"id": str(), "name": str(), "description": str(), "tool": str(),
		}, "id")),
	}, "agents")
}

func sessionsSchema() *jsonschema.Schema {
	return object(map[string]*jsonschema.Schema{
		"sessions": arrayOf(object(map[string]*jsonschema.Schema{
			"address": str(), "state": str(), "updated_at": when(), "last_seq": integer(),
		}, "address", "state", "updated_at", "last_seq")),
	}, "sessions")
}

func logSchema() *jsonschema.Schema {
	return object(map[string]*jsonschema.Schema{
		"session": str(),
		"events": arrayOf(object(map[string]*jsonschema.Schema{
			"seq": integer(), "turn": integer(), "kind": str(), "time": when(),
			"data": {Description: "The event's payload; its shape depends on kind."},
		}, "seq", "kind", "time")),
		"next": integer(),
		"more": {Type: "boolean"},
	}, "session", "events", "next", "more")
}

// I/O helpers.

type nopReadCloser struct{ io.Reader }

func (nopReadCloser) Close() error { return nil }

type nopWriteCloser struct{ io.Writer }

func (nopWriteCloser) Close() error { return nil }

func readCloser(r io.Reader) io.ReadCloser {
	if rc, ok := r.(io.ReadCloser); ok {
		return rc
	}
	return nopReadCloser{r}
}

func writeCloser(w io.Writer) io.WriteCloser {
	if wc, ok := w.(io.WriteCloser); ok {
		return wc
	}
	return nopWriteCloser{w}
}

// minLevel passes on records at or above min; it keeps the MCP SDK's
// per-connection chatter out of agentd's log.
type minLevel struct {
	h   slog.Handler
	min slog.Level
}

func (m minLevel) Enabled(ctx context.Context, l slog.Level) bool {
	return l >= m.min && m.h.Enabled(ctx, l)
}
func (m minLevel) Handle(ctx context.Context, r slog.Record) error { return m.h.Handle(ctx, r) }
func (m minLevel) WithAttrs(as []slog.Attr) slog.Handler {
	return minLevel{h: m.h.WithAttrs(as), min: m.min}
}
func (m minLevel) WithGroup(name string) slog.Handler {
	return minLevel{h: m.h.WithGroup(name), min: m.min}
}
