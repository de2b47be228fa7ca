package cli

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"time"

	"github.com/coder/websocket"

	"agentd/internal/gateway"
	"agentd/internal/gateway/stream"
)

// benchGateway measures the API on TCP of an agentd serve child listening
// at base (http://host:port), with its token from the data directory:
// POST …/messages?wait=true against the in-process turn, text-delta
// fan-out to many WebSocket subscribers, and what idle WebSocket
// connections cost the child's memory (pid).
func benchGateway(ctx context.Context, dir, base string, pid int, res *BenchResult, c benchConfig) error {
	toks, err := gateway.OpenTokens(dir, nil)
	if err != nil {
		return fmt.Errorf("bench: gateway token: %w", err)
	}
	tok, err := toks.Token()
	if err != nil {
		return fmt.Errorf("bench: gateway token: %w", err)
	}
	auth := http.Header{"Authorization": {"Bearer " + tok}}
	hc := &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: 64}}
	post := func(ctx context.Context, addr, text string) error {
		body, _ := json.Marshal(map[string]string{"text": text})
		req, err := http.NewRequestWithContext(ctx, "POST", base+"/v1/sessions/"+addr+"/messages?wait=true", bytes.NewReader(body))
		if err != nil {
			return err
		}
		req.Header = auth.Clone()
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

	// The same two-step turn as the in-process latency figure, through
	// HTTP on loopback and agentd serve's own process.
	var lat []time.Duration
	for i := 0; i < c.turns; i++ {
		t0 := time.Now()
		if err := post(ctx, fmt.Sprintf("bench/http-%d", i/20), "tool please"); err != nil {
			return fmt.Errorf("bench: POST messages?wait=true: %w", err)
		}
		lat = append(lat, time.Since(t0))
	}
	res.HTTPWaitP50ms = pct(lat, 50)
	res.HTTPWaitOverheadMS = res.HTTPWaitP50ms - res.TurnP50ms

	// Fan-out: every subscriber follows the fan agent, whose replies stream
	// in 20 pieces 10 ms apart (benchScript).
	wsURL := "ws" + strings.TrimPrefix(base, "http") + "/v1/stream?agent=fan"
	dial := &websocket.DialOptions{HTTPHeader: auth}
	n := 0
	fr, err := stream.BenchFanout(ctx, wsURL, dial, c.subscribers, c.fanoutEvents, func(ctx context.Context) (int, error) {
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

	// Idle connections, each subscribed to a session of its own.
	before := rssMB(pid)
	closeAll, err := stream.HoldIdle(ctx, "ws"+strings.TrimPrefix(base, "http")+"/v1/stream?agent=idle", dial, c.idleConns)
	if err != nil {
		return fmt.Errorf("bench: idle connections: %w", err)
	}
	time.Sleep(2 * time.Second)
	res.WSIdleConns = c.idleConns
	res.WSIdleRSSMB = rssMB(pid)
	res.WSIdleBaseRSSMB = before
	closeAll()
	return nil
}

func ms(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }
