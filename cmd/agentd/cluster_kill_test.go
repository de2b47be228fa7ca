package main

import (
	"cmp"
	"context"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"agentd/internal/app"
	"agentd/internal/gateway"
	"agentd/internal/store/postgres/pgtest"
)

// clusterNode is one agentd serve of a cluster test, on its own data
// directory and the cluster's database.
type clusterNode struct {
	dir string
	d   *daemon
	c   *gateway.Client
	id  string // its id in the node registry, new at each start
}

// start starts the node and learns its id from GET /v1/nodes.
func (n *clusterNode) start(t *testing.T) {
	t.Helper()
	n.d = serve(t, n.dir)
	if n.c == nil { // the socket's client outlives the node's restarts
		n.c = gateway.NewUnixClient(filepath.Join(n.dir, "agentd.sock"))
	}
	nodes, err := n.c.Nodes(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	for _, x := range nodes {
		if x.Self {
			n.id = x.ID
		}
	}
	if n.id == "" {
		t.Fatalf("GET /v1/nodes names no node as the one answering: %+v", nodes)
	}
}

// nodeKills is how many nodes the cluster kill test kills:
// AGENTD_NODE_KILLS, else 20 (3 with -short).
func nodeKills(t *testing.T) int {
	t.Helper()
	if testing.Short() {
		return 3
	}
	v := os.Getenv("AGENTD_NODE_KILLS")
	if v == "" {
		return 20
	}
	n, err := strconv.Atoi(v)
	if err != nil || n < 1 {
		t.Fatalf("AGENTD_NODE_KILLS: want a count, got %q", v)
	}
	return n
}

// A failover is a session whose lease a killed node held with input
// pending, and when that node died.
type failover struct {
	session int64
	killed  time.Time
	// restarted: the node came back on its data directory at once and
	// gave the dead node's leases up; else they expired (the lease TTL).
	restarted bool
}

// TestClusterKill proves that several nodes on one PostgreSQL database
// lose nothing and duplicate nothing when nodes die: three agentd serve
// share the database; clients send inputs, each with its idempotency
// key, to random nodes (an input a dying node did not acknowledge goes
// to another); random nodes are SIGKILLed at random moments and started
// again (as new nodes). Then every input was answered exactly once, the
// non-idempotent tool (an HTTP POST to a counter outside agentd) never
// ran twice for one input, and every session's sequence numbers are
// gapless. It prints the failover times: from a node's death to the next
// event of each session it was running with input pending, for a node
// that restarts at once on its data directory (it gives its predecessor's
// leases up) and for one that stays dead (its leases expire).
// AGENTD_NODE_KILLS sets the kills (default 20; run with 100 or more by
// hand), AGENTD_NODE_LEASE the lease TTL (default agentd's, 10s).
func TestClusterKill(t *testing.T) {
	db := pgtest.NewDB(t)
	kills := nodeKills(t)
	lease := cmp.Or(os.Getenv("AGENTD_NODE_LEASE"), "10s")
	cnt := newCounter(t)
	script := fmt.Sprintf(`match ^job
delay 60ms
call calculator {"expression": "6*7"}
---
delay 60ms
call http_fetch {"url": "http://%s/hit", "method": "POST", "body": "{{last_user}}"}
---
delay 60ms
say finished {{last_user}}
`, cnt.ln.Addr())
	addr := fake(t, script)
	files := map[string]string{
		"agentd.yaml":      "store:\n  lease_ttl: " + lease + "\ntools:\n  http_fetch:\n    allow_networks: [\"127.0.0.1/32\"]\n",
		"agents/work.yaml": openaiAgent(addr, "tools:\n  allow: [calculator, http_fetch]\n"),
	}
	nodes := make([]*clusterNode, 3)
	for i := range nodes {
		nodes[i] = &clusterNode{dir: dataDir(t, files)}
		pgDirs.Store(nodes[i].dir, db) // every node on the one database
		nodes[i].start(t)
	}
	// The registry lists the three, live, through the CLI too.
	r := run(t, nodes[0].dir, "nodes", "--json")
	for _, n := range nodes {
		mustContain(t, r.stdout, `"id":"`+n.id+`","name"`)
	}
	conn, err := pgx.Connect(context.Background(), db)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(context.Background())

	const nSessions = 8
	var (
		mu     sync.Mutex // guards inputs and their accepted
		inputs []*input
	)
	newInputs := func(n int) {
		mu.Lock()
		defer mu.Unlock()
		for range n {
			k := len(inputs)
			inputs = append(inputs, &input{session: fmt.Sprintf("work/c%d", k%nSessions), text: fmt.Sprintf("job-%d", k)})
		}
	}
	rng := rand.New(rand.NewPCG(uint64(time.Now().UnixNano()), 13))
	var rmu sync.Mutex // guards rng
	randN := func(n int) int { rmu.Lock(); defer rmu.Unlock(); return rng.IntN(n) }
	// submit sends each input not yet accepted to a random node, once per
	// call; an input a node fails (it died) is sent again, with its key,
	// by a later call.
	submit := func(ctx context.Context) {
		mu.Lock()
		todo := slices.Clone(inputs)
		mu.Unlock()
		for _, in := range todo {
			mu.Lock()
			done := in.accepted
			mu.Unlock()
			if done || ctx.Err() != nil {
				continue
			}
			c := nodes[randN(len(nodes))].c
			if _, err := c.Submit(ctx, in.session, gateway.MessageRequest{Text: in.text, IdempotencyKey: in.text}); err == nil {
				mu.Lock()
				in.accepted = true
				mu.Unlock()
			}
		}
	}

	// Clients: a new input every 100ms, and every input not yet accepted
	// sent again, to a random node, while nodes die.
	ctx, stopClients := context.WithCancel(context.Background())
	clients := make(chan struct{})
	go func() {
		defer close(clients)
		for ctx.Err() == nil {
			newInputs(1)
			submit(ctx)
			time.Sleep(100 * time.Millisecond)
		}
	}()
	var failovers []failover
	for k := range kills {
		time.Sleep(time.Duration(300+randN(1500)) * time.Millisecond)
		victim := nodes[randN(len(nodes))]
		victim.d.kill()
		killed := time.Now()
		rows, err := conn.Query(context.Background(), `SELECT l.session_id FROM agentd_leases l
			WHERE l.node_id = $1 AND l.expires_at > now()
			AND EXISTS (SELECT 1 FROM inbox i WHERE i.session_id = l.session_id AND i.state = 'pending')`, victim.id)
		if err != nil {
			t.Fatal(err)
		}
		ids, err := pgx.CollectRows(rows, pgx.RowTo[int64])
		if err != nil {
			t.Fatal(err)
		}
		// Every other kill, the node comes back as one that never ran on
		// its directory, as a node that stays dead does: its sessions wait
		// for its leases to expire.
		restarted := k%2 == 0
		if !restarted {
			if err := os.Remove(filepath.Join(victim.dir, app.NodeFile)); err != nil {
				t.Fatal(err)
			}
		}
		for _, id := range ids {
			failovers = append(failovers, failover{session: id, killed: killed, restarted: restarted})
		}
		victim.start(t)
		if k%10 == 9 {
			t.Logf("%d kills", k+1)
		}
	}
	stopClients()
	<-clients

	// Everything accepted, and every input not yet accepted sent again
	// with its key, must finish.
	for range 20 {
		submit(context.Background())
	}
	mu.Lock()
	for _, in := range inputs {
		if !in.accepted {
			t.Fatalf("input %s never accepted", in.text)
		}
	}
	mu.Unlock()
	want := map[string]int{}
	for _, in := range inputs {
		want[in.session]++
	}
	deadline := time.Now().Add(180 * time.Second)
	for {
		finished := true
		for s, n := range want {
			page, err := nodes[0].c.Events(context.Background(), s, 0, 10000, 0)
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
			for i, n := range nodes {
				t.Logf("node %d:\n%s", i, n.d.out.String())
			}
			t.Fatalf("turns still unfinished after 180s")
		}
		time.Sleep(200 * time.Millisecond)
	}
	for _, n := range nodes {
		n.d.stop(t)
	}

	st := openDataStore(t, nodes[0].dir)
	var sessions []string
	for s := range want {
		sessions = append(sessions, s)
	}
	slices.Sort(sessions)
	checkAnsweredOnce(t, st, sessions, inputs, cnt)

	// Failover: from a node's death to the next event of each session it
	// was running with input pending (a turn resumed or started by the
	// node that took the session over).
	took := map[bool][]time.Duration{}
	for _, f := range failovers {
		evs, err := st.Events(context.Background(), f.session, 0, 0)
		if err != nil {
			t.Fatal(err)
		}
		for _, e := range evs {
			if e.Time.After(f.killed) {
				took[f.restarted] = append(took[f.restarted], e.Time.Sub(f.killed))
				break
			}
		}
	}
	t.Logf("%d kills, %d inputs", kills, len(inputs))
	for _, restarted := range []bool{false, true} {
		how := "the node stays dead: its leases expire (lease " + lease + ")"
		if restarted {
			how = "the node restarts on its data directory at once"
		}
		d := took[restarted]
		if len(d) == 0 {
			t.Logf("failover, %s: no node died running a session with input pending", how)
			continue
		}
		slices.Sort(d)
		t.Logf("failover, %s: %d sessions, p50 %s, p90 %s, max %s", how, len(d),
			d[len(d)/2].Round(time.Millisecond), d[len(d)*9/10].Round(time.Millisecond), d[len(d)-1].Round(time.Millisecond))
	}
}
