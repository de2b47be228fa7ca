package main

import (
	"context"
	"fmt"
	"math/rand/v2"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"agentd/internal/event"
	"agentd/internal/gateway"
)

// TestIdentityKillDelivery kills a node (SIGKILL) at random points while
// turns end and their lifecycles are queued and delivered to an identity
// server that stays up, then lets a clean node finish: counted at the
// server, outside the killed process, every ended turn is logged exactly
// once, in the order the turns ran. AGENTD_KILLS/2 kills (default 10).
func TestIdentityKillDelivery(t *testing.T) {
	kills := killCount(t, 10, 2, 3)
	addr := fake(t, "match *\ndelay 5ms\nsay done {{last_user}}\n")
	srv := startIdentityServer(t, dataDir(t, nil), "127.0.0.1:0")
	dir := dataDir(t, map[string]string{"agents/a.yaml": openaiAgent(addr, "identity_server: "+srv.url()+"\n")})
	sock := filepath.Join(dir, "agentd.sock")

	// A first lifecycle is logged before any kill: the sweep that finds
	// the turns a crash kept from the queue starts from the first queued.
	d := serve(t, dir)
	if r := run(t, dir, "send", "a", "first"); r.code != 0 {
		t.Fatalf("send: %+v", r)
	}
	first := waitLogs(t, srv, dir, "a", 1, d)
	d.kill()

	var inputs []*input
	submit := func(ctx context.Context, c *gateway.Client) {
		for _, x := range inputs {
			if x.accepted {
				continue
			}
			if _, err := c.Submit(ctx, x.session, gateway.MessageRequest{Text: x.text, IdempotencyKey: x.text}); err != nil {
				return
			}
			x.accepted = true
		}
	}
	rng := rand.New(rand.NewPCG(uint64(time.Now().UnixNano()), 19))
	for k := range kills {
		d := serve(t, dir)
		c := gateway.NewUnixClient(sock)
		for i := range 4 {
			inputs = append(inputs, &input{session: "a/main", text: fmt.Sprintf("m-%d-%d", k, i)})
		}
		ctx, cancel := context.WithCancel(context.Background())
		done := make(chan struct{})
		go func() { submit(ctx, c); close(done) }()
		time.Sleep(time.Duration(20+rng.IntN(150)) * time.Millisecond)
		d.kill()
		cancel()
		<-done
	}

	d = serve(t, dir)
	c := gateway.NewUnixClient(sock)
	submit(context.Background(), c)
	var turns []int
	deadline := time.Now().Add(120 * time.Second)
	for {
		page, err := c.Events(context.Background(), "a/main", 0, 10000, 0)
		if err != nil {
			t.Fatal(err)
		}
		turns = turns[:0]
		for _, e := range page.Events {
			if e.Kind == event.TurnEnd {
				turns = append(turns, int(e.Turn))
			}
		}
		if len(turns) >= len(inputs) {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("%d of %d turns ended after 120s\n%s", len(turns), len(inputs), d.out.String())
		}
		time.Sleep(200 * time.Millisecond)
	}
	turns = append(first, turns...)
	logged := waitLogs(t, srv, dir, "a", len(turns), d)
	slices.Sort(turns)
	if !slices.Equal(logged, turns) {
		t.Errorf("the server logged turns %v; want each ended turn once, in order: %v\nnode:\n%s", logged, turns, d.out.String())
	}
	d.stop(t)
}
