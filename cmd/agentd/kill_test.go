package main

import (
	"context"
	"fmt"
	"io"
	"math/rand/v2"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"agentd/internal/app"
	"agentd/internal/event"
	"agentd/internal/gateway"
)

// TestKillRestart proves durability: it SIGKILLs agentd serve at random
// points during scripted multi-step turns and restarts it, then checks that
// every accepted input was answered exactly once, that the non-idempotent
// tool (an HTTP POST to a counter) never ran twice for one input, and that
// the database is intact. AGENTD_KILLS sets the number of kills (default
// 30; run with 200 or more by hand).
func TestKillRestart(t *testing.T) {
	kills := killCount(t, 30, 1, 5)

	// The side-effect counter: a POST per run of the non-idempotent tool.
	cnt := newCounter(t)
	ln := cnt.ln

	// Three model steps per turn: an idempotent tool, the non-idempotent
	// one, then the answer; each step takes a little while so kills land
	// in every phase.
	script := fmt.Sprintf(`match ^job
delay 15ms
call calculator {"expression": "6*7"}
---
delay 15ms
call http_fetch {"url": "http://%s/hit", "method": "POST", "body": "{{last_user}}"}
---
delay 15ms
say finished {{last_user}}
`, ln.Addr())
	addr := fake(t, script)
	dir := dataDir(t, map[string]string{
		"agentd.yaml":      "tools:\n  http_fetch:\n    allow_networks: [\"127.0.0.1/32\"]\n",
		"agents/work.yaml": openaiAgent(addr, "tools:\n  allow: [calculator, http_fetch]\n"),
	})
	sock := filepath.Join(dir, "agentd.sock")

	var inputs []*input
	next := 0
	newInputs := func(n int) {
		for i := 0; i < n; i++ {
			inputs = append(inputs, &input{session: fmt.Sprintf("work/s%d", next%4), text: fmt.Sprintf("job-%d", next)})
			next++
		}
	}
	// submit sends every input not yet accepted, with its idempotency key,
	// until the daemon goes away.
	submit := func(ctx context.Context, c *gateway.Client) {
		for _, in := range inputs {
			if in.accepted {
				continue
			}
			_, err := c.Submit(ctx, in.session, gateway.MessageRequest{Text: in.text, IdempotencyKey: in.text})
			if err != nil {
				return
			}
			in.accepted = true
		}
	}

	rng := rand.New(rand.NewPCG(uint64(time.Now().UnixNano()), 7))
	for k := 0; k < kills; k++ {
		d := serve(t, dir)
		c := gateway.NewUnixClient(sock)
		newInputs(2)
		ctx, cancel := context.WithCancel(context.Background())
		done := make(chan struct{})
		go func() { submit(ctx, c); close(done) }()
		time.Sleep(time.Duration(rng.IntN(150)) * time.Millisecond)
		d.kill()
		cancel()
		<-done
	}
	t.Logf("%d kills, %d inputs", kills, len(inputs))

	// A last, clean run: everything accepted (and everything not yet
	// accepted, resubmitted with the same keys) must finish.
	d := serve(t, dir)
	c := gateway.NewUnixClient(sock)
	submit(context.Background(), c)
	for _, in := range inputs {
		if !in.accepted {
			t.Fatalf("input %s never accepted", in.text)
		}
	}
	deadline := time.Now().Add(120 * time.Second)
	want := map[string]int{}
	for _, in := range inputs {
		want[in.session]++
	}
	for {
		finished := true
		for s, n := range want {
			page, err := c.Events(context.Background(), s, 0, 10000, 0)
			if err != nil {
				t.Fatal(err)
			}
			if countEnds(page.Events) < n {
				finished = false
			}
		}
		if finished {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("turns still unfinished after 120s\n%s", d.out.String())
		}
		time.Sleep(200 * time.Millisecond)
	}
	d.stop(t)

	// Check the log: one input event, one turn end and the right reply per
	// input; tool runs as the rules allow.
	st := openDataStore(t, dir)
	integrity(t, st)
	// The search index caught up with every answer despite the kills.
	if found := searchAll(t, st, "work", "finished"); len(found) != len(inputs) {
		t.Errorf("search finds %d answers, want %d", len(found), len(inputs))
	}
	var sessions []string
	for i := 0; i < 4; i++ {
		sessions = append(sessions, fmt.Sprintf("work/s%d", i))
	}
	checkAnsweredOnce(t, st, sessions, inputs, cnt)
}

// checkAnsweredOnce checks the log of a kill test's sessions: their
// sequence numbers gapless, one input event, one turn end and the right
// reply per input, and the non-idempotent tool (counted by cnt) run at
// most once per input, and never without a result unless recorded as
// interrupted.
func checkAnsweredOnce(t *testing.T, st app.Store, sessions []string, inputs []*input, cnt *counter) {
	t.Helper()
	inputsSeen := map[string]int{}
	ends := map[string]int{}
	interrupted := map[string]bool{}
	for _, addr := range sessions {
		agentID, key, _ := strings.Cut(addr, "/")
		sess, err := st.SessionByAddress(context.Background(), agentID, key)
		if err != nil {
			t.Fatal(err)
		}
		evs, err := st.Events(context.Background(), sess.ID, 0, 0)
		if err != nil {
			t.Fatal(err)
		}
		for i, e := range evs {
			if e.Seq != int64(i+1) {
				t.Fatalf("%s: event %d has sequence number %d: a gap", addr, i+1, e.Seq)
			}
		}
		turnText := map[int64]string{}
		for _, e := range evs {
			switch e.Kind {
			case event.Input:
				var d event.InputData
				e.Decode(&d)
				inputsSeen[d.Text]++
				turnText[e.Turn] = d.Text
			case event.ToolResult:
				var d event.ToolResultData
				e.Decode(&d)
				if d.Interrupted && d.Name == "http_fetch" {
					interrupted[turnText[e.Turn]] = true
				}
			case event.TurnEnd:
				var d event.TurnEndData
				e.Decode(&d)
				text := turnText[e.Turn]
				ends[text]++
				if d.Status != event.StatusDone || d.Reply != "finished "+text {
					t.Errorf("%s ended %s with %q (%s)", text, d.Status, d.Reply, d.Reason)
					for _, x := range evs {
						if x.Turn == e.Turn {
							t.Logf("  %d %s %s", x.Seq, x.Kind, x.Data)
						}
					}
				}
			}
		}
	}
	cnt.mu.Lock()
	defer cnt.mu.Unlock()
	hits := cnt.hits
	var interruptedN int
	for _, in := range inputs {
		if inputsSeen[in.text] != 1 || ends[in.text] != 1 {
			t.Errorf("%s: %d input events and %d turn ends, want 1 and 1", in.text, inputsSeen[in.text], ends[in.text])
		}
		switch n := hits[in.text]; {
		case n > 1:
			t.Errorf("%s: the non-idempotent tool ran %d times", in.text, n)
		case n == 0 && !interrupted[in.text]:
			t.Errorf("%s: the non-idempotent tool never ran and was not recorded as interrupted", in.text)
		}
		if interrupted[in.text] {
			interruptedN++
		}
	}
	t.Logf("%d inputs answered once each; %d non-idempotent calls recorded as interrupted", len(inputs), interruptedN)
}

func countEnds(evs []event.Event) int {
	n := 0
	for _, e := range evs {
		if e.Kind == event.TurnEnd {
			n++
		}
	}
	return n
}

type input struct {
	session, text string
	accepted      bool
}

// killCount is how many times a kill/restart test kills agentd: def, or
// AGENTD_KILLS divided by div, or short with -short.
func killCount(t *testing.T, def, div, short int) int {
	t.Helper()
	if testing.Short() {
		return short
	}
	v := os.Getenv("AGENTD_KILLS")
	if v == "" {
		return def
	}
	n, err := strconv.Atoi(v)
	if err != nil {
		t.Fatalf("AGENTD_KILLS: %v", err)
	}
	return max(n/div, 1)
}

// counter counts side effects outside agentd: each POST body is one,
// and ids counts them by their X-Agentd-Delivery header (a job's
// delivery id; "" for none).
type counter struct {
	ln   net.Listener
	mu   sync.Mutex
	hits map[string]int
	ids  map[string]int
}

func newCounter(t *testing.T) *counter {
	t.Helper()
	c := &counter{hits: map[string]int{}, ids: map[string]int{}}
	var err error
	if c.ln, err = net.Listen("tcp", "127.0.0.1:0"); err != nil {
		t.Fatal(err)
	}
	srv := &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		c.mu.Lock()
		c.hits[string(b)]++
		c.ids[r.Header.Get("X-Agentd-Delivery")]++
		c.mu.Unlock()
		io.WriteString(w, "recorded "+string(b))
	})}
	go srv.Serve(c.ln)
	t.Cleanup(func() { srv.Close() })
	return c
}
