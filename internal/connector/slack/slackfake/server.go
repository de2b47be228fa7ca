// Package slackfake is a fake Slack for tests and demos: the Web API
// (https://api.slack.com/web: POST /api/<method>, a token in the
// Authorization header, JSON or form bodies, answers {"ok":true,…} or
// {"ok":false,"error":"…"}, HTTP 429 with Retry-After), Socket Mode
// (https://api.slack.com/apis/connections/socket-implement: the
// apps.connections.open ticket, hello, events_api envelopes acknowledged by
// envelope_id and sent again with retry_attempt+1 until they are,
// disconnect frames) and the Events API's side
// (https://api.slack.com/apis/connections/events-api: signed posts of
// event_callback and url_verification to the app's request URL, sent again
// with X-Slack-Retry-Num while not answered 2xx). Its state is a
// chatfake.World: every post a person makes there becomes a message event
// (and an app_mention when it names the bot in a channel).
//
// Ids: a World chat's id is the Slack channel id (D… a DM, C… a channel); a
// message's ts is "<unix seconds>.<World id, 6 digits>", so a ts names one
// World message or post.
package slackfake

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"time"

	"agentd/internal/connector/chatfake"
)

// Defaults of Options.
const (
	DefaultBotToken = "xoxb-1-fake-bot-token"
	DefaultAppToken = "xapp-1-fake-app-token"
	DefaultSecret   = "fake-signing-secret"
	// MaxText is the longest text chat.postMessage takes, in characters
	// (Slack truncates past 40,000; the fake refuses with msg_too_long).
	MaxText = 40000
)

// Options configures a Server.
type Options struct {
	// World is the platform's state (default a new one).
	World *chatfake.World
	// BotToken (xoxb-…), AppToken (xapp-…) and SigningSecret are the
	// app's credentials (defaults above).
	BotToken, AppToken, SigningSecret string
	// Bot is the bot's user (default id UBOT, name "agentd").
	Bot chatfake.User
	// BotID is the bot's bot id (default BBOT); Team its workspace
	// (default T0001).
	BotID, Team string
	// MaxText is chat.postMessage's limit in characters (default MaxText).
	MaxText int
	// RedeliverAfter is how long an envelope sent over Socket Mode waits
	// for its ack before it is sent again (default 3s, Slack's window).
	RedeliverAfter time.Duration
	// RetryEvery is the wait before an Events API post that failed is made
	// again (default 200ms; Slack waits longer). At most 3 retries.
	RetryEvery time.Duration
	// Client posts Events API requests (default http.DefaultClient).
	Client *http.Client
	// Logger (default discards).
	Logger *slog.Logger
}

// Server is a fake Slack. It is an http.Handler.
type Server struct {
	w        *chatfake.World
	o        Options
	log      *slog.Logger
	ctx      context.Context // ends at Close: the pump's and posts' life
	cancel   context.CancelFunc
	wg       sync.WaitGroup
	pumpOnce sync.Once

	// mu guards the fields below. World calls are not made while it is
	// held (World.mu is a leaf, taken inside mu at most).
	mu         sync.Mutex
	tickets    map[string]bool // apps.connections.open tickets not yet used
	links      []*link         // live Socket Mode links, newest last
	envelopes  []*envelope     // sent over Socket Mode, not yet acknowledged
	timers     map[*time.Timer]bool
	eventsURL  string          // the Events API request URL ("" socket mode)
	base       string          // the server's URL, for file links ("" https://files.slack.com)
	archived   map[string]bool // channels archived
	outside    map[string]bool // channels the bot is not in
	seen       int64           // posts with Seq up to seen became events
	nextID     int
	acked      []Ack
	deliveries []Delivery // Events API posts made, with their answers
}

// Ack is an envelope agentd acknowledged.
type Ack struct {
	EnvelopeID string
	EventTS    string // the message's ts
	Attempt    int    // the retry_attempt it was acknowledged at
}

// Delivery is one Events API post the fake made.
type Delivery struct {
	EventTS string
	Retry   int // X-Slack-Retry-Num (0 the first post)
	Status  int // agentd's answer (0: no answer)
}

// New returns a Server; Close ends its deliveries.
func New(o *Options) *Server {
	s := &Server{tickets: map[string]bool{}, timers: map[*time.Timer]bool{}, archived: map[string]bool{}, outside: map[string]bool{}}
	if o != nil {
		s.o = *o
	}
	s.w = s.o.World
	if s.w == nil {
		s.w = chatfake.New(nil)
	}
	def := func(v *string, d string) {
		if *v == "" {
			*v = d
		}
	}
	def(&s.o.BotToken, DefaultBotToken)
	def(&s.o.AppToken, DefaultAppToken)
	def(&s.o.SigningSecret, DefaultSecret)
	def(&s.o.BotID, "BBOT")
	def(&s.o.Team, "T0001")
	if s.o.Bot.ID == "" {
		s.o.Bot = chatfake.User{ID: "UBOT", Name: "agentd", Username: "agentd", Bot: true}
	}
	if s.o.MaxText <= 0 {
		s.o.MaxText = MaxText
	}
	if s.o.RedeliverAfter <= 0 {
		s.o.RedeliverAfter = 3 * time.Second
	}
	if s.o.RetryEvery <= 0 {
		s.o.RetryEvery = 200 * time.Millisecond
	}
	if s.o.Client == nil {
		s.o.Client = http.DefaultClient
	}
	s.log = s.o.Logger
	if s.log == nil {
		s.log = slog.New(slog.DiscardHandler)
	}
	s.w.AddUser(s.o.Bot)
	s.ctx, s.cancel = context.WithCancel(context.Background())
	return s
}

// World is the server's state.
func (s *Server) World() *chatfake.World { return s.w }

// Options are the server's settings, defaults filled in.
func (s *Server) Options() Options { return s.o }

// AddDM adds a person and their DM channel with the bot (id "D"+user).
func (s *Server) AddDM(user, name string) string {
	s.w.AddUser(chatfake.User{ID: user, Name: name})
	id := "D" + user
	s.w.AddChat(chatfake.Chat{ID: id, Kind: chatfake.DM, Title: name})
	return id
}

// AddChannel adds a channel (id C…) the bot is in.
func (s *Server) AddChannel(id, name string) {
	s.w.AddChat(chatfake.Chat{ID: id, Kind: chatfake.Group, Title: name})
}

// Archive archives channel: posting there answers is_archived.
func (s *Server) Archive(channel string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.archived[channel] = true
}

// Kick removes the bot from channel: posting there answers not_in_channel.
func (s *Server) Kick(channel string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.outside[channel] = true
}

// Start serves on addr (":0" picks a port) until ctx ends, and returns the
// server's URL; the Web API is under URL + "/api".
func (s *Server) Start(ctx context.Context, addr string) (string, error) {
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return "", err
	}
	srv := &http.Server{Handler: s, ConnState: s.w.ConnState, ReadHeaderTimeout: 10 * time.Second}
	s.wg.Add(1)
	go func() {
		defer s.wg.Done()
		<-ctx.Done()
		srv.Close()
		s.cancel()
	}()
	go srv.Serve(ln)
	s.pump()
	u := "http://" + ln.Addr().String()
	s.SetBaseURL(u)
	return u, nil
}

// SetBaseURL is the URL the server is reached at (Start sets it): file
// links point there.
func (s *Server) SetBaseURL(u string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.base = strings.TrimSuffix(u, "/")
}

// Close ends the deliveries and the links, and waits for them.
func (s *Server) Close() {
	s.cancel()
	s.mu.Lock()
	for t := range s.timers {
		t.Stop()
	}
	clear(s.timers)
	links := s.links
	s.links = nil
	s.mu.Unlock()
	for _, l := range links {
		l.conn.CloseNow()
	}
	s.wg.Wait()
}

// ServeHTTP answers the Web API under /api/, Socket Mode links under
// /link/ and files under /files-pri/.
func (s *Server) ServeHTTP(rw http.ResponseWriter, r *http.Request) {
	s.pump()
	switch {
	case strings.HasPrefix(r.URL.Path, "/link"):
		s.serveLink(rw, r)
		return
	case strings.HasPrefix(r.URL.Path, "/files-pri/"):
		s.serveFile(rw, r)
		return
	}
	method, ok := strings.CutPrefix(r.URL.Path, "/api/")
	if !ok {
		http.NotFound(rw, r)
		return
	}
	m, ok := s.methods()[method]
	if !ok {
		writeJSON(rw, 200, fail("unknown_method"))
		return
	}
	if r.Method != http.MethodPost {
		writeJSON(rw, 200, fail("method_not_supported_for_channel_type"))
		return
	}
	if r.URL.Query().Has("token") {
		// agentd sends tokens in the Authorization header only: a token
		// in a URL ends up in logs.
		writeJSON(rw, 200, fail("invalid_arguments"))
		return
	}
	token, ok := strings.CutPrefix(r.Header.Get("Authorization"), "Bearer ")
	switch {
	case !ok || token == "":
		writeJSON(rw, 200, fail("not_authed"))
		return
	case token != s.o.BotToken && token != s.o.AppToken:
		writeJSON(rw, 200, fail("invalid_auth"))
		return
	case (token == s.o.AppToken) != m.app:
		writeJSON(rw, 200, fail("not_allowed_token_type"))
		return
	}
	f, err := s.w.Call(r.Context(), method)
	if err != nil {
		return // the client went away while the call was held
	}
	if f != nil {
		writeFault(rw, f)
		return
	}
	a, err := readArgs(r)
	if err != nil {
		writeJSON(rw, 200, fail("invalid_form_data"))
		return
	}
	writeJSON(rw, 200, m.fn(r, a))
}

// serveFile answers a file's url_private: the file to the bot token, and
// (like Slack) a sign-in page to anyone else.
func (s *Server) serveFile(rw http.ResponseWriter, r *http.Request) {
	if r.Header.Get("Authorization") != "Bearer "+s.o.BotToken {
		rw.Header().Set("Content-Type", "text/html; charset=utf-8")
		fmt.Fprint(rw, "<!DOCTYPE html><title>Sign in to Slack</title>")
		return
	}
	if f, err := s.w.Call(r.Context(), "files"); err != nil {
		return
	} else if f != nil {
		writeFault(rw, f)
		return
	}
	// /files-pri/<team>-<file id>/<name>
	rest := strings.TrimPrefix(r.URL.Path, "/files-pri/")
	dir, _, _ := strings.Cut(rest, "/")
	_, id, _ := strings.Cut(dir, "-")
	f, ok := s.w.File(id)
	if !ok {
		http.NotFound(rw, r)
		return
	}
	rw.Header().Set("Content-Type", f.Type)
	rw.Write(f.Data)
}

// writeFault answers a scripted fault in the Web API's wire.
func writeFault(rw http.ResponseWriter, f *chatfake.Fault) {
	switch {
	case f.Drop:
		chatfake.DropConn(rw)
	case f.RetryAfter > 0 || f.Status == http.StatusTooManyRequests:
		secs := max(int((f.RetryAfter+time.Second-1)/time.Second), 1)
		rw.Header().Set("Retry-After", strconv.Itoa(secs))
		writeJSON(rw, http.StatusTooManyRequests, fail("ratelimited"))
	case f.Status == 0 || f.Status == 200:
		rw.Header().Set("Content-Type", "application/json; charset=utf-8")
		fmt.Fprint(rw, f.Body)
	default:
		body := f.Body
		if body == "" {
			body = http.StatusText(f.Status)
		}
		rw.WriteHeader(f.Status)
		fmt.Fprint(rw, body)
	}
}

// Error is Fault.Body for an ok:false answer with Slack's error code.
func Error(code string) string {
	b, _ := json.Marshal(fail(code))
	return string(b)
}

func fail(code string) map[string]any { return map[string]any{"ok": false, "error": code} }

func writeJSON(rw http.ResponseWriter, status int, v any) {
	rw.Header().Set("Content-Type", "application/json; charset=utf-8")
	rw.WriteHeader(status)
	json.NewEncoder(rw).Encode(v)
}

// touch wakes World.Wait after a change of the fake's own state (links,
// acks, deliveries): adding the bot again is a World change that alters
// nothing.
func (s *Server) touch() { s.w.AddUser(s.o.Bot) }

// newID returns a fresh id for envelopes and tickets; s.mu is held.
func (s *Server) newID(prefix string) string {
	s.nextID++
	return prefix + strconv.Itoa(s.nextID)
}
