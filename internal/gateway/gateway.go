// Package gateway serves agentd's HTTP API. The same handlers are served on
// a unix socket in the data directory (ServeUnix; mode 0600: the file
// permission is the access control, as with docker.sock) and on TCP behind
// the token and the Host and Origin checks (ServeTCP).
//
// Routes (JSON unless noted):
//
//	GET  /healthz
//	GET  /v1/version
//	GET  /v1/agents
//	GET  /v1/sessions?agent=A&state=S&limit=N
//	GET  /v1/sessions/{agent}/{key}
//	PATCH /v1/sessions/{agent}/{key}           {title}: name the session
//	GET  /v1/sessions/{agent}/{key}/events?after=SEQ&limit=N&wait=DURATION   (long-poll)
//	POST /v1/sessions/{agent}/{key}/messages   {text, idempotency_key, system, silent, origin, reopen}
//	     ?wait=true: the reply; ?stream=true: the turn's events as JSON lines
//	POST /v1/sessions/{agent}/{key}/reset
//	POST /v1/sessions/{agent}/{key}/cancel
//	POST /v1/sessions/{agent}/{key}/close
//	POST /v1/sessions/{agent}/{key}/reopen
//	GET  /v1/turns/{id}?wait=DURATION
package gateway

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"

	"agentd/internal/agent"
	"agentd/internal/event"
	"agentd/internal/model"
	"agentd/internal/runtime"
	"agentd/internal/store"
)

// Runtime is what the gateway asks of the kernel.
type Runtime interface {
	Submit(ctx context.Context, in runtime.Input) (runtime.Receipt, error)
	Send(ctx context.Context, in runtime.Input) (runtime.Receipt, event.TurnEndData, error)
	Stream(ctx context.Context, in runtime.Input, fn func(event.Event) error) (runtime.Receipt, event.TurnEndData, error)
	Wait(ctx context.Context, turn int64) (event.TurnEndData, error)
	Reset(ctx context.Context, addr, reason string) (runtime.Receipt, error)
	Cancel(ctx context.Context, addr string) error
	CloseSession(ctx context.Context, addr string) error
	Reopen(ctx context.Context, addr string) (bool, error)
	Events(ctx context.Context, addr string, after int64, limit int) (store.Session, []event.Event, error)
	Bus() *event.Bus
}

// Sessions lists sessions.
type Sessions interface {
	Sessions(ctx context.Context, f store.SessionFilter) ([]store.Session, error)
}

// Agents lists agent definitions.
type Agents interface {
	List() []*agent.Definition
}

// Options configure a Server.
type Options struct {
	Runtime  Runtime
	Sessions Sessions
	Agents   Agents
	Version  string
	Logger   *slog.Logger

	// The tool layer; each may be nil.
	Lifecycle  Lifecycle
	Approvals  Approvals
	MCP        MCPServers
	Keys       Keys
	Skills     Skills
	MCPHandler http.Handler // agentd as an MCP server, served at /mcp
	History    History      // conversation search and working memory
	Memory     Memory       // agents' long-term memory

	// Handlers built by the gateway's sub-packages; each may be nil.
	Stream  http.Handler // the WebSocket event stream, at GET /v1/stream
	OpenAI  http.Handler // the OpenAI-compatible API: GET /v1/models, POST /v1/chat/completions
	Console http.Handler // the web console's files, at / (no data: they load before login)

	// The operator's parts; each may be nil.
	Ready      Readiness  // GET /readyz (nil: never ready)
	Metrics    Metrics    // GET /metrics
	Usage      Usage      // GET /v1/usage
	AgentFiles AgentFiles // PUT /v1/agents/{id} and the reload routes

	// BodyBytesInFlight bounds the bytes of large request bodies received
	// at once (default DefaultBodyBytesInFlight), and BodyWait how long a
	// large request waits for its share before it is answered 503 busy
	// (default 30 s); see admission.
	BodyBytesInFlight int64
	BodyWait          time.Duration
}

// Server is the HTTP API.
type Server struct {
	o         Options
	mux       *routeMux
	log       *slog.Logger
	load      *admission
	started   time.Time
	listening listening // the addresses ServeUnix and ServeTCP serve
	// openAIPaths matches the paths of OpenAIRoutes whatever the method;
	// nil without Options.OpenAI.
	openAIPaths *http.ServeMux
}

// routeMux is a ServeMux that remembers its patterns, so the OpenAPI
// description can be checked against what is served.
type routeMux struct {
	*http.ServeMux
	patterns []string
}

func (m *routeMux) HandleFunc(pattern string, h func(http.ResponseWriter, *http.Request)) {
	m.patterns = append(m.patterns, pattern)
	m.ServeMux.HandleFunc(pattern, h)
}

func (m *routeMux) Handle(pattern string, h http.Handler) {
	m.patterns = append(m.patterns, pattern)
	m.ServeMux.Handle(pattern, h)
}

// Routes returns the patterns the API serves ("METHOD /path/{param}"), in
// the order they were registered.
func (s *Server) Routes() []string { return append([]string(nil), s.mux.patterns...) }

// New returns the API handler.
func New(o *Options) *Server {
	s := &Server{o: *o, mux: &routeMux{ServeMux: http.NewServeMux()}, log: o.Logger,
		load: newAdmission(o.BodyBytesInFlight, o.BodyWait), started: time.Now()}
	if s.log == nil {
		s.log = slog.New(slog.DiscardHandler)
	}
	m := s.mux
	m.HandleFunc("GET /healthz", func(w http.ResponseWriter, r *http.Request) { writeJSON(w, 200, map[string]bool{"ok": true}) })
	m.HandleFunc("GET /v1/version", func(w http.ResponseWriter, r *http.Request) {
		writeJSON(w, 200, map[string]string{"version": s.o.Version})
	})
	m.HandleFunc("GET /v1/agents", s.agents)
	m.HandleFunc("GET /v1/sessions", s.sessions)
	m.HandleFunc("GET /v1/sessions/{agent}/{key}", s.session)
	m.HandleFunc("PATCH /v1/sessions/{agent}/{key}", s.patchSession)
	m.HandleFunc("GET /v1/sessions/{agent}/{key}/events", s.events)
	m.HandleFunc("POST /v1/sessions/{agent}/{key}/messages", s.message)
	m.HandleFunc("POST /v1/sessions/{agent}/{key}/reset", s.reset)
	m.HandleFunc("POST /v1/sessions/{agent}/{key}/cancel", s.cancel)
	m.HandleFunc("POST /v1/sessions/{agent}/{key}/close", s.closeSession)
	m.HandleFunc("POST /v1/sessions/{agent}/{key}/reopen", s.reopen)
	m.HandleFunc("GET /v1/turns/{id}", s.turn)
	s.routeTools()
	s.routeMemory()
	s.routeLongTerm()
	s.routeOps()
	s.routeStatus()
	s.mount()
	return s
}

// MaxBody bounds a request body, but for a message's.
const MaxBody = 1 << 20

// MaxMessageBody bounds the body of a message, which may carry images
// (base64, at most 5 MiB each): POST /v1/sessions/{agent}/{key}/messages
// and POST /v1/chat/completions.
const MaxMessageBody = 16 << 20

// bodyLimit returns the body limit of r: MaxMessageBody for a message,
// general for everything else.
func bodyLimit(r *http.Request, general int64) int64 {
	if r.Method == http.MethodPost && (r.URL.Path == "/v1/chat/completions" ||
		strings.HasPrefix(r.URL.Path, "/v1/sessions/") && strings.HasSuffix(r.URL.Path, "/messages")) {
		return MaxMessageBody
	}
	return general
}

func (s *Server) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	limit := bodyLimit(r, MaxBody)
	r.Body = http.MaxBytesReader(w, r.Body, limit)
	release, err := s.load.admit(r, limit)
	if err != nil {
		if r.Context().Err() == nil { // else nobody is left to answer
			s.answer(w, r, s.describe(err))
		}
		return
	}
	defer release()
	if h, pattern := s.mux.Handler(r); pattern == "" {
		// No route: the mux answers 404 or 405 in plain text; say it as
		// every other error is said.
		rec := &statusRecorder{h: w.Header()}
		h.ServeHTTP(rec, r)
		code := "not_found"
		if rec.status == http.StatusMethodNotAllowed {
			code = "method_not_allowed"
		}
		s.answer(w, r, Failure{Status: rec.status, Body: Error{Error: strings.ToLower(http.StatusText(rec.status)), Code: code}})
		return
	}
	s.mux.ServeHTTP(w, r)
}

// statusRecorder keeps the status and headers a handler sets and drops its body.
type statusRecorder struct {
	h      http.Header
	status int
}

func (s *statusRecorder) Header() http.Header { return s.h }
func (s *statusRecorder) WriteHeader(c int) {
	if s.status == 0 {
		s.status = c
	}
}
func (s *statusRecorder) Write(b []byte) (int, error) {
	s.WriteHeader(200)
	return len(b), nil
}

// ServeUnix serves the API on a unix socket at path (mode 0600) until ctx
// is done. ready, if not nil, is called once the socket accepts.
func (s *Server) ServeUnix(ctx context.Context, path string, ready func()) error {
	if c, err := net.Dial("unix", path); err == nil {
		c.Close()
		return fmt.Errorf("gateway: %s: another agentd is serving it", path)
	}
	// A stale socket from a process that died; anything else at the path
	// is not ours to remove.
	if fi, err := os.Lstat(path); err == nil {
		if fi.Mode()&os.ModeSocket == 0 {
			return fmt.Errorf("gateway: %s exists and is not a socket", path)
		}
		os.Remove(path)
	}
	// The data directory is 0700, so nobody else can reach the socket in
	// the moment between bind and chmod.
	ln, err := net.Listen("unix", path)
	if err != nil {
		return fmt.Errorf("gateway: listen: %w", err)
	}
	if err := os.Chmod(path, 0o600); err != nil {
		ln.Close()
		return fmt.Errorf("gateway: socket mode: %w", err)
	}
	hs := &http.Server{Handler: s, ReadHeaderTimeout: 10 * time.Second, ErrorLog: slog.NewLogLogger(s.log.Handler(), slog.LevelWarn),
		// Requests end with ServeUnix (long polls would hold Shutdown).
		BaseContext: func(net.Listener) context.Context { return ctx }}
	defer os.Remove(path)
	s.listening.add("unix:" + path)
	defer s.listening.remove("unix:" + path)
	return serveUntil(ctx, hs, ln, ready)
}

// serveUntil serves ln with hs, calls ready (if not nil) once it accepts,
// and shuts hs down (5 s for requests in flight) when ctx is done.
func serveUntil(ctx context.Context, hs *http.Server, ln net.Listener, ready func()) error {
	done := make(chan error, 1)
	go func() { done <- hs.Serve(ln) }()
	if ready != nil {
		ready()
	}
	select {
	case err := <-done:
		return err
	case <-ctx.Done():
	}
	sctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	err := hs.Shutdown(sctx)
	<-done
	return err
}

// Error is the body of every error response.
type Error struct {
	Error string `json:"error"`
	Code  string `json:"code"`
}

func writeJSON(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	json.NewEncoder(w).Encode(v)
}

func addr(r *http.Request) string { return r.PathValue("agent") + "/" + r.PathValue("key") }

// Agent states in the list.
const (
	AgentReady   = "ready"   // a definition is in use
	AgentInvalid = "invalid" // its file does not load and never did: messages to it are refused
)

// AgentInfo is an agent as the API lists it.
type AgentInfo struct {
	ID       string `json:"id"`
	Name     string `json:"name"`
	Type     string `json:"type"`
	Provider string `json:"provider"`
	Model    string `json:"model"`
	File     string `json:"file,omitempty"`
	// Description is the agent's own description.
	Description string `json:"description,omitempty"`
	// State is AgentReady or AgentInvalid.
	State string `json:"state"`
	// Problems are what is wrong with the agent's file: why an invalid
	// agent does not load, or, for a ready one, why the file's newest
	// version does not (its last good definition stays in use).
	Problems []Problem `json:"problems,omitempty"`
	// ModelHint, for an agent on the built-in echo model, says how to
	// configure a real one.
	ModelHint string `json:"model_hint,omitempty"`
}

func (s *Server) agents(w http.ResponseWriter, r *http.Request) {
	defs := s.o.Agents.List()
	var errs map[string]error
	if s.o.AgentFiles != nil {
		errs = s.o.AgentFiles.Errors()
	}
	out := make([]AgentInfo, 0, len(defs)+len(errs))
	for _, d := range defs {
		a := AgentInfo{ID: d.ID, Name: d.Name, Type: d.Type, Provider: d.Model.Provider, Model: d.Model.Name, File: d.File,
			Description: d.Description, State: AgentReady}
		if d.Model.Provider == agent.ProviderEcho {
			a.ModelHint = agent.ModelHint()
			if d.File != "" {
				a.ModelHint = agent.ModelHintFor(agent.AgentsDir + "/" + filepath.Base(d.File))
			}
		}
		if err := errs[d.ID]; err != nil {
			a.Problems = problems(err, true)
			delete(errs, d.ID)
		}
		out = append(out, a)
	}
	for id, err := range errs {
		out = append(out, AgentInfo{ID: id, File: agentFile(id, err), State: AgentInvalid, Problems: problems(err, true)})
	}
	slices.SortFunc(out, func(a, b AgentInfo) int { return strings.Compare(a.ID, b.ID) })
	writeJSON(w, 200, out)
}

// agentFile is the file an agent's load error names, or its usual name.
func agentFile(id string, err error) string {
	var ce *agent.ConfigError
	if errors.As(err, &ce) && len(ce.Errors) > 0 && ce.Errors[0].File != "" {
		return ce.Errors[0].File
	}
	return agent.AgentsDir + "/" + id + ".yaml"
}

// SessionInfo is a session as the API shows it.
type SessionInfo struct {
	ID        int64     `json:"id"`
	Address   string    `json:"address"`
	Agent     string    `json:"agent"`
	Key       string    `json:"key"`
	State     string    `json:"state"`
	LastSeq   int64     `json:"last_seq"`
	CreatedAt time.Time `json:"created_at"`
	UpdatedAt time.Time `json:"updated_at"`
	// Title names the conversation for people: its first message's first
	// line, a few words a model wrote, or a person's name for it (TitleBy:
	// input, model or user). Absent until the first message.
	Title   string `json:"title,omitempty"`
	TitleBy string `json:"title_by,omitempty"`
}

func info(s store.Session) SessionInfo {
	return SessionInfo{ID: s.ID, Address: s.Address(), Agent: s.Agent, Key: s.Key, State: s.State, LastSeq: s.LastSeq, CreatedAt: s.CreatedAt, UpdatedAt: s.UpdatedAt,
		Title: s.Title, TitleBy: s.TitleBy}
}

func (s *Server) sessions(w http.ResponseWriter, r *http.Request) {
	q := r.URL.Query()
	state, err := enumParam(q, "state", store.States())
	if err != nil {
		s.fail(w, err)
		return
	}
	f := store.SessionFilter{Agent: q.Get("agent"), State: state}
	if v := q.Get("limit"); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n < 0 {
			s.fail(w, badRequest("limit must be a non-negative integer"))
			return
		}
		f.Limit = n
	}
	list, err := s.o.Sessions.Sessions(r.Context(), f)
	if err != nil {
		s.fail(w, err)
		return
	}
	out := make([]SessionInfo, 0, len(list))
	for _, x := range list {
		out = append(out, info(x))
	}
	writeJSON(w, 200, out)
}

func (s *Server) session(w http.ResponseWriter, r *http.Request) {
	sess, _, err := s.o.Runtime.Events(r.Context(), addr(r), 0, 1)
	if err != nil {
		s.fail(w, err)
		return
	}
	writeJSON(w, 200, info(sess))
}

// EventsPage is a page of a session's log.
type EventsPage struct {
	Session SessionInfo   `json:"session"`
	Events  []event.Event `json:"events"`
	// Next is the sequence number to pass as after= for the next page.
	Next int64 `json:"next"`
}

func (s *Server) events(w http.ResponseWriter, r *http.Request) {
	q := r.URL.Query()
	after, err := intParam(q.Get("after"), 0)
	if err != nil {
		s.fail(w, badRequest("after: %v", err))
		return
	}
	limit, err := intParam(q.Get("limit"), 1000)
	if err != nil || limit <= 0 || limit > 10000 {
		s.fail(w, badRequest("limit must be an integer from 1 to 10000"))
		return
	}
	wait, err := durParam(q.Get("wait"))
	if err != nil {
		s.fail(w, err)
		return
	}
	a := addr(r)
	sess, evs, err := s.o.Runtime.Events(r.Context(), a, after, int(limit))
	if err != nil {
		s.fail(w, err)
		return
	}
	if len(evs) == 0 && wait > 0 {
		// Long-poll: wait for the next logged event of this session.
		sub := s.o.Runtime.Bus().Subscribe(sess.ID, 64)
		defer sub.Close()
		// Re-read after subscribing so nothing falls between the two.
		if sess, evs, err = s.o.Runtime.Events(r.Context(), a, after, int(limit)); err != nil {
			s.fail(w, err)
			return
		}
		t := time.NewTimer(wait)
		defer t.Stop()
	wait:
		for len(evs) == 0 {
			select {
			case e, ok := <-sub.C:
				if !ok || e.Seq > after {
					if sess, evs, err = s.o.Runtime.Events(r.Context(), a, after, int(limit)); err != nil {
						s.fail(w, err)
						return
					}
					if !ok {
						break wait
					}
				}
			case <-t.C:
				break wait
			case <-r.Context().Done():
				return
			}
		}
	}
	next := after
	if len(evs) > 0 {
		next = evs[len(evs)-1].Seq
	}
	if evs == nil {
		evs = []event.Event{}
	}
	writeJSON(w, 200, EventsPage{Session: info(sess), Events: evs, Next: next})
}

// MessageRequest is the body of POST .../messages.
type MessageRequest struct {
	Text           string `json:"text"`
	IdempotencyKey string `json:"idempotency_key,omitempty"`
	System         bool   `json:"system,omitempty"`
	Silent         bool   `json:"silent,omitempty"`
	Origin         string `json:"origin,omitempty"`
	Source         string `json:"source,omitempty"`
	// Options are the message lifecycle's options: channelId, context,
	// actions, postProcess, toolArgs.
	Options json.RawMessage `json:"options,omitempty"`
	// Images are attached images (see runtime.Input.Images).
	Images []MessageImage `json:"images,omitempty"`
	// Reopen reopens the session first if it is closed.
	Reopen bool `json:"reopen,omitempty"`
}

// MessageImage is an image of a MessageRequest.
type MessageImage struct {
	MIMEType string `json:"mime_type"` // image/png, image/jpeg, image/gif or image/webp
	Data     []byte `json:"data"`      // standard base64 in JSON
}

// MessageResponse answers POST .../messages.
type MessageResponse struct {
	runtime.Receipt
	End *event.TurnEndData `json:"end,omitempty"` // with wait=true
}

func (s *Server) message(w http.ResponseWriter, r *http.Request) {
	var req MessageRequest
	if !s.decode(w, r, &req) {
		return
	}
	src := req.Source
	if src == "" {
		src = "api"
	}
	in := runtime.Input{Session: addr(r), Text: req.Text, Source: src, IdempotencyKey: req.IdempotencyKey,
		System: req.System, Silent: req.Silent, Origin: req.Origin, Options: req.Options, Reopen: req.Reopen}
	for _, img := range req.Images {
		in.Images = append(in.Images, model.Image{MIMEType: img.MIMEType, Data: img.Data})
	}
	q := r.URL.Query()
	stream, err := boolParam(q, "stream")
	if err != nil {
		s.fail(w, err)
		return
	}
	wait, err := boolParam(q, "wait")
	if err != nil {
		s.fail(w, err)
		return
	}
	switch {
	case stream:
		s.stream(w, r, in)
	case wait:
		rc, end, err := s.o.Runtime.Send(r.Context(), in)
		if err != nil {
			s.fail(w, err)
			return
		}
		writeJSON(w, 200, MessageResponse{Receipt: rc, End: &end})
	default:
		rc, err := s.o.Runtime.Submit(r.Context(), in)
		if err != nil {
			s.fail(w, err)
			return
		}
		writeJSON(w, 202, MessageResponse{Receipt: rc})
	}
}

// StreamLine is one line of a streamed turn: events as they happen, then
// a last line with the receipt and the end (or an error).
type StreamLine struct {
	Receipt *runtime.Receipt   `json:"receipt,omitempty"`
	Event   *event.Event       `json:"event,omitempty"`
	End     *event.TurnEndData `json:"end,omitempty"`
	Error   *Error             `json:"error,omitempty"`
	// Status, with Error, is the HTTP status the error has as the answer
	// to a request (the stream began with 200), and RetryAfter, when not
	// 0, the seconds to wait before sending again (its Retry-After).
	Status     int `json:"status,omitempty"`
	RetryAfter int `json:"retry_after,omitempty"`
}

// decode reads a request body holding one JSON object into v, answering
// the request itself (and returning false) when it cannot.
func (s *Server) decode(w http.ResponseWriter, r *http.Request, v any) bool {
	dec := json.NewDecoder(r.Body)
	dec.DisallowUnknownFields()
	if err := dec.Decode(v); err != nil {
		var tooBig *http.MaxBytesError
		if errors.As(err, &tooBig) {
			writeJSON(w, http.StatusRequestEntityTooLarge, Error{Error: fmt.Sprintf("body larger than %d bytes", tooBig.Limit), Code: "too_large"})
			return false
		}
		s.fail(w, badRequest("body: %v", err))
		return false
	}
	if _, err := dec.Token(); err != io.EOF {
		s.fail(w, badRequest("body: want one JSON object"))
		return false
	}
	return true
}

func (s *Server) stream(w http.ResponseWriter, r *http.Request, in runtime.Input) {
	fl, _ := w.(http.Flusher)
	enc := json.NewEncoder(w)
	started := false
	start := func() {
		if !started {
			started = true
			w.Header().Set("Content-Type", "application/x-ndjson")
			w.WriteHeader(200)
		}
	}
	rc, end, err := s.o.Runtime.Stream(r.Context(), in, func(e event.Event) error {
		start()
		if err := enc.Encode(StreamLine{Event: &e}); err != nil {
			return err
		}
		if fl != nil {
			fl.Flush()
		}
		return nil
	})
	if err != nil && !started {
		s.fail(w, err)
		return
	}
	start()
	if err != nil {
		f := s.describe(err)
		enc.Encode(StreamLine{Error: &f.Body, Status: f.Status, RetryAfter: retrySeconds(f.RetryAfter)})
		return
	}
	enc.Encode(StreamLine{Receipt: &rc, End: &end})
}

func (s *Server) reset(w http.ResponseWriter, r *http.Request) {
	rc, err := s.o.Runtime.Reset(r.Context(), addr(r), r.URL.Query().Get("reason"))
	if err != nil {
		s.fail(w, err)
		return
	}
	writeJSON(w, 200, rc)
}

func (s *Server) cancel(w http.ResponseWriter, r *http.Request) {
	if err := s.o.Runtime.Cancel(r.Context(), addr(r)); err != nil {
		s.fail(w, err)
		return
	}
	writeJSON(w, 200, map[string]bool{"cancelled": true})
}

func (s *Server) closeSession(w http.ResponseWriter, r *http.Request) {
	if err := s.o.Runtime.CloseSession(r.Context(), addr(r)); err != nil {
		s.fail(w, err)
		return
	}
	writeJSON(w, 200, map[string]bool{"closed": true})
}

// ReopenResponse answers POST .../reopen.
type ReopenResponse struct {
	// Reopened is false when the session was not closed (nothing changed).
	Reopened bool `json:"reopened"`
}

func (s *Server) reopen(w http.ResponseWriter, r *http.Request) {
	reopened, err := s.o.Runtime.Reopen(r.Context(), addr(r))
	if err != nil {
		s.fail(w, err)
		return
	}
	writeJSON(w, 200, ReopenResponse{Reopened: reopened})
}

func (s *Server) turn(w http.ResponseWriter, r *http.Request) {
	id, err := strconv.ParseInt(r.PathValue("id"), 10, 64)
	if err != nil || id <= 0 {
		s.fail(w, badRequest("turn id must be a positive integer"))
		return
	}
	wait, err := durParam(r.URL.Query().Get("wait"))
	if err != nil {
		s.fail(w, err)
		return
	}
	ctx := r.Context()
	if wait > 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, wait)
		defer cancel()
	} else {
		var cancel context.CancelFunc
		ctx, cancel = context.WithDeadline(ctx, time.Time{}) // report, do not wait
		defer cancel()
	}
	end, err := s.o.Runtime.Wait(ctx, id)
	if errors.Is(err, store.ErrNotFound) {
		err = notFound("turn %d", id)
	}
	if errors.Is(err, context.DeadlineExceeded) {
		writeJSON(w, 200, map[string]any{"turn": id, "done": false})
		return
	}
	if err != nil {
		s.fail(w, err)
		return
	}
	writeJSON(w, 200, map[string]any{"turn": id, "done": true, "end": end})
}

func intParam(v string, def int64) (int64, error) {
	if v == "" {
		return def, nil
	}
	n, err := strconv.ParseInt(v, 10, 64)
	if err != nil || n < 0 {
		return 0, fmt.Errorf("want a non-negative integer, got %q", v)
	}
	return n, nil
}

// enumParam returns the query parameter name, which is "" or one of
// valid; any other value is a bad request that lists them.
func enumParam(q url.Values, name string, valid []string) (string, error) {
	v := q.Get(name)
	if v != "" && !slices.Contains(valid, v) {
		return "", badRequest("%s: %.100q is not one of %s", name, v, strings.Join(valid, ", "))
	}
	return v, nil
}

// boolParam returns the query parameter name: true for true or 1, false
// for false, 0 or none; any other value is a bad request.
func boolParam(q url.Values, name string) (bool, error) {
	switch v := q.Get(name); v {
	case "true", "1":
		return true, nil
	case "", "false", "0":
		return false, nil
	default:
		return false, badRequest("%s: want true or false, got %.100q", name, v)
	}
}

func durParam(v string) (time.Duration, error) {
	if v == "" {
		return 0, nil
	}
	d, err := time.ParseDuration(v)
	if err != nil || d < 0 || d > 10*time.Minute {
		return 0, badRequest("wait must be a duration up to 10m, such as 30s")
	}
	return d, nil
}
