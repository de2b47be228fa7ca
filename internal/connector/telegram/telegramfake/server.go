// Package telegramfake is a fake Telegram Bot API server for tests and
// demos: it keeps its state in a chatfake.World and speaks the Bot API's
// wire as https://core.telegram.org/bots/api documents it (methods under
// /bot<token>/, answers {"ok":true,"result":…} or {"ok":false,
// "error_code":N,"description":"…","parameters":{"retry_after":S}}, files
// under /file/bot<token>/), with Telegram's error texts for what agentd
// meets: a wrong token, an unknown chat, a blocked bot, markup Telegram
// cannot parse (see ParseMarkdownV2), a message over 4096 characters, an
// edit that changes nothing, a 429, getUpdates while a webhook is set.
//
// World ids are the Bot API's integers written in decimal: a private
// chat's id is its user's id; a group's is negative. Every post of the
// World is an update for the bot (privacy mode off), numbered from
// FirstUpdate.
package telegramfake

import (
	"context"
	"encoding/json"
	"errors"
	"log/slog"
	"net"
	"net/http"
	"strings"
	"sync"
	"time"

	"agentd/internal/connector/chatfake"
)

// FirstUpdate is the update_id of the World's first post; a post's update
// id is FirstUpdate + Seq - 1 (Telegram's ids are large, so a client that
// mixes them up with message ids is caught).
const FirstUpdate = 500000000

// MaxText is Telegram's limit of a message's text, in UTF-16 code units
// after the markup is parsed.
const MaxText = 4096

// Options configures a Server.
type Options struct {
	// World is the platform's state (default a new one).
	World *chatfake.World
	// Token is the bot's token (default "123456:TEST-token").
	Token string
	// Bot is the bot's user (default id 123456, username "agentd_bot").
	// Its ID must be Token's prefix before ':' as Telegram's is.
	Bot chatfake.User
	// Client posts updates to a webhook (default http.DefaultClient).
	Client *http.Client
	// RetryEvery is the wait before a webhook delivery that failed is made
	// again (default 200ms; Telegram waits longer).
	RetryEvery time.Duration
	// Logger (default discards).
	Logger *slog.Logger
}

// Server is a fake Bot API. It is an http.Handler.
type Server struct {
	w      *chatfake.World
	token  string
	bot    chatfake.User
	client *http.Client
	retry  time.Duration
	log    *slog.Logger

	ctx    context.Context // ends at Close: the webhook pusher's life
	cancel context.CancelFunc
	wg     sync.WaitGroup

	// mu guards the fields below. Lock order: mu, then the World's lock
	// (the World calls nothing back).
	mu        sync.Mutex
	confirmed int64              // posts with Seq below are confirmed
	poll      chan struct{}      // closed to end the getUpdates being answered
	hook      *webhook           // nil: no webhook
	blocked   map[string]bool    // chat ids whose user blocked the bot
	commands  []BotCommand       // the last setMyCommands
	paths     map[string]string  // file_path → file id
	lastError string             // the webhook's last delivery error
	stopHook  context.CancelFunc // ends the current webhook pusher
}

type webhook struct {
	URL     string
	Secret  string
	Allowed []string
	MaxConn int
}

// BotCommand is one command of setMyCommands.
type BotCommand struct {
	Command     string `json:"command"`
	Description string `json:"description"`
}

// New returns a Server; Close ends its webhook deliveries.
func New(o *Options) *Server {
	if o == nil {
		o = &Options{}
	}
	s := &Server{
		w:       o.World,
		token:   o.Token,
		bot:     o.Bot,
		client:  o.Client,
		retry:   o.RetryEvery,
		log:     o.Logger,
		blocked: map[string]bool{},
		paths:   map[string]string{},
		poll:    make(chan struct{}),
	}
	if s.w == nil {
		s.w = chatfake.New(nil)
	}
	if s.token == "" {
		s.token = "123456:TEST-token"
	}
	if s.bot.ID == "" {
		id, _, _ := strings.Cut(s.token, ":")
		s.bot = chatfake.User{ID: id, Name: "agentd", Username: "agentd_bot", Bot: true}
	}
	if s.client == nil {
		s.client = http.DefaultClient
	}
	if s.retry <= 0 {
		s.retry = 200 * time.Millisecond
	}
	if s.log == nil {
		s.log = slog.New(slog.DiscardHandler)
	}
	s.ctx, s.cancel = context.WithCancel(context.Background())
	return s
}

// World is the server's state.
func (s *Server) World() *chatfake.World { return s.w }

// Token is the bot's token.
func (s *Server) Token() string { return s.token }

// Bot is the bot's user.
func (s *Server) Bot() chatfake.User { return s.bot }

// Block makes chat's user have blocked the bot: sends there answer 403.
func (s *Server) Block(chat string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.blocked[chat] = true
}

// Commands returns the commands the bot set last.
func (s *Server) Commands() []BotCommand {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]BotCommand(nil), s.commands...)
}

// Webhook returns the webhook's URL and secret ("" none).
func (s *Server) Webhook() (url, secret string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.hook == nil {
		return "", ""
	}
	return s.hook.URL, s.hook.Secret
}

// Start serves on addr (":0" picks a port) until ctx ends, and returns the
// API URL to give a client (its api_url).
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
	return "http://" + ln.Addr().String(), nil
}

// Close ends the webhook deliveries and waits for them.
func (s *Server) Close() {
	s.cancel()
	s.wg.Wait()
}

// apiError is a Bot API error answer.
type apiError struct {
	Code       int
	Desc       string
	RetryAfter int
}

func (e *apiError) Error() string { return e.Desc }

func badRequest(desc string) *apiError { return &apiError{Code: 400, Desc: "Bad Request: " + desc} }

// ServeHTTP answers the Bot API.
func (s *Server) ServeHTTP(rw http.ResponseWriter, r *http.Request) {
	if rest, ok := strings.CutPrefix(r.URL.Path, "/file/bot"); ok {
		s.serveFile(rw, rest)
		return
	}
	rest, ok := strings.CutPrefix(r.URL.Path, "/bot")
	token, method, _ := strings.Cut(rest, "/")
	if !ok || method == "" || strings.Contains(method, "/") {
		writeError(rw, &apiError{Code: 404, Desc: "Not Found"})
		return
	}
	if token != s.token {
		writeError(rw, &apiError{Code: 401, Desc: "Unauthorized"})
		return
	}
	h, ok := s.methods()[strings.ToLower(method)]
	if !ok {
		writeError(rw, &apiError{Code: 404, Desc: "Not Found"})
		return
	}
	f, err := s.w.Call(r.Context(), h.name)
	if err != nil {
		return // the client went away while the call was held
	}
	if f != nil {
		s.writeFault(rw, f)
		return
	}
	p, err := readParams(r)
	if err != nil {
		writeError(rw, badRequest(err.Error()))
		return
	}
	res, err := h.fn(r.Context(), p)
	if err != nil {
		var ae *apiError
		if !errors.As(err, &ae) {
			ae = &apiError{Code: 500, Desc: "Internal Server Error: " + err.Error()}
		}
		writeError(rw, ae)
		return
	}
	writeJSON(rw, 200, map[string]any{"ok": true, "result": res})
}

// writeFault answers a scripted fault in the Bot API's wire.
func (s *Server) writeFault(rw http.ResponseWriter, f *chatfake.Fault) {
	switch {
	case f.Drop:
		chatfake.DropConn(rw)
	case f.RetryAfter > 0 || f.Status == 429:
		secs := max(int((f.RetryAfter+time.Second-1)/time.Second), 1)
		writeError(rw, &apiError{Code: 429, Desc: "Too Many Requests: retry after " + itoa(int64(secs)), RetryAfter: secs})
	default:
		desc := f.Body
		if desc == "" {
			desc = http.StatusText(f.Status)
		}
		writeError(rw, &apiError{Code: f.Status, Desc: desc})
	}
}

func writeError(rw http.ResponseWriter, e *apiError) {
	body := map[string]any{"ok": false, "error_code": e.Code, "description": e.Desc}
	if e.RetryAfter > 0 {
		body["parameters"] = map[string]any{"retry_after": e.RetryAfter}
	}
	writeJSON(rw, e.Code, body)
}

func writeJSON(rw http.ResponseWriter, status int, v any) {
	rw.Header().Set("Content-Type", "application/json")
	rw.WriteHeader(status)
	json.NewEncoder(rw).Encode(v)
}
