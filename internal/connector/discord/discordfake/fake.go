// Package discordfake is a fake Discord for tests: the gateway WebSocket
// (HELLO, heartbeats, IDENTIFY, READY, RESUME with replay, RECONNECT,
// INVALID_SESSION, close codes) and the REST API agentd uses (create with
// nonce + enforce_nonce, edit, typing, channel messages after an id,
// /gateway/bot), with rate-limit buckets and scripted faults. It speaks the
// wire as Discord documents it:
//   - gateway: https://discord.com/developers/docs/events/gateway and
//     https://discord.com/developers/docs/topics/opcodes-and-status-codes
//     (read through https://discord.js.org/docs/packages/discord-api-types/main/GatewayOpcodes:Enum)
//   - messages: https://discord.com/developers/docs/resources/message
//     (read through https://discord.js.org/docs/packages/discord-api-types/main/RESTPostAPIChannelMessageJSONBody:Interface:
//     "enforce_nonce: if true and nonce is present, it will be checked for
//     uniqueness in the past few minutes")
//   - rate limits: https://docs.discord.com/developers/topics/rate-limits
//     and https://support-dev.discord.com/hc/en-us/articles/6223003921559
package discordfake

import (
	"context"
	"net"
	"net/http"
	"strings"
	"sync"
	"time"
)

// Options configure a Server. The zero value is a bot whose app has the
// Message Content intent granted.
type Options struct {
	Token   string // the bot token the fake accepts; default "fake-discord-token"
	BotID   string // the bot's user id; default "1000000000000000001"
	BotName string // the bot's username; default "agentd-bot"
	APIPath string // where the REST API is served; default "/api/v10"
	// NoMessageContent: the app's Message Content intent is not granted in
	// the Developer Portal: an IDENTIFY asking for it is closed with 4014.
	NoMessageContent bool
	// HeartbeatInterval is HELLO's heartbeat_interval; default 41.25 s.
	HeartbeatInterval time.Duration
	// BucketLimit requests per BucketWindow per route and channel; default
	// 5 per 5 s (Discord's create message bucket).
	BucketLimit  int
	BucketWindow time.Duration
	// GlobalLimit requests a second per bot; default 50.
	GlobalLimit int
}

// Server is a fake Discord. Its methods are safe from any goroutine.
type Server struct {
	opts Options
	w    *world
	mux  *http.ServeMux

	// dmu orders dispatches: held while one is numbered and written, so
	// a connection gets them in their order. Lock order: dmu → mu → w.mu.
	dmu      sync.Mutex
	mu       sync.Mutex // guards what follows; never held across a write
	base     string     // http://host:port, once known
	sess     *session   // the bot's current gateway session
	conns    map[*conn]struct{}
	acking   bool
	faults   map[string][]Fault // route key → faults still to answer with
	calls    map[string]int     // route key → calls answered
	buckets  map[string]*bucket
	global   bucket
	identify int
	resumes  int
}

// Fault is a scripted answer to a REST call: a status (429 with
// RetryAfter, Global and Scope), or Body as Discord's error message.
type Fault struct {
	Status     int
	RetryAfter time.Duration
	Global     bool
	Scope      string // X-RateLimit-Scope: user (default), global, shared
	Code       int    // Discord's JSON error code
	Body       string // the error message
}

// New makes a fake Discord.
func New(opts *Options) *Server {
	o := Options{}
	if opts != nil {
		o = *opts
	}
	if o.Token == "" {
		o.Token = "fake-discord-token"
	}
	if o.BotID == "" {
		o.BotID = "1000000000000000001"
	}
	if o.BotName == "" {
		o.BotName = "agentd-bot"
	}
	if o.APIPath == "" {
		o.APIPath = "/api/v10"
	}
	if o.HeartbeatInterval <= 0 {
		o.HeartbeatInterval = 41250 * time.Millisecond
	}
	if o.BucketLimit <= 0 {
		o.BucketLimit = 5
	}
	if o.BucketWindow <= 0 {
		o.BucketWindow = 5 * time.Second
	}
	if o.GlobalLimit <= 0 {
		o.GlobalLimit = 50
	}
	s := &Server{
		opts: o, w: newWorld(), acking: true,
		conns: map[*conn]struct{}{}, faults: map[string][]Fault{},
		calls: map[string]int{}, buckets: map[string]*bucket{},
	}
	s.mux = http.NewServeMux()
	s.mux.HandleFunc("GET /gateway", s.serveGateway)
	s.mux.HandleFunc("GET /resume", s.serveGateway)
	s.mux.HandleFunc("GET /cdn/{channel}/{id}/{name}", s.serveCDN)
	api := strings.TrimRight(o.APIPath, "/")
	s.mux.HandleFunc("GET "+api+"/gateway/bot", s.rest(s.gatewayBot))
	s.mux.HandleFunc("POST "+api+"/channels/{channel}/messages", s.rest(s.createMessage))
	s.mux.HandleFunc("PATCH "+api+"/channels/{channel}/messages/{id}", s.rest(s.editMessage))
	s.mux.HandleFunc("GET "+api+"/channels/{channel}/messages", s.rest(s.listMessages))
	s.mux.HandleFunc("POST "+api+"/channels/{channel}/typing", s.rest(s.typing))
	return s
}

// ServeHTTP serves the gateway (/gateway, /resume) and the REST API.
func (s *Server) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	s.mu.Lock()
	if s.base == "" {
		s.base = "http://" + r.Host
	}
	s.mu.Unlock()
	s.mux.ServeHTTP(w, r)
}

// Start serves on addr ("" is 127.0.0.1:0) until ctx ends and returns the
// server's base URL; the REST API is at URL + APIPath.
func (s *Server) Start(ctx context.Context, addr string) (string, error) {
	if addr == "" {
		addr = "127.0.0.1:0"
	}
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return "", err
	}
	s.SetBase("http://" + ln.Addr().String())
	srv := &http.Server{Handler: s, ReadHeaderTimeout: 10 * time.Second}
	go func() {
		<-ctx.Done()
		s.Drop()
		_ = srv.Close()
	}()
	go srv.Serve(ln) //nolint:errcheck // ends with ErrServerClosed when ctx ends
	return "http://" + ln.Addr().String(), nil
}

// SetBase sets the base URL the fake names in /gateway/bot, READY's
// resume_gateway_url and attachment URLs (an httptest server's URL).
func (s *Server) SetBase(u string) {
	s.mu.Lock()
	s.base = strings.TrimRight(u, "/")
	s.mu.Unlock()
}

// APIURL is the REST API's base, for connector.Config.APIURL.
func (s *Server) APIURL() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.base + s.opts.APIPath
}

// Token is the bot token the fake accepts.
func (s *Server) Token() string { return s.opts.Token }

// Bot is the bot's user.
func (s *Server) Bot() User { return User{ID: s.opts.BotID, Username: s.opts.BotName, Bot: true} }

func (s *Server) wsBase() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return "ws" + strings.TrimPrefix(s.base, "http")
}
