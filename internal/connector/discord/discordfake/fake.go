// Package discordfake is a fake Discord for tests: the gateway WebSocket
// (HELLO, heartbeats, IDENTIFY, READY, RESUME with replay, RECONNECT,
// INVALID_SESSION, close codes) and the REST API agentd uses (create with
// nonce + enforce_nonce, edit, typing, channel messages after an id,
// /gateway/bot), with rate-limit buckets and scripted faults, over the
// shared chat state of chatfake. It speaks the wire as Discord documents
// it:
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
	"strconv"
	"strings"
	"sync"
	"time"

	"agentd/internal/connector/chatfake"
)

// Options configure a Server. The zero value is a bot whose app has the
// Message Content intent granted.
type Options struct {
	World   *chatfake.World // the chat state; default a new one
	Token   string          // the bot token the fake accepts; default "fake-discord-token"
	BotID   string          // the bot's user id; default "1000000000000000001"
	BotName string          // the bot's username; default "agentd-bot"
	APIPath string          // where the REST API is served; default "/api/v10"
	Guild   string          // the guild of a World group chat not added by AddChannel; default "900000000000000001"
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

// Server is a fake Discord over a chatfake.World: the World keeps the
// people, channels, posts and the bot's messages; the Server speaks
// Discord's wire over it and keeps what only Discord has (the gateway
// session, guilds, rate-limit buckets). Its methods are safe from any
// goroutine.
//
// The World's ids are small counters; on the wire they are snowflakes
// (base + id, base made from the Server's start), so ids order as
// Discord's do and carry a time.
type Server struct {
	opts Options
	w    *chatfake.World
	base uint64 // the snowflake of World id 0
	mux  *http.ServeMux
	// stop ends the follower, the goroutine that dispatches the World's
	// posts (Close); done is closed when it returned.
	stop context.CancelFunc
	done chan struct{}

	// cmu makes creates one at a time (a nonce sent twice at once makes
	// one message). dmu orders dispatches: held while one is numbered and
	// written, so a connection gets them in their order. Lock order: cmu →
	// dmu → mu → the World's (a leaf).
	cmu sync.Mutex
	dmu sync.Mutex
	mu  sync.Mutex // guards what follows; never held across a write
	url string     // http://host:port, once known
	// sess is the bot's current gateway session; conns the live
	// connections.
	sess   *session
	conns  map[*conn]struct{}
	acking bool
	nsess  int // sessions made
	// followed is the Seq of the last World post dispatched.
	followed int64
	guilds   map[string]string // channel id → guild id ("" a DM)
	buckets  map[string]*bucket
	global   bucket
}

// New makes a fake Discord.
func New(opts *Options) *Server {
	o := Options{}
	if opts != nil {
		o = *opts
	}
	if o.World == nil {
		o.World = chatfake.New(nil)
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
	if o.Guild == "" {
		o.Guild = "900000000000000001"
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
		opts: o, w: o.World, acking: true,
		base:  uint64(o.World.Now().UnixMilli()-discordEpoch) << 22,
		conns: map[*conn]struct{}{}, guilds: map[string]string{}, buckets: map[string]*bucket{},
	}
	s.w.AddUser(chatfake.User{ID: o.BotID, Name: o.BotName, Username: o.BotName, Bot: true})
	s.mux = http.NewServeMux()
	s.mux.HandleFunc("GET /gateway", s.serveGateway)
	s.mux.HandleFunc("GET /resume", s.serveGateway)
	s.mux.HandleFunc("GET /cdn/{file}/{name}", s.serveCDN)
	api := strings.TrimRight(o.APIPath, "/")
	s.mux.HandleFunc("GET "+api+"/gateway/bot", s.rest(s.gatewayBot))
	s.mux.HandleFunc("POST "+api+"/channels/{channel}/messages", s.rest(s.createMessage))
	s.mux.HandleFunc("PATCH "+api+"/channels/{channel}/messages/{id}", s.rest(s.editMessage))
	s.mux.HandleFunc("GET "+api+"/channels/{channel}/messages", s.rest(s.listMessages))
	s.mux.HandleFunc("POST "+api+"/channels/{channel}/typing", s.rest(s.typing))
	ctx, stop := context.WithCancel(context.Background())
	s.stop, s.done = stop, make(chan struct{})
	go s.follow(ctx)
	return s
}

// Close ends the fake's goroutine and drops every connection.
func (s *Server) Close() {
	s.stop()
	<-s.done
	s.w.Drop()
}

// follow dispatches every post the World gets (SendAsUser, the control
// API's /_fake/send), in order, as MESSAGE_CREATE, until ctx ends.
func (s *Server) follow(ctx context.Context) {
	defer close(s.done)
	for {
		changed := s.w.Changed()
		s.mu.Lock()
		from := s.followed + 1
		s.mu.Unlock()
		for _, p := range s.w.Posts(from) {
			wire := s.wirePost(p)
			if ref, ok := s.w.Message(p.Chat, p.ReplyTo); ok {
				wire["referenced_message"] = s.wireBot(ref)
			}
			s.dispatchMessage(wire, s.guild(p.Chat))
			s.mu.Lock()
			s.followed = p.Seq
			s.mu.Unlock()
			s.notify("MESSAGE_CREATE")
		}
		select {
		case <-ctx.Done():
			return
		case <-changed:
		}
	}
}

// World is the fake's chat state.
func (s *Server) World() *chatfake.World { return s.w }

// ServeHTTP serves the gateway (/gateway, /resume) and the REST API.
func (s *Server) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	s.mu.Lock()
	if s.url == "" {
		s.url = "http://" + r.Host
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
	srv := &http.Server{Handler: s, ConnState: s.w.ConnState, ReadHeaderTimeout: 10 * time.Second}
	go func() {
		<-ctx.Done()
		s.Close()
		_ = srv.Close()
	}()
	go srv.Serve(ln) //nolint:errcheck // ends with ErrServerClosed when ctx ends
	return "http://" + ln.Addr().String(), nil
}

// SetBase sets the base URL the fake names in /gateway/bot, READY's
// resume_gateway_url and attachment URLs (an httptest server's URL).
func (s *Server) SetBase(u string) {
	s.mu.Lock()
	s.url = strings.TrimRight(u, "/")
	s.mu.Unlock()
}

// APIURL is the REST API's base, for connector.Config.APIURL.
func (s *Server) APIURL() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.url + s.opts.APIPath
}

// GatewayURL is the gateway's base, for connector.Config.GatewayURL.
func (s *Server) GatewayURL() string { return s.wsBase() + "/gateway" }

// Token is the bot token the fake accepts.
func (s *Server) Token() string { return s.opts.Token }

// Bot is the bot's user.
func (s *Server) Bot() chatfake.User {
	return chatfake.User{ID: s.opts.BotID, Name: s.opts.BotName, Username: s.opts.BotName, Bot: true}
}

func (s *Server) wsBase() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return "ws" + strings.TrimPrefix(s.url, "http")
}

// discordEpoch: snowflakes count milliseconds from 2015.
const discordEpoch = 1420070400000

// wireID is a World id as Discord shows it.
func (s *Server) wireID(id string) string {
	n, err := strconv.ParseUint(id, 10, 64)
	if err != nil {
		return id
	}
	return strconv.FormatUint(s.base+n, 10)
}

// worldID is a wire id's World id ("" for an id the World never made).
func (s *Server) worldID(wire string) string {
	n, err := strconv.ParseUint(wire, 10, 64)
	if err != nil || n <= s.base {
		return ""
	}
	return strconv.FormatUint(n-s.base, 10)
}
