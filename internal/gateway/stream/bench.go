package stream

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/url"
	"slices"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/coder/websocket"
)

// Load figures for `agentd bench`: they work against any stream, in
// process or a running daemon.

// FanoutResult is what BenchFanout measured.
type FanoutResult struct {
	Subscribers int
	Events      int // text-delta events each subscriber received
	// Frames is how many text-delta frames the subscribers read in all:
	// fewer than Subscribers × Events where the server joined deltas
	// queued for a connection that fell behind.
	Frames int
	// Delivery latency of each event to each subscriber: when the
	// subscriber read the frame that carried it, less the time of the
	// frame (of the first event a joined frame carries, so that every
	// event it carries counts what the earliest one waited).
	P50, P99, Max time.Duration
}

// BenchFanout connects subscribers clients to a stream URL (ws:// or
// wss://, its subscription in the query, e.g.
// ws://127.0.0.1:8080/v1/stream?agent=bench; all=1 is added if the query
// has none) with opts (headers, an HTTP client for a unix socket; may be
// nil), then calls publish until every subscriber has received events
// text-delta events, and returns their delivery latencies. publish must
// cause text-delta events on the stream, all published before it returns
// (a turn of the echo model publishes one per word), and return how many;
// each round waits until every subscriber has them. Latency is measured
// from the event's time, so the publisher must share the clock: run it on
// the same host.
func BenchFanout(ctx context.Context, streamURL string, opts *websocket.DialOptions, subscribers, events int,
	publish func(ctx context.Context) (int, error)) (FanoutResult, error) {
	if subscribers <= 0 || events <= 0 {
		return FanoutResult{}, errors.New("stream: bench: subscribers and events must be positive")
	}
	s, err := DialSubscribers(ctx, streamURL, opts, subscribers)
	if err != nil {
		return FanoutResult{}, err
	}
	sent := 0
	for sent < events {
		n, err := publish(ctx)
		if err != nil {
			s.Close()
			return FanoutResult{}, fmt.Errorf("stream: bench: publish: %w", err)
		}
		if n <= 0 {
			s.Close()
			return FanoutResult{}, errors.New("stream: bench: publish caused no text-delta events")
		}
		sent += n
		if err := s.Wait(ctx, sent); err != nil {
			s.Close()
			return FanoutResult{}, err
		}
	}
	return s.Close(), nil
}

// Subscribers are WebSocket clients of one stream that time the text
// deltas they receive, for BenchFanout or a process of clients apart from
// the one that publishes.
type Subscribers struct {
	cancel context.CancelFunc
	conns  []*websocket.Conn
	wg     sync.WaitGroup
	once   sync.Once

	lat         [][]time.Duration // by subscriber
	got, frames atomic.Int64      // events and frames received, in all
	want        atomic.Int64
	notify      chan struct{}
	failed      chan error
}

// DialSubscribers connects n subscribers to a stream URL, as BenchFanout
// does, and starts timing the text deltas they receive.
func DialSubscribers(ctx context.Context, streamURL string, opts *websocket.DialOptions, n int) (*Subscribers, error) {
	u, err := withSubscription(streamURL)
	if err != nil {
		return nil, err
	}
	ctx, cancel := context.WithCancel(ctx)
	conns, err := dialN(ctx, u, opts, n)
	if err != nil {
		cancel()
		return nil, err
	}
	s := &Subscribers{cancel: cancel, conns: conns, lat: make([][]time.Duration, n),
		notify: make(chan struct{}, 1), failed: make(chan error, n)}
	for i, c := range conns {
		s.wg.Go(func() { s.read(ctx, i, c) })
	}
	return s, nil
}

func (s *Subscribers) read(ctx context.Context, i int, c *websocket.Conn) {
	var buf []byte
	for {
		// No deadline: closing the connection ends the read, and a
		// context per read would cost more than the read.
		b, err := readInto(c, buf[:0])
		now := time.Now()
		if err != nil {
			if ctx.Err() == nil {
				s.failed <- fmt.Errorf("stream: bench: subscriber %d: %w", i, err)
			}
			return
		}
		buf = b
		t, n, ok := deltaTime(b)
		if !ok {
			continue
		}
		for range n {
			s.lat[i] = append(s.lat[i], now.Sub(t))
		}
		s.frames.Add(1)
		if s.got.Add(int64(n)) >= s.want.Load() {
			select {
			case s.notify <- struct{}{}:
			default:
			}
		}
	}
}

// Wait waits until every subscriber has received events text-delta
// events since it connected; it gives up after a minute without them.
func (s *Subscribers) Wait(ctx context.Context, events int) error {
	s.want.Store(int64(events) * int64(len(s.conns)))
	stall := time.NewTimer(time.Minute)
	defer stall.Stop()
	for s.got.Load() < s.want.Load() {
		select {
		case <-s.notify:
		case err := <-s.failed:
			return err
		case <-stall.C:
			return fmt.Errorf("stream: bench: %d of %d deliveries after a minute", s.got.Load(), s.want.Load())
		case <-ctx.Done():
			return ctx.Err()
		}
	}
	return nil
}

// Close disconnects the subscribers and returns what they measured.
func (s *Subscribers) Close() FanoutResult {
	s.once.Do(func() {
		s.cancel()
		closeAllConns(s.conns)
		s.wg.Wait()
	})
	var all []time.Duration
	for _, l := range s.lat {
		all = append(all, l...)
	}
	r := FanoutResult{Subscribers: len(s.conns), Frames: int(s.frames.Load())}
	if len(all) == 0 {
		return r
	}
	slices.Sort(all)
	q := func(p float64) time.Duration { return all[min(len(all)-1, int(p*float64(len(all))))] }
	r.Events = len(all) / len(s.conns)
	r.P50, r.P99, r.Max = q(0.50), q(0.99), all[len(all)-1]
	return r
}

// HoldIdle opens n connections to a stream URL (as for BenchFanout; a
// query without a subscription is kept as it is) that stay open, answering
// pings and discarding frames, until closeAll is called or ctx ends. It is
// for measuring what idle connections cost a server.
func HoldIdle(ctx context.Context, streamURL string, opts *websocket.DialOptions, n int) (closeAll func(), err error) {
	conns, err := dialN(ctx, streamURL, opts, n)
	if err != nil {
		return nil, err
	}
	rctx, cancel := context.WithCancel(ctx)
	var wg sync.WaitGroup
	for _, c := range conns {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				if _, _, err := c.Read(rctx); err != nil {
					return
				}
			}
		}()
	}
	var once sync.Once
	return func() {
		once.Do(func() {
			cancel()
			closeAllConns(conns)
			wg.Wait()
		})
	}, nil
}

// readInto reads one message into buf.
func readInto(c *websocket.Conn, buf []byte) ([]byte, error) {
	_, r, err := c.Reader(context.Background())
	if err != nil {
		return buf, err
	}
	for {
		if len(buf) == cap(buf) {
			buf = append(buf, 0)[:len(buf)]
		}
		n, err := r.Read(buf[len(buf):cap(buf)])
		buf = buf[:len(buf)+n]
		if err == io.EOF {
			return buf, nil
		}
		if err != nil {
			return buf, err
		}
	}
}

// deltaTime returns the time of a text-delta event frame, as the server
// encodes it, and how many deltas it carries (its "deltas", 1 without);
// ok is false for any other frame.
func deltaTime(b []byte) (t time.Time, n int, ok bool) {
	if !bytes.HasPrefix(b, []byte(`{"type":"event",`)) || !bytes.Contains(b, []byte(`,"kind":"text-delta",`)) {
		return time.Time{}, 0, false
	}
	_, rest, found := bytes.Cut(b, []byte(`,"time":"`))
	if !found {
		return time.Time{}, 0, false
	}
	end := bytes.IndexByte(rest, '"')
	if end < 0 {
		return time.Time{}, 0, false
	}
	t, err := time.Parse(time.RFC3339Nano, string(rest[:end]))
	if err != nil {
		return time.Time{}, 0, false
	}
	n = 1
	if v, ok := bytes.CutPrefix(rest[end+1:], []byte(`,"deltas":`)); ok {
		if i := bytes.IndexByte(v, ','); i > 0 {
			if m, err := strconv.Atoi(string(v[:i])); err == nil && m > 0 {
				n = m
			}
		}
	}
	return t, n, true
}

func withSubscription(s string) (string, error) {
	u, err := url.Parse(s)
	if err != nil {
		return "", fmt.Errorf("stream: bench: %w", err)
	}
	q := u.Query()
	if q.Get("session") == "" && q.Get("agent") == "" && q.Get("all") == "" {
		q.Set("all", "1")
		u.RawQuery = q.Encode()
	}
	return u.String(), nil
}

// dialN opens n connections, a few at a time, and waits for each one's
// subscription to be acknowledged if its URL has one.
func dialN(ctx context.Context, streamURL string, opts *websocket.DialOptions, n int) ([]*websocket.Conn, error) {
	u, err := url.Parse(streamURL)
	if err != nil {
		return nil, fmt.Errorf("stream: bench: %w", err)
	}
	q := u.Query()
	subscribed := q.Get("session") != "" || q.Get("agent") != "" || q.Get("all") != ""
	conns := make([]*websocket.Conn, n)
	errs := make(chan error, n)
	sem := make(chan struct{}, 32)
	var wg sync.WaitGroup
	for i := range conns {
		wg.Add(1)
		sem <- struct{}{}
		go func() {
			defer wg.Done()
			defer func() { <-sem }()
			c, _, err := websocket.Dial(ctx, streamURL, opts)
			if err != nil {
				errs <- fmt.Errorf("stream: bench: dial %d: %w", i, err)
				return
			}
			c.SetReadLimit(-1)
			conns[i] = c
			if !subscribed {
				return
			}
			_, b, err := c.Read(ctx)
			if err != nil {
				errs <- fmt.Errorf("stream: bench: connection %d: %w", i, err)
				return
			}
			var f struct{ Type, Error string }
			if json.Unmarshal(b, &f) != nil || f.Type != "subscribed" {
				errs <- fmt.Errorf("stream: bench: connection %d: not subscribed: %s", i, b)
			}
		}()
	}
	wg.Wait()
	close(errs)
	if err := <-errs; err != nil {
		closeAllConns(conns)
		return nil, err
	}
	return conns, nil
}

func closeAllConns(conns []*websocket.Conn) {
	for _, c := range conns {
		if c != nil {
			c.CloseNow()
		}
	}
}
