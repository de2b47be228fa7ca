package stream

import (
	"context"
	"fmt"
	"log/slog"
	"net/http"
	"sync"
	"sync/atomic"
	"time"

	"github.com/coder/websocket"

	"agentd/internal/event"
	"agentd/internal/gateway"
	"agentd/internal/runtime"
	"agentd/internal/store"
)

// Log is the part of the runtime a Handler reads: the bus on which events
// are published once durable (and live-only events at once), and a
// session's stored events by address. *runtime.Runtime has this method set.
type Log interface {
	Bus() *event.Bus
	// Events returns up to limit stored events of the session at addr
	// ("<agent>/<key>") with Seq > after, in order, and the session; a
	// session that does not exist is an error wrapping store.ErrNotFound.
	Events(ctx context.Context, addr string, after int64, limit int) (store.Session, []event.Event, error)
}

// Directory is the part of the store a Handler reads: sessions by id, to
// route events to agent subscriptions, and listed, to replay an agent's
// sessions. store.Store has this method set.
type Directory interface {
	SessionByID(ctx context.Context, id int64) (store.Session, error)
	Sessions(ctx context.Context, f store.SessionFilter) ([]store.Session, error)
}

// Source is everything a Handler reads. Join builds one from the runtime
// and the store.
type Source interface {
	Log
	Directory
}

// Join returns a Source reading events from log and sessions from dir.
func Join(log Log, dir Directory) Source { return joined{log, dir} }

type joined struct {
	Log
	Directory
}

// Defaults of Options.
const (
	DefaultMaxQueue          = 1024
	DefaultMaxQueueBytes     = 1 << 20
	DefaultMaxSubscriptions  = 16
	DefaultMaxMessageBytes   = 64 << 10
	DefaultMaxReplaySessions = 1000
	DefaultPingInterval      = 30 * time.Second
	DefaultPongTimeout       = 15 * time.Second
	DefaultBusBuffer         = 8192
	DefaultSessionCache      = 16384
	DefaultCloseGrace        = 2 * time.Second
)

// Options configure a Handler. The zero value (or nil) gives the defaults.
type Options struct {
	Logger *slog.Logger

	// MaxQueue and MaxQueueBytes bound what waits to be written to one
	// connection; a connection that would go past either is closed with
	// status 1008 and a "slow consumer" reason. The same bounds apply,
	// separately, to the live events held back while a subscription
	// replays the log.
	MaxQueue      int
	MaxQueueBytes int
	// MaxSubscriptions bounds the subscriptions of one connection.
	MaxSubscriptions int
	// MaxMessageBytes bounds one client message; a larger one closes the
	// connection with status 1009.
	MaxMessageBytes int64
	// MaxReplaySessions bounds the sessions one agent or all-sessions
	// subscription replays, and its cursors.
	MaxReplaySessions int
	// PingInterval is how often an otherwise quiet connection is pinged;
	// a peer that has not answered within PongTimeout is disconnected.
	// A negative PingInterval turns pings off.
	PingInterval time.Duration
	PongTimeout  time.Duration
	// BusBuffer is the buffer of the Handler's one bus subscription. If
	// the Handler falls that far behind the bus, every connection is
	// closed with status 1013 and resumes from the log.
	BusBuffer int
	// SessionCache bounds the session addresses kept to route events.
	SessionCache int
	// CloseGrace is how long Close lets connections finish their close
	// handshake before it drops them.
	CloseGrace time.Duration
}

func (o *Options) withDefaults() Options {
	var d Options
	if o != nil {
		d = *o
	}
	if d.Logger == nil {
		d.Logger = slog.New(slog.DiscardHandler)
	}
	def := func(v *int, n int) {
		if *v <= 0 {
			*v = n
		}
	}
	def(&d.MaxQueue, DefaultMaxQueue)
	def(&d.MaxQueueBytes, DefaultMaxQueueBytes)
	def(&d.MaxSubscriptions, DefaultMaxSubscriptions)
	def(&d.MaxReplaySessions, DefaultMaxReplaySessions)
	def(&d.BusBuffer, DefaultBusBuffer)
	def(&d.SessionCache, DefaultSessionCache)
	if d.MaxMessageBytes <= 0 {
		d.MaxMessageBytes = DefaultMaxMessageBytes
	}
	if d.PingInterval == 0 {
		d.PingInterval = DefaultPingInterval
	}
	if d.PongTimeout <= 0 {
		d.PongTimeout = DefaultPongTimeout
	}
	if d.CloseGrace <= 0 {
		d.CloseGrace = DefaultCloseGrace
	}
	return d
}

// Close statuses and reasons sent to clients.
const (
	// StatusSlowConsumer closes a connection that does not read fast enough.
	StatusSlowConsumer = websocket.StatusPolicyViolation // 1008
	// StatusOverrun closes every connection when the Handler itself fell
	// behind the event bus; clients resume from the log.
	StatusOverrun = websocket.StatusTryAgainLater // 1013
	// StatusShutdown closes every connection when the Handler is closed.
	StatusShutdown = websocket.StatusGoingAway // 1001

	// StatusInternal closes the connections an event could not be routed
	// to; clients resume from the log.
	StatusInternal = websocket.StatusInternalError // 1011

	ReasonShutdown = "server shutting down"
	ReasonOverrun  = "event stream overrun: reconnect with your cursors"
	ReasonInternal = "internal error: reconnect with your cursors"
)

// ErrClosed is why an upgrade is refused once Close has begun: agentd is
// shutting down (503 shutting_down with Retry-After, as the gateway's
// table of errors says it).
var ErrClosed = fmt.Errorf("stream: %w", runtime.ErrClosed)

// Handler serves the WebSocket event stream. It holds one subscription to
// the event bus and fans events out to its connections.
type Handler struct {
	src Source
	o   Options
	log *slog.Logger
	hub *hub

	life     sync.Mutex // guards stopping, closed and wg.Add
	stopping bool       // Close has begun: no new connections
	closed   bool       // no new goroutines
	wg       sync.WaitGroup

	buf sync.Pool // *[]byte scratch for writers

	slow     atomic.Int64
	overruns atomic.Int64
	writers  atomic.Int64
	replays  atomic.Int64
}

// New returns a Handler streaming the events of src. Call Close to end its
// connections and goroutines.
func New(src Source, o *Options) *Handler {
	h := &Handler{src: src, o: o.withDefaults()}
	h.log = h.o.Logger
	h.buf.New = func() any { b := make([]byte, 0, 1024); return &b }
	h.hub = newHub(h)
	h.wg.Add(1)
	go h.hub.run()
	if h.o.PingInterval > 0 {
		h.wg.Add(1)
		go h.pinger()
	}
	return h
}

// pinger pings each connection about once every PingInterval.
func (h *Handler) pinger() {
	defer h.wg.Done()
	t := time.NewTicker(max(h.o.PingInterval/8, time.Millisecond))
	defer t.Stop()
	for {
		select {
		case <-h.hub.ctx.Done():
			return
		case now := <-t.C:
			for _, c := range h.hub.all() {
				c.maybePing(now.UnixNano())
			}
		}
	}
}

// spawn runs f in a goroutine the Handler waits for on Close; it reports
// false, and runs nothing, once the Handler is closed.
func (h *Handler) spawn(f func()) bool {
	if !h.enter() {
		return false
	}
	go func() {
		defer h.wg.Done()
		f()
	}()
	return true
}

// enter counts a goroutine the Handler waits for on Close, unless it is
// closed; the goroutine calls h.wg.Done when it ends.
func (h *Handler) enter() bool {
	h.life.Lock()
	defer h.life.Unlock()
	if h.closed {
		return false
	}
	h.wg.Add(1)
	return true
}

// Close closes every connection (status 1001, "server shutting down") and
// waits for the Handler's goroutines to end. Connections that have not
// finished their close handshake within Options.CloseGrace are dropped.
func (h *Handler) Close() error {
	h.life.Lock()
	if h.stopping {
		h.life.Unlock()
		return nil
	}
	h.stopping = true
	h.life.Unlock()

	h.hub.stop() // refuses new connections
	for _, c := range h.hub.all() {
		c.closeAsync(StatusShutdown, ReasonShutdown)
	}
	if !h.hub.waitEmpty(h.o.CloseGrace) {
		for _, c := range h.hub.all() {
			c.ws.CloseNow()
		}
		h.hub.waitEmpty(-1)
	}
	// No connection is left to start a goroutine.
	h.life.Lock()
	h.closed = true
	h.life.Unlock()
	h.wg.Wait()
	return nil
}

// Stats counts a Handler's connections and work.
type Stats struct {
	Conns         int   // open connections
	Subscriptions int   // their subscriptions
	Writers       int64 // writer goroutines running now
	Replays       int64 // subscriptions replaying the log now
	SlowClosed    int64 // connections closed as slow consumers, in all
	Overruns      int64 // times the Handler fell behind the bus, in all
}

// Stats returns the Handler's counts.
func (h *Handler) Stats() Stats {
	conns, subs := h.hub.counts()
	return Stats{Conns: conns, Subscriptions: subs, Writers: h.writers.Load(), Replays: h.replays.Load(),
		SlowClosed: h.slow.Load(), Overruns: h.overruns.Load()}
}

// ServeHTTP upgrades the request to a WebSocket and streams events on it.
// Authentication, Host and Origin checks are the job of the middleware
// that wraps the Handler: the upgrade itself accepts any Origin.
func (h *Handler) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	first, err := parseQuery(r.URL.Query(), h.o.MaxReplaySessions)
	if err != nil {
		gateway.WriteError(w, fmt.Errorf("%w: %v", gateway.ErrBadRequest, err))
		return
	}
	h.life.Lock()
	stopping := h.stopping
	h.life.Unlock()
	if stopping {
		gateway.WriteError(w, ErrClosed)
		return
	}
	var cw *corkWriter
	ws, err := websocket.Accept(smallBuffers{w, &cw}, r, &websocket.AcceptOptions{
		// The gateway's middleware has checked Host and Origin (and
		// authentication) before the request gets here; a second,
		// stricter Origin check here would refuse what it allowed.
		InsecureSkipVerify: true,
		CompressionMode:    websocket.CompressionDisabled,
	})
	if err != nil {
		// Accept has answered the request.
		h.log.Debug("stream upgrade failed", "err", err)
		return
	}
	ws.SetReadLimit(h.o.MaxMessageBytes)
	c := &conn{h: h, ws: ws, cork: cw, nextPing: time.Now().UnixNano() + int64(h.o.PingInterval)}
	if !h.hub.addConn(c) {
		ws.Close(StatusShutdown, ReasonShutdown)
		return
	}
	if first != nil {
		c.handle(first)
	}
	if !h.spawn(c.readLoop) {
		c.closeAsync(StatusShutdown, ReasonShutdown)
		return
	}
	// The request's goroutine ends here; the connection lives on in its
	// read loop, with no other goroutine while it is idle.
}
