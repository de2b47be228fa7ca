package main

import (
	"context"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"agentd/internal/event"
	"agentd/internal/gateway"
	"agentd/internal/mcpdemo"
)

// TestKillRestartLifecycle SIGKILLs agentd serve while turns run the
// message lifecycle against the demo MCP server — a context tool, an
// action whose hook is signed and submitted, a post-process tool — and
// checks, after a clean restart, that every input was answered once and
// that no call with a side effect (quote, submit, remember; counted
// outside agentd) ran twice, a missing one being recorded as interrupted.
// AGENTD_KILLS/3 kills (default 10).
func TestKillRestartLifecycle(t *testing.T) {
	kills := killCount(t, 10, 3, 3)
	cnt := newCounter(t) // "quote 12", "remember 12", "submit q-…"
	ln := cnt.ln

	addr := fake(t, "match ^job\ndelay 10ms\nsay finished {{last_user}}\n")
	agentFile := openaiAgent(addr, fmt.Sprintf(`mcp_servers:
  demo:
    command: %s
    args: [mcp, demo, --record-url, "http://%s/"]
`, agentdBin, ln.Addr()))
	dir := dataDir(t, map[string]string{"agents/shop.yaml": agentFile})
	sock := filepath.Join(dir, "agentd.sock")

	type in struct {
		session, text string
		accepted      bool
	}
	var inputs []*in
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
	rng := rand.New(rand.NewPCG(uint64(time.Now().UnixNano()), 11))
	n := 0
	for k := 0; k < kills; k++ {
		d := serve(t, dir)
		c := gateway.NewUnixClient(sock)
		for i := 0; i < 6; i++ {
			inputs = append(inputs, &in{session: fmt.Sprintf("shop/s%d", n%3), text: fmt.Sprintf("job-%d", n)})
			n++
		}
		ctx, cancel := context.WithCancel(context.Background())
		done := make(chan struct{})
		go func() { submit(ctx, c); close(done) }()
		time.Sleep(time.Duration(10+rng.IntN(120)) * time.Millisecond)
		d.kill()
		cancel()
		<-done
	}

	d := serve(t, dir)
	c := gateway.NewUnixClient(sock)
	submit(context.Background(), c)
	want := map[string]int{}
	for _, x := range inputs {
		if !x.accepted {
			t.Fatalf("input %s never accepted", x.text)
		}
		want[x.session]++
	}
	deadline := time.Now().Add(120 * time.Second)
	for {
		finished := true
		for s, n := range want {
			page, err := c.Events(context.Background(), s, 0, 10000, 0)
			if err != nil {
				t.Fatal(err)
			}
			finished = finished && countEnds(page.Events) >= n
		}
		if finished {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("turns unfinished after 120s\n%s", d.out.String())
		}
		time.Sleep(200 * time.Millisecond)
	}
	d.stop(t)

	st := openDataStore(t, dir)
	cnt.mu.Lock()
	defer cnt.mu.Unlock()
	hits := cnt.hits
	var interrupted int
	for s := 0; s < 3; s++ {
		sess, err := st.SessionByAddress(context.Background(), "shop", fmt.Sprintf("s%d", s))
		if err != nil {
			t.Fatal(err)
		}
		evs, err := st.Events(context.Background(), sess.ID, 0, 0)
		if err != nil {
			t.Fatal(err)
		}
		type turn struct {
			text    string
			ends    int
			results map[string]event.LifecycleData // by phase
		}
		turns := map[int64]*turn{}
		get := func(id int64) *turn {
			if turns[id] == nil {
				turns[id] = &turn{results: map[string]event.LifecycleData{}}
			}
			return turns[id]
		}
		for _, e := range evs {
			tr := get(e.Turn)
			switch e.Kind {
			case event.Input:
				var d event.InputData
				e.Decode(&d)
				if tr.text != "" {
					t.Errorf("turn %d has two inputs", e.Turn)
				}
				tr.text = d.Text
			case event.Lifecycle:
				var l event.LifecycleData
				json.Unmarshal(e.Data, &l)
				if len(l.Start) == 0 && l.Phase != event.PhaseApproval {
					if _, dup := tr.results[l.Phase]; dup {
						t.Errorf("turn %d: two %s results", e.Turn, l.Phase)
					}
					tr.results[l.Phase] = l
				}
			case event.TurnEnd:
				var d event.TurnEndData
				e.Decode(&d)
				tr.ends++
				if d.Status != event.StatusDone || d.Reply != "finished "+tr.text {
					t.Errorf("turn %d (%s) ended %s: %q %s", e.Turn, tr.text, d.Status, d.Reply, d.Reason)
				}
			}
		}
		for id, tr := range turns {
			if tr.text == "" {
				continue // events of no turn
			}
			if tr.ends != 1 {
				t.Errorf("%s: %d turn ends", tr.text, tr.ends)
			}
			msg := strconv.FormatInt(id, 10)
			order, _ := mcpdemo.OrderFor("finished " + tr.text)
			for _, c := range []struct{ phase, key string }{
				{event.PhaseAction, "quote " + msg},
				{event.PhaseHook, "submit " + order},
				{event.PhasePostprocess, "remember " + msg},
			} {
				r, logged := tr.results[c.phase]
				switch h := hits[c.key]; {
				case h > 1:
					t.Errorf("%s: %q ran %d times", tr.text, c.key, h)
				case h == 0 && c.phase == event.PhaseHook && tr.results[event.PhaseAction].Interrupted:
					// The action was cut off, so no hook was asked for.
				case h == 0 && !(logged && r.Interrupted):
					t.Errorf("%s: %q never ran and is not recorded as interrupted (%+v)", tr.text, c.key, r)
				}
				if r.Interrupted {
					interrupted++
				}
				if logged && !r.Interrupted && strings.HasPrefix(r.Output, "agentd restarted") {
					t.Errorf("%s: odd result %+v", tr.text, r)
				}
			}
		}
	}
	t.Logf("%d kills, %d inputs answered once each; %d side-effect calls recorded as interrupted", kills, len(inputs), interrupted)
}
