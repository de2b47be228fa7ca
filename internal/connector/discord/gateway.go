package discord

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math/rand/v2"
	"net/http"
	"net/url"
	"sync"
	"sync/atomic"
	"time"

	"github.com/coder/websocket"

	"agentd/internal/connector"
)

// Gateway opcodes (https://discord.com/developers/docs/topics/opcodes-and-status-codes).
const (
	opDispatch       = 0
	opHeartbeat      = 1
	opIdentify       = 2
	opResume         = 6
	opReconnect      = 7
	opInvalidSession = 9
	opHello          = 10
	opHeartbeatAck   = 11
)

// frame is a gateway payload: {op, d, s, t}.
type frame struct {
	Op int             `json:"op"`
	D  json.RawMessage `json:"d"`
	S  *int64          `json:"s,omitempty"`
	T  string          `json:"t,omitempty"`
}

// readLimit bounds one gateway frame (READY lists every guild).
const readLimit = 8 << 20

// Reconnect pacing: a connection that failed before it was ready waits
// backoffMin, doubling up to backoffMax; one that was ready reconnects at
// once.
const (
	backoffMin = time.Second
	backoffMax = time.Minute
)

// Reasons a connection ended that resume at once, with no backoff.
var (
	errReconnect = errors.New("discord: the gateway asked to reconnect")
	errInvalid   = errors.New("discord: the gateway invalidated the session")
	// errHandler: the handler refused a message; not resumed at once.
	errHandler = errors.New("discord: a message was not handled")
)

// session is what a RESUME needs. Only Run's goroutine touches it.
type session struct {
	id        string
	resumeURL string
	seq       int64 // the last dispatch handled; the resume point
	// catchupDue: a fresh IDENTIFY's READY came and its catch-up has not
	// finished yet.
	catchupDue bool
	// beat is seq+1 for the heartbeat goroutine to read (0: none yet).
	beat atomic.Int64
}

// reset forgets the session: the next connection IDENTIFYs.
func (s *session) reset() {
	s.id, s.resumeURL, s.seq, s.catchupDue = "", "", 0, false
	s.beat.Store(0)
}

func (s *session) setSeq(n int64) {
	s.seq = n
	s.beat.Store(n + 1)
}

// beatSeq is what a heartbeat carries: the resume point, or null.
func (s *session) beatSeq() any {
	n := s.beat.Load()
	if n == 0 {
		return nil
	}
	return n - 1
}

func (s *session) resumable() bool { return s.id != "" && s.resumeURL != "" }

// Run connects to the gateway and receives until ctx ends. See
// connector.Platform.
func (p *Platform) Run(ctx context.Context, h connector.Handler) error {
	var s session
	p.loadResume(ctx, h, &s)
	gw := p.cfg.GatewayURL
	wait := backoffMin
	for {
		p.deps.State(connector.StateConnecting, "", nil)
		if gw == "" {
			u, err := p.gatewayBot(ctx)
			switch {
			case ctx.Err() != nil:
				return nil
			case errors.Is(err, connector.ErrAuth):
				return p.end(ctx, err)
			case err != nil:
				p.down(err)
				if !sleep(ctx, jitter(wait)) {
					return nil
				}
				wait = min(2*wait, backoffMax)
				continue
			}
			gw = u
		}
		target := gw
		if s.resumable() {
			target = s.resumeURL
		}
		ready, err := p.connect(ctx, h, &s, target)
		if ctx.Err() != nil {
			return nil
		}
		if errors.Is(err, connector.ErrAuth) || errors.Is(err, connector.ErrConfig) {
			return p.end(ctx, err)
		}
		p.down(err)
		switch {
		case errors.Is(err, errHandler):
			// The handler could not take a message (the store is down):
			// back off, then resume so the gateway replays it.
		case ready:
			wait = backoffMin
			continue
		case errors.Is(err, errReconnect), errors.Is(err, errInvalid), errors.Is(err, errZombie):
			continue
		}
		if !sleep(ctx, jitter(wait)) {
			return nil
		}
		wait = min(2*wait, backoffMax)
	}
}

// end reports a connection no reconnect mends and returns its error.
func (p *Platform) end(ctx context.Context, err error) error {
	if ctx.Err() != nil {
		return nil
	}
	err = p.redactErr(err)
	p.deps.State(connector.StateDown, "", err)
	return err
}

func (p *Platform) down(err error) {
	err = p.redactErr(err)
	p.log.Warn("discord: gateway connection ended", "err", err)
	p.deps.State(connector.StateDown, "", err)
}

// connect runs one gateway connection to target: HELLO, IDENTIFY or
// RESUME, then dispatches until it ends. ready says it reached READY or
// RESUMED.
func (p *Platform) connect(ctx context.Context, h connector.Handler, s *session, target string) (ready bool, err error) {
	u, err := gatewayURL(target)
	if err != nil {
		return false, err
	}
	c, _, err := websocket.Dial(ctx, u, &websocket.DialOptions{
		HTTPClient: p.wsClient(),
		HTTPHeader: http.Header{"User-Agent": {userAgent}},
	})
	if err != nil {
		return false, fmt.Errorf("discord: gateway dial: %w", err)
	}
	defer c.CloseNow()
	c.SetReadLimit(readLimit)
	cctx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)

	hello, err := readFrame(cctx, c)
	if err != nil {
		return false, closeError(err, s)
	}
	if hello.Op != opHello {
		return false, fmt.Errorf("discord: gateway: first frame op %d, not HELLO", hello.Op)
	}
	var hd struct {
		Interval float64 `json:"heartbeat_interval"`
	}
	if err := json.Unmarshal(hello.D, &hd); err != nil || hd.Interval <= 0 {
		return false, fmt.Errorf("discord: gateway: HELLO without heartbeat_interval")
	}
	hb := newHeartbeat(time.Duration(hd.Interval * float64(time.Millisecond)))
	q := newQueue()
	var wg sync.WaitGroup
	defer wg.Wait()
	defer cancel(nil)
	wg.Go(func() { q.close(p.readLoop(cctx, c, hb, q)) })
	wg.Go(func() {
		if err := hb.run(cctx, func(ctx context.Context) error {
			return writeFrame(ctx, c, opHeartbeat, s.beatSeq())
		}); err != nil {
			cancel(err)
		}
	})
	if err := p.hello(cctx, c, s); err != nil {
		return false, err
	}
	for {
		f, err := q.next(cctx)
		if err != nil {
			if cause := context.Cause(cctx); cause != nil && ctx.Err() == nil {
				return ready, cause // a zombie, or a heartbeat that could not be sent
			}
			return ready, closeError(err, s)
		}
		r, err := p.handle(cctx, h, s, f)
		ready = ready || r
		if err != nil {
			if cause := context.Cause(cctx); cause != nil && ctx.Err() == nil {
				return ready, cause
			}
			return ready, err
		}
	}
}

// hello sends IDENTIFY, or RESUME when the session can be resumed.
func (p *Platform) hello(ctx context.Context, c *websocket.Conn, s *session) error {
	if s.resumable() {
		return writeFrame(ctx, c, opResume, map[string]any{
			"token": p.cfg.Token, "session_id": s.id, "seq": s.seq,
		})
	}
	return writeFrame(ctx, c, opIdentify, map[string]any{
		"token":   p.cfg.Token,
		"intents": Intents,
		"properties": map[string]string{
			"os": "linux", "browser": "agentd", "device": "agentd",
		},
	})
}

// handle takes one frame the read loop queued. ready: READY or RESUMED.
func (p *Platform) handle(ctx context.Context, h connector.Handler, s *session, f frame) (bool, error) {
	switch f.Op {
	case opReconnect:
		return false, errReconnect
	case opInvalidSession:
		var resumable bool
		_ = json.Unmarshal(f.D, &resumable)
		if !resumable {
			s.reset()
		}
		// Discord asks for a wait of 1 to 5 seconds before a new IDENTIFY.
		if !sleep(ctx, time.Second+rand.N(4*time.Second)) {
			return false, ctx.Err()
		}
		return false, errInvalid
	case opDispatch:
	default:
		return false, nil
	}
	ready := false
	switch f.T {
	case "READY":
		var d struct {
			SessionID string `json:"session_id"`
			ResumeURL string `json:"resume_gateway_url"`
			User      user   `json:"user"`
		}
		if err := json.Unmarshal(f.D, &d); err != nil {
			return false, fmt.Errorf("discord: READY: %w", err)
		}
		s.id, s.resumeURL, s.catchupDue = d.SessionID, d.ResumeURL, true
		p.setBot(d.User.ID, d.User.Username)
		p.deps.State(connector.StateConnected, p.name(), nil)
		ready = true
	case "RESUMED":
		p.deps.State(connector.StateConnected, p.name(), nil)
		ready = true
	case "MESSAGE_CREATE":
		var m message
		if err := json.Unmarshal(f.D, &m); err != nil {
			return false, fmt.Errorf("discord: MESSAGE_CREATE: %w", err)
		}
		if in, ok := p.inbound(m); ok {
			if err := h.Inbound(ctx, in); err != nil {
				// Not handled: the resume point stays before it, so the
				// gateway replays it on RESUME.
				return false, fmt.Errorf("%w: %w", errHandler, err)
			}
		}
	}
	if f.S != nil {
		s.setSeq(*f.S)
		p.saveResume(ctx, h, s)
	}
	if s.catchupDue && (f.T == "READY" || f.T == "RESUMED") {
		if err := p.catchup(ctx, h); err != nil {
			return ready, fmt.Errorf("%w: catch-up: %w", errHandler, err)
		}
		s.catchupDue = false
		p.saveResume(ctx, h, s)
	}
	return ready, nil
}

// readLoop reads frames until the connection ends: heartbeat frames are
// answered here (so a slow handler never starves them), the rest queued.
func (p *Platform) readLoop(ctx context.Context, c *websocket.Conn, hb *heartbeat, q *queue) error {
	for {
		f, err := readFrame(ctx, c)
		if err != nil {
			return err
		}
		switch f.Op {
		case opHeartbeatAck:
			hb.ack()
		case opHeartbeat:
			hb.beatNow()
		default:
			q.push(f)
		}
	}
}

func readFrame(ctx context.Context, c *websocket.Conn) (frame, error) {
	_, data, err := c.Read(ctx)
	if err != nil {
		return frame{}, err
	}
	var f frame
	if err := json.Unmarshal(data, &f); err != nil {
		return frame{}, fmt.Errorf("discord: gateway frame: %w", err)
	}
	return f, nil
}

func writeFrame(ctx context.Context, c *websocket.Conn, op int, d any) error {
	data, err := json.Marshal(struct {
		Op int `json:"op"`
		D  any `json:"d"`
	}{op, d})
	if err != nil {
		return err
	}
	return c.Write(ctx, websocket.MessageText, data)
}

// closeError maps how the gateway closed to what Run does next
// (https://discord.com/developers/docs/topics/opcodes-and-status-codes#gateway-gateway-close-event-codes).
func closeError(err error, s *session) error {
	code := websocket.CloseStatus(err)
	switch {
	case code == 4004:
		return fmt.Errorf("discord: gateway closed 4004 (authentication failed): %w", connector.ErrAuth)
	case code == 4014:
		return fmt.Errorf("discord: gateway closed 4014 (disallowed intents): enable the Message Content intent in the Developer Portal: %w", connector.ErrConfig)
	case code >= 4010 && code <= 4013:
		return fmt.Errorf("discord: gateway closed %d (shard, version or intents refused): %w", code, connector.ErrConfig)
	case code == 4007 || code == 4009:
		s.reset() // bad sequence, session timed out: a new IDENTIFY
	}
	return fmt.Errorf("discord: gateway connection: %w", err)
}

// gatewayURL is base with Discord's version and encoding asked for.
func gatewayURL(base string) (string, error) {
	u, err := url.Parse(base)
	if err != nil || (u.Scheme != "ws" && u.Scheme != "wss") {
		return "", fmt.Errorf("discord: gateway url %q is not ws(s)", base)
	}
	if u.Path == "" {
		u.Path = "/"
	}
	q := u.Query()
	q.Set("v", "10")
	q.Set("encoding", "json")
	u.RawQuery = q.Encode()
	return u.String(), nil
}

// wsClient dials the gateway through the platform's dialer (the SSRF
// guard). It has no timeout: the connection lives until Run ends it.
func (p *Platform) wsClient() *http.Client {
	return &http.Client{Transport: &http.Transport{
		DialContext:         p.deps.Dialer.DialContext,
		TLSHandshakeTimeout: 10 * time.Second,
	}}
}

func sleep(ctx context.Context, d time.Duration) bool {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return false
	case <-t.C:
		return true
	}
}

// jitter is d give or take a quarter.
func jitter(d time.Duration) time.Duration {
	return d*3/4 + rand.N(d/2+1)
}

// queue holds the frames the read loop read and the dispatch loop has not
// taken yet. It is unbounded so that reading (and so heartbeat acks) never
// waits for a slow handler; Discord's rate of dispatches bounds it.
type queue struct {
	mu     sync.Mutex
	frames []frame
	err    error // why reading ended; set once
	ready  chan struct{}
}

func newQueue() *queue { return &queue{ready: make(chan struct{}, 1)} }

func (q *queue) push(f frame) {
	q.mu.Lock()
	q.frames = append(q.frames, f)
	q.mu.Unlock()
	q.signal()
}

func (q *queue) close(err error) {
	q.mu.Lock()
	q.err = err
	q.mu.Unlock()
	q.signal()
}

func (q *queue) signal() {
	select {
	case q.ready <- struct{}{}:
	default:
	}
}

// next takes the oldest frame; once reading ended and every frame was
// taken, it returns why reading ended.
func (q *queue) next(ctx context.Context) (frame, error) {
	for {
		q.mu.Lock()
		if len(q.frames) > 0 {
			f := q.frames[0]
			q.frames = q.frames[1:]
			q.mu.Unlock()
			return f, nil
		}
		err := q.err
		q.mu.Unlock()
		if err != nil {
			return frame{}, err
		}
		select {
		case <-ctx.Done():
			return frame{}, ctx.Err()
		case <-q.ready:
		}
	}
}
