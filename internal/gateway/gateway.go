// Package gateway serves agentd's HTTP API: on a unix socket in the data
// directory (ServeUnix; mode 0600: the file permission is the access
// control, as with docker.sock) and on TCP behind the token and the Host and
// Origin checks (ServeTCP, Protect). Its routes are
// one table, routeTable in routes.go, which says for each route its
// handler and who may call it over TCP; docs/api.md describes them for
// people and docs/openapi.yaml for programs, and tests hold both to the
// table. Errors are answered through one table too (errors.go).
package gateway

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"log/slog"
	"net/http"
	"time"

	"agentd/internal/agent"
	"agentd/internal/event"
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
	Permits    Permits
	Grants     Grants // the approvals' standing grants, GET and DELETE /v1/grants…
	MCP        MCPServers
	Keys       Keys
	Skills     Skills
	MCPHandler http.Handler // agentd as an MCP server (a handler as Stream is)
	History    History      // conversation search and working memory
	Memory     Memory       // agents' long-term memory

	// The extensions' parts; each may be nil.
	Commands Commands // slash commands in messages, GET /v1/commands
	Contexts Contexts // POST /v1/contexts/{type}/send, GET /v1/contexts
	Jobs     Jobs     // POST /v1/jobs/{name}/run
	JobRuns  JobRuns  // the jobs' run history, GET /v1/jobs…
	JobTimes JobTimes // the jobs' next fire times

	// Handlers built by the gateway's sub-packages, each served at the
	// routes of the table that name it (OpenAIRoutes for OpenAI); each may
	// be nil, and its routes are then not served.
	Stream  http.Handler // the WebSocket event stream
	OpenAI  http.Handler // the OpenAI-compatible API
	Console http.Handler // the web console's files (no data: they load before login)

	// The operator's parts; each may be nil.
	Ready      Readiness  // GET /readyz (nil: never ready)
	Metrics    Metrics    // GET /metrics
	Usage      Usage      // GET /v1/usage
	Nodes      Nodes      // GET /v1/nodes
	AgentFiles AgentFiles // PUT /v1/agents/{id} and the reload routes
	Extensions Extensions // /v1/extensions…

	// DynamicAgents are the agents made at run time: the list's
	// instances, the tree, start, contact and stop (nil: the list holds
	// the definitions alone and the other routes answer 501).
	DynamicAgents DynamicAgents

	// The chat connectors; each may be nil (no connector: the lists are
	// empty, a connector and its webhook are not found, a decision on a
	// reply or a pairing answers 501).
	Connectors Connectors // /v1/connectors…, POST /connectors/{name}/webhook
	Pairings   Pairings   // /v1/pairings…

	// The console's extension data; each may be nil.
	Widgets   Widgets   // GET /v1/widgets…
	Artifacts Artifacts // GET /v1/artifacts…
	Apps      Apps      // GET /apps/{name}/…

	// BodyBytesInFlight bounds the bytes of large request bodies received
	// at once (default DefaultBodyBytesInFlight), and BodyWait how long a
	// large request waits for its share before it is answered 503 busy
	// (default 30 s); see admission.
	BodyBytesInFlight int64
	BodyWait          time.Duration

	// HookFailRate and HookFailBurst limit failed webhook requests (a
	// wrong signature, a body over the limit) per client network, as
	// AuthOptions' FailRate and FailBurst do tokens (0: 10 per second,
	// bursts of 20).
	HookFailRate  float64
	HookFailBurst int
}

// Server is the HTTP API.
type Server struct {
	o         Options
	mux       *http.ServeMux
	routes    map[string]*route // the routes of the table served, by pattern
	log       *slog.Logger
	load      *admission
	started   time.Time
	listening listening // the addresses ServeUnix and ServeTCP serve
	// openAIPaths matches the paths of OpenAIRoutes whatever the method;
	// nil without Options.OpenAI.
	openAIPaths *http.ServeMux
	// hookLimit limits failed webhook requests per client (hooks.go).
	hookLimit *limiter
}

// New returns the API handler.
func New(o *Options) *Server {
	s := &Server{o: *o, mux: http.NewServeMux(), log: o.Logger,
		load: newAdmission(o.BodyBytesInFlight, o.BodyWait), started: time.Now(), hookLimit: newLimiter(o.HookFailRate, o.HookFailBurst)}
	if s.log == nil {
		s.log = slog.New(slog.DiscardHandler)
	}
	s.handle()
	s.shapeOpenAI()
	return s
}

// MaxBody bounds a request body, but for a message's.
const MaxBody = 1 << 20

// MaxMessageBody bounds the body of a message, which may carry images
// (base64, at most 5 MiB each): the routes of the table whose message is
// set.
const MaxMessageBody = 16 << 20

// bodyLimit returns the body limit of r: MaxMessageBody for a message,
// general for everything else.
func (s *Server) bodyLimit(r *http.Request, general int64) int64 {
	if rt := s.route(r); rt != nil && rt.message {
		return MaxMessageBody
	}
	return general
}

func (s *Server) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	limit := s.bodyLimit(r, MaxBody)
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
		err := ErrNotFound
		if rec.status == http.StatusMethodNotAllowed {
			err = ErrMethodNotAllowed
		}
		s.answer(w, r, s.describe(err))
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

func (s *Server) healthz(w http.ResponseWriter, r *http.Request) {
	writeJSON(w, 200, map[string]bool{"ok": true})
}

func (s *Server) version(w http.ResponseWriter, r *http.Request) {
	writeJSON(w, 200, map[string]string{"version": s.o.Version})
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

// decode reads a request body holding one JSON object into v, answering
// the request itself (and returning false) when it cannot.
func (s *Server) decode(w http.ResponseWriter, r *http.Request, v any) bool {
	dec := json.NewDecoder(r.Body)
	dec.DisallowUnknownFields()
	if err := dec.Decode(v); err != nil {
		var tooBig *http.MaxBytesError
		if errors.As(err, &tooBig) {
			s.fail(w, say(errTooLarge, "body larger than %d bytes", tooBig.Limit))
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
