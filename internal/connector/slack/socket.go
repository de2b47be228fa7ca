package slack

import (
	"context"
	"encoding/json"
	"errors"
	"math/rand/v2"
	"net/http"
	"net/url"
	"strings"
	"sync"
	"time"

	"github.com/coder/websocket"

	"agentd/internal/connector"
)

// maxFrame bounds one Socket Mode frame agentd reads.
const maxFrame = 1 << 20

// dialTimeout bounds opening a link, hello included.
const dialTimeout = 30 * time.Second

// frame is one Socket Mode message from Slack
// (https://api.slack.com/apis/connections/socket-implement).
type frame struct {
	Type          string        `json:"type"` // hello, events_api, disconnect, …
	EnvelopeID    string        `json:"envelope_id"`
	Payload       eventCallback `json:"payload"`
	RetryAttempt  int           `json:"retry_attempt"`
	RetryReason   string        `json:"retry_reason"`
	Reason        string        `json:"reason"` // disconnect: warning, refresh_requested, link_disabled
	NumConnection int           `json:"num_connections"`
}

// link is one live Socket Mode connection and the goroutine reading it.
// The reader hands frames to the one loop in runSocket (frames, unbuffered:
// nothing is read ahead of what the loop took) and ends when the
// connection is closed, sending its error on done.
type link struct {
	conn   *websocket.Conn
	frames chan frame
	done   chan error
	stop   chan struct{}
}

func (l *link) close() {
	close(l.stop)
	l.conn.CloseNow()
}

// runSocket receives over Socket Mode until ctx ends. It keeps one link:
// when Slack asks for a refresh it opens the next link first and closes
// the old one once the new one said hello, so no event waits on a gap.
// An envelope is acknowledged only after the handler returned nil; one
// not acknowledged Slack sends again (on this link or the next).
func (p *Platform) runSocket(ctx context.Context, h connector.Handler) error {
	var wg sync.WaitGroup
	defer wg.Wait()
	var (
		cur  *link
		next chan dialed // the refresh under way, nil none
		b    backoff
	)
	defer func() {
		if cur != nil {
			cur.close()
		}
		if next != nil {
			if r := <-next; r.link != nil {
				r.link.close()
			}
		}
	}()
	for {
		if cur == nil {
			l, err := p.dial(ctx, &wg)
			switch {
			case ctx.Err() != nil:
				return nil
			case fatal(err):
				p.deps.State(connector.StateDown, "", err)
				return err
			case err != nil:
				p.deps.State(connector.StateDown, "", err)
				if !b.wait(ctx, err) {
					return nil
				}
				continue
			}
			cur = l
			p.deps.State(connector.StateConnected, botName(p.identity()), nil)
		}
		select {
		case <-ctx.Done():
			return nil
		case f := <-cur.frames:
			b.reset() // the link works
			switch f.Type {
			case "events_api":
				p.envelope(ctx, cur, h, f)
			case "disconnect":
				if f.Reason == "link_disabled" {
					err := p.fail(connector.ErrConfig, "slack: socket mode: Slack disabled the app's link (socket mode off, or the app uninstalled)")
					p.deps.State(connector.StateDown, "", err)
					return err
				}
				if next == nil {
					next = p.dialAsync(ctx, &wg)
				}
			}
		case r := <-next:
			next = nil
			switch {
			case r.err == nil:
				cur.close()
				cur = r.link
				p.log.Info("socket mode link refreshed")
			case fatal(r.err):
				p.deps.State(connector.StateDown, "", r.err)
				return r.err
			}
		case err := <-cur.done:
			cur.close()
			cur = nil
			if next != nil {
				r := <-next
				next = nil
				if r.err == nil {
					cur = r.link
					continue
				}
				err = r.err
			}
			err = p.fail(nil, "slack: socket mode: the link ended: %v", err)
			p.log.Warn("socket mode link lost", "err", err)
			p.deps.State(connector.StateDown, "", err)
			if !b.wait(ctx, err) {
				return nil
			}
		}
	}
}

// envelope hands an events_api envelope's message to h and acknowledges it
// once h returned nil. An envelope that is no message to take is
// acknowledged at once.
func (p *Platform) envelope(ctx context.Context, l *link, h connector.Handler, f frame) {
	if in, ok := p.inbound(f.Payload); ok {
		if err := h.Inbound(ctx, in); err != nil {
			// Not acknowledged: Slack sends it again.
			p.log.Warn("inbound message not taken; Slack will send it again", "key", in.Key, "err", p.deps.Redact(err.Error()))
			return
		}
	}
	ack, _ := json.Marshal(struct {
		EnvelopeID string `json:"envelope_id"`
	}{f.EnvelopeID})
	if err := l.conn.Write(ctx, websocket.MessageText, ack); err != nil {
		// The reader sees the link end; Slack sends the envelope again
		// and its key makes the second submit a no-op.
		p.log.Warn("socket mode ack failed", "err", p.deps.Redact(err.Error()))
	}
}

type dialed struct {
	link *link
	err  error
}

// dialAsync dials the next link in a goroutine wg owns; its result comes on
// the returned channel (buffered: the goroutine never waits on it).
func (p *Platform) dialAsync(ctx context.Context, wg *sync.WaitGroup) chan dialed {
	ch := make(chan dialed, 1)
	wg.Add(1)
	go func() {
		defer wg.Done()
		l, err := p.dial(ctx, wg)
		ch <- dialed{l, err}
	}()
	return ch
}

// dial opens a Socket Mode link: apps.connections.open (app-level token)
// for a single-use URL, the WebSocket, and Slack's hello. The link's
// reader runs in a goroutine wg owns.
func (p *Platform) dial(ctx context.Context, wg *sync.WaitGroup) (*link, error) {
	ctx, cancel := context.WithTimeout(ctx, dialTimeout)
	defer cancel()
	var open struct {
		URL string `json:"url"`
	}
	if err := p.call(ctx, "apps.connections.open", p.cfg.AppToken, nil, &open); err != nil {
		return nil, err
	}
	conn, _, err := websocket.Dial(ctx, open.URL, &websocket.DialOptions{HTTPClient: p.wsClient()})
	if err != nil {
		// The URL carries a ticket: it is no secret of the row, but it
		// is not shown either.
		return nil, p.fail(nil, "slack: socket mode: dial: %v", redactURL(err, open.URL))
	}
	conn.SetReadLimit(maxFrame)
	var hello frame
	if err := readFrame(ctx, conn, &hello); err != nil || hello.Type != "hello" {
		conn.CloseNow()
		if err == nil {
			err = errors.New("the first frame is " + hello.Type + ", not hello")
		}
		return nil, p.fail(nil, "slack: socket mode: %v", err)
	}
	l := &link{conn: conn, frames: make(chan frame), done: make(chan error, 1), stop: make(chan struct{})}
	wg.Add(1)
	go func() {
		defer wg.Done()
		l.read(context.WithoutCancel(ctx)) // close ends it
	}()
	return l, nil
}

// read reads frames until the connection ends (close ends it).
func (l *link) read(ctx context.Context) {
	for {
		var f frame
		if err := readFrame(ctx, l.conn, &f); err != nil {
			l.done <- err
			return
		}
		select {
		case l.frames <- f:
		case <-l.stop:
			return
		}
	}
}

// readFrame reads one frame; a frame that is not JSON is skipped.
func readFrame(ctx context.Context, c *websocket.Conn, f *frame) error {
	for {
		_, data, err := c.Read(ctx)
		if err != nil {
			return err
		}
		if json.Unmarshal(data, f) == nil {
			return nil
		}
	}
}

// wsClient is the client WebSocket dials go through: the SSRF-guarded
// dialer when there is one.
func (p *Platform) wsClient() *http.Client {
	if p.deps.Dialer == nil {
		return p.deps.HTTP
	}
	return &http.Client{Transport: &http.Transport{DialContext: p.deps.Dialer.DialContext, Proxy: nil}}
}

// redactURL is err's text without raw's query (the link's ticket), however
// the dialer wrote the URL.
func redactURL(err error, raw string) string {
	s := err.Error()
	if u, perr := url.Parse(raw); perr == nil && u.RawQuery != "" {
		s = strings.ReplaceAll(s, u.RawQuery, "<ticket>")
	}
	return s
}

// backoff paces reconnects: 1 s doubling to 60 s with jitter, or what a
// 429 asked for.
type backoff struct{ n int }

func (b *backoff) reset() { b.n = 0 }

// wait sleeps before the next try; false when ctx ended first.
func (b *backoff) wait(ctx context.Context, err error) bool {
	d := time.Second << min(b.n, 6)
	d = min(d, time.Minute)
	d = d/2 + rand.N(d/2+1)
	if ra, ok := errors.AsType[*connector.RetryAfter](err); ok {
		d = max(d, ra.D)
	}
	b.n++
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return false
	case <-t.C:
		return true
	}
}
