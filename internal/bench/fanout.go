package bench

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"os"
	"time"

	"github.com/coder/websocket"

	"agentd/internal/gateway/stream"
)

// The fan-out as a client sees it: the subscribers run in a process of
// their own (`agentd bench fanout-clients`), and, where the machine has two
// CPUs or more, the server runs on one half of them and the subscribers
// (and the bench, which drives the fake model) on the other, so that
// neither side's work is counted as the other's latency.

// FanoutClients runs the subscribers of a fan-out: it reads {"url":
// "ws://…", "token": "…", "subscribers": N} from in, connects them,
// answers {"ready": true} on out, then answers each {"wait": E} with
// {"ok": true} once every subscriber has received E text-delta events, and
// {"done": true} with what they measured (a stream.FanoutResult), and
// ends. It ends too when in closes or ctx ends.
func FanoutClients(ctx context.Context, in io.Reader, out io.Writer) error {
	h := newHelperIO(in, out)
	var cfg struct {
		URL, Token  string
		Subscribers int
	}
	if err := h.dec.Decode(&cfg); err != nil {
		return fmt.Errorf("bench: fan-out clients: %w", err)
	}
	opts := &websocket.DialOptions{}
	if cfg.Token != "" {
		opts.HTTPHeader = http.Header{"Authorization": {"Bearer " + cfg.Token}}
	}
	s, err := stream.DialSubscribers(ctx, cfg.URL, opts, cfg.Subscribers)
	if err != nil {
		return h.fail(err)
	}
	defer s.Close()
	if err := h.enc.Encode(map[string]bool{"ready": true}); err != nil {
		return err
	}
	for {
		var cmd struct {
			Wait int
			Done bool
		}
		if err := h.dec.Decode(&cmd); err != nil {
			return nil // the bench went away
		}
		if cmd.Done {
			return h.enc.Encode(s.Close())
		}
		if err := s.Wait(ctx, cmd.Wait); err != nil {
			return h.fail(err)
		}
		if err := h.enc.Encode(map[string]bool{"ok": true}); err != nil {
			return err
		}
	}
}

// fanoutApart measures the fan-out from one server (the process pid,
// its stream at url, token its token or "") to c.subscribers subscribers
// in a process of their own: publish causes text-delta events on the
// stream and returns how many, and is called until each subscriber has
// had c.fanoutEvents. pinned says whether the server and the subscribers
// ran on CPUs of their own.
func fanoutApart(ctx context.Context, c config, pid int, url, token string,
	publish func(ctx context.Context) (int, error)) (r stream.FanoutResult, pinned bool, err error) {
	h, err := startHelper(ctx, c.exe, "fanout-clients",
		map[string]any{"url": url, "token": token, "subscribers": c.subscribers}, nil)
	if err != nil {
		return r, false, err
	}
	defer h.stop()
	if cpus, err := allowedCPUs(); err == nil && len(cpus) >= 2 {
		server, clients := cpus[:len(cpus)/2], cpus[len(cpus)/2:]
		pinned = pin(pid, server) == nil && pin(h.pid(), clients) == nil && pin(os.Getpid(), clients) == nil
		defer func() {
			pin(pid, cpus)
			pin(os.Getpid(), cpus)
		}()
	}
	for sent := 0; sent < c.fanoutEvents; {
		n, err := publish(ctx)
		if err != nil {
			return r, pinned, fmt.Errorf("bench: fan-out: %w", err)
		}
		sent += n
		if err := h.send(map[string]int{"wait": sent}); err != nil {
			return r, pinned, err
		}
		if err := h.recv(nil); err != nil {
			return r, pinned, err
		}
	}
	if err := h.send(map[string]bool{"done": true}); err != nil {
		return r, pinned, err
	}
	err = h.recv(&r)
	return r, pinned, err
}

// runFanoutApart measures the fan-out of agentd serve (pid, its API at
// base with token) to subscribers of the fan agent, whose replies stream
// in 20 pieces 10 ms apart, and the floor server's broadcast of the same
// pieces to as many, each with the subscribers in a process apart.
func runFanoutApart(ctx context.Context, c config, pid int, base, token string, post postFunc, fs *floorServer, res *Result) error {
	turn := 0
	r, pinned, err := fanoutApart(ctx, c, pid, wsURL(base, "fan"), token, func(ctx context.Context) (int, error) {
		turn++
		if err := post(ctx, fmt.Sprintf("fan/apart-%d", turn/20), "fan out"); err != nil {
			return 0, err
		}
		return fanPieces, nil
	})
	if err != nil {
		return err
	}
	res.FanoutP50ms, res.FanoutP99ms, res.FanoutPinned = ms(r.P50), ms(r.P99), pinned
	if deliveries := r.Events * r.Subscribers; deliveries > 0 {
		res.FanoutFramesSavedPct = 100 * float64(deliveries-r.Frames) / float64(deliveries)
	}
	r, _, err = fanoutApart(ctx, c, fs.h.pid(), fs.wsURL(), "", func(ctx context.Context) (int, error) {
		return fanPieces, fs.broadcast(ctx, fanPieces, fanGap)
	})
	if err != nil {
		return fmt.Errorf("bench: floor fan-out: %w", err)
	}
	res.FloorFanoutP50ms, res.FloorFanoutP99ms = ms(r.P50), ms(r.P99)
	return nil
}

// The fan agent's replies (fakeScript): 20 pieces 10 ms apart.
const (
	fanPieces = 20
	fanGap    = 10 * time.Millisecond
)
