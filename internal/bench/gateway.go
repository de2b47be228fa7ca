package bench

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"net/http"
	"path/filepath"
	"strings"
	"time"

	"github.com/coder/websocket"

	"agentd/internal/app"
	"agentd/internal/event"
	"agentd/internal/gateway"
	"agentd/internal/gateway/stream"
)

// runGateway measures the API on TCP of an agentd serve child listening
// at base (http://host:port), with its token from the data directory:
// POST …/messages?wait=true against the in-process turn, text-delta
// fan-out to many WebSocket subscribers, and what idle WebSocket
// connections cost the child's memory (pid).
func runGateway(ctx context.Context, dir, base string, pid int, res *Result, c config) error {
	auth, post, err := poster(dir, base)
	if err != nil {
		return err
	}
	// Idle connections first, while the process holds only what start-up left.
	if err := runIdle(ctx, base, auth, pid, res, c); err != nil {
		return err
	}
	lat, err := waitTurns(ctx, post, c.turns)
	if err != nil {
		return err
	}
	res.ServeWaitP50ms = pct(lat, 50)

	// The same through the local socket of the same process: no TCP, no
	// token check.
	uc := gateway.NewUnixClient(filepath.Join(dir, app.SocketFile))
	lat = lat[:0]
	for i := 0; i < c.turns; i++ {
		t0 := time.Now()
		_, end, err := uc.Stream(ctx, fmt.Sprintf("bench/unix-%d", i/20), gateway.MessageRequest{Text: "tool please"}, func(event.Event) error { return nil })
		if err == nil && end.Status != "done" {
			err = errors.New(end.Reason)
		}
		if err != nil {
			return fmt.Errorf("bench: messages over the socket: %w", err)
		}
		lat = append(lat, time.Since(t0))
	}
	res.UnixWaitP50ms = pct(lat, 50)
	return runFanout(ctx, base, auth, post, res, c)
}

// postFunc posts a message to the session at addr (agent/key) and waits
// for the turn's reply, which must be done.
type postFunc func(ctx context.Context, addr, text string) error

// poster returns the token header of the gateway at base (its token
// in dir) and a function that posts a message and waits for the reply.
func poster(dir, base string) (http.Header, postFunc, error) {
	tok, err := gatewayToken(dir)
	if err != nil {
		return nil, nil, err
	}
	auth := http.Header{"Authorization": {"Bearer " + tok}}
	return auth, newPoster(base, auth, &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: 64}}), nil
}

// gatewayToken reads the gateway's token from the data directory dir.
func gatewayToken(dir string) (string, error) {
	toks, err := gateway.OpenTokens(dir, nil)
	if err != nil {
		return "", fmt.Errorf("bench: gateway token: %w", err)
	}
	tok, err := toks.Token()
	if err != nil {
		return "", fmt.Errorf("bench: gateway token: %w", err)
	}
	return tok, nil
}

// newPoster returns a postFunc that sends POST …/messages?wait=true to
// the API at base (http://host:port, or http://agentd through hc's unix
// socket) with the headers auth (nil: none).
func newPoster(base string, auth http.Header, hc *http.Client) postFunc {
	return func(ctx context.Context, addr, text string) error {
		body, _ := json.Marshal(map[string]string{"text": text})
		req, err := http.NewRequestWithContext(ctx, "POST", base+"/v1/sessions/"+addr+"/messages?wait=true", bytes.NewReader(body))
		if err != nil {
			return err
		}
		if auth != nil {
			req.Header = auth.Clone()
		}
		req.Header.Set("Content-Type", "application/json")
		resp, err := hc.Do(req)
		if err != nil {
			return err
		}
		defer resp.Body.Close()
		var out gateway.MessageResponse
		if err := json.NewDecoder(resp.Body).Decode(&out); err != nil {
			return err
		}
		if resp.StatusCode != 200 || out.End == nil || out.End.Status != "done" {
			return fmt.Errorf("%s: %+v", resp.Status, out.End)
		}
		return nil
	}
}

// wsURL is the stream URL of the API at base (http://…) subscribed to an
// agent's sessions.
func wsURL(base, agent string) string {
	return "ws" + strings.TrimPrefix(base, "http") + "/v1/stream?agent=" + agent
}

// waitTurns times n two-step turns (the in-process latency figure's)
// posted with wait=true, a fresh session every 20 turns.
func waitTurns(ctx context.Context, post postFunc, n int) ([]time.Duration, error) {
	var lat []time.Duration
	for i := 0; i < n; i++ {
		t0 := time.Now()
		if err := post(ctx, fmt.Sprintf("bench/http-%d", i/20), "tool please"); err != nil {
			return nil, fmt.Errorf("bench: POST messages?wait=true: %w", err)
		}
		lat = append(lat, time.Since(t0))
	}
	return lat, nil
}

// runFanout measures the WebSocket stream of the gateway at base.
func runFanout(ctx context.Context, base string, auth http.Header, post postFunc, res *Result, c config) error {
	// Fan-out: every subscriber follows the fan agent, whose replies stream
	// in 20 pieces 10 ms apart (fakeScript).
	dial := &websocket.DialOptions{HTTPHeader: auth}
	n := 0
	fr, err := stream.BenchFanout(ctx, wsURL(base, "fan"), dial, c.subscribers, c.fanoutEvents, func(ctx context.Context) (int, error) {
		n++
		if err := post(ctx, fmt.Sprintf("fan/f-%d", n/20), "fan out"); err != nil {
			return 0, err
		}
		return 20, nil
	})
	if err != nil {
		return fmt.Errorf("bench: fan-out: %w", err)
	}
	res.WSSubscribers = c.subscribers
	res.WSFanoutP50ms, res.WSFanoutP99ms = ms(fr.P50), ms(fr.P99)
	return nil
}

// runIdle measures what idle WebSocket connections, each subscribed to
// an agent that has no traffic, cost the memory of the process pid.
func runIdle(ctx context.Context, base string, auth http.Header, pid int, res *Result, c config) error {
	before := rssMB(pid)
	closeAll, err := stream.HoldIdle(ctx, wsURL(base, "idle"),
		&websocket.DialOptions{HTTPHeader: auth}, c.idleConns)
	if err != nil {
		return fmt.Errorf("bench: idle connections: %w", err)
	}
	time.Sleep(2 * c.settle)
	res.WSIdleConns = c.idleConns
	res.WSIdleRSSMB = rssMB(pid)
	res.WSIdleBaseRSSMB = before
	closeAll()
	return nil
}

func ms(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }

// runGatewayInProcess times the latency turns as POST …/messages?wait=true
// over TCP with the token, against the gateway of the in-process node: the
// gateway's own cost over the in-process figure.
func runGatewayInProcess(ctx context.Context, a *app.App, dir string, res *Result, c config) error {
	srv, err := a.API(ctx)
	if err != nil {
		return err
	}
	toks, err := gateway.OpenTokens(dir, &gateway.TokenOptions{Create: true})
	if err != nil {
		return err
	}
	sctx, stop := context.WithCancel(ctx)
	addrc := make(chan string, 1)
	done := make(chan error, 1)
	go func() {
		done <- srv.ServeTCP(sctx, "127.0.0.1:0", &gateway.TCPOptions{Auth: gateway.AuthOptions{Tokens: toks}}, func(a net.Addr) { addrc <- a.String() })
	}()
	defer func() { stop(); <-done }()
	var base string
	select {
	case base = <-addrc:
	case err := <-done:
		return fmt.Errorf("bench: gateway: %w", err)
	}
	_, post, err := poster(dir, "http://"+base)
	if err != nil {
		return err
	}
	lat, err := waitTurns(ctx, post, c.turns)
	if err != nil {
		return err
	}
	res.HTTPWaitP50ms = pct(lat, 50)
	res.HTTPWaitOverheadMS = res.HTTPWaitP50ms - res.TurnP50ms
	return nil
}
