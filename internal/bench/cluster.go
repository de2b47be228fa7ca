package bench

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	goruntime "runtime"
	"strings"
	"sync"
	"sync/atomic"
	"text/tabwriter"
	"time"

	"agentd/internal/app"
	"agentd/internal/event"
	"agentd/internal/extension"
	"agentd/internal/runtime"
	"agentd/internal/store"
	"agentd/internal/store/postgres"
)

// ClusterOptions say how Cluster measures.
type ClusterOptions struct {
	// Store is the PostgreSQL database to measure on (a postgres:// URL);
	// its agentd tables are written to. Required.
	Store string
	// Quick runs smaller counts, for CI. Default false.
	Quick bool
	// Nodes are the node counts of the throughput runs (default 1, 2, 3).
	Nodes []int
}

// ClusterResult is what Cluster measured. A figure of 0 was not measured;
// Skipped says why.
type ClusterResult struct {
	Store string `json:"store"` // without its password
	CPUs  int    `json:"cpus"`
	Quick bool   `json:"quick"`
	// TurnsPerS are durable turns a second (the echo model, Sessions
	// sessions at once), by node count: the nodes run in this process on
	// this machine, each with its own store and runtime, all on one
	// database.
	TurnsPerS map[int]float64 `json:"turns_per_s"`
	Sessions  int             `json:"sessions"`
	// Turn overhead (send to turn end, sequential, the echo model: what
	// agentd and its store cost a turn) on SQLite and on PostgreSQL, in
	// the same run.
	SQLiteTurnP50ms   float64 `json:"sqlite_turn_p50_ms"`
	SQLiteTurnP99ms   float64 `json:"sqlite_turn_p99_ms"`
	PostgresTurnP50ms float64 `json:"postgres_turn_p50_ms"`
	PostgresTurnP99ms float64 `json:"postgres_turn_p99_ms"`
	// Cross-node event delivery: from a commit's return on node B to its
	// last event on node A's bus (through NOTIFY and A's read of the
	// table).
	DeliveryP50ms float64 `json:"delivery_p50_ms"`
	DeliveryP99ms float64 `json:"delivery_p99_ms"`
	// An extension row's change reaching another node: from a PUT of a
	// control row on node A (Ext.Put) to node B's manager reporting that
	// version active (through NOTIFY, B's read of the row, its
	// activation).
	ExtPutToActiveP50ms float64 `json:"ext_put_to_active_p50_ms"`
	ExtPutToActiveP99ms float64 `json:"ext_put_to_active_p99_ms"`
	ExtPuts             int     `json:"ext_puts"`
	// Failover (a node's death to its sessions' next turn) is the
	// multi-node kill test's figure; this bench does not kill nodes.
	FailoverP50ms float64 `json:"failover_p50_ms,omitempty"`
	FailoverMaxms float64 `json:"failover_max_ms,omitempty"`
	// Skipped says which figures were not measured, and why.
	Skipped []string `json:"skipped,omitempty"`
}

// clusterConfig is one Cluster run's counts.
type clusterConfig struct {
	seqTurns, tpTurns, sessions, deliveries, extPuts int
}

// Cluster measures agentd on PostgreSQL: durable turns a second with 1, 2
// and 3 nodes on one database, turn overhead against SQLite in the same
// run, and how long another node takes to see a commit.
func Cluster(ctx context.Context, o *ClusterOptions) (*ClusterResult, error) {
	if o == nil || o.Store == "" {
		return nil, errors.New("bench: cluster: no store: give --store postgres://…")
	}
	c := clusterConfig{seqTurns: 1000, tpTurns: 10000, sessions: 50, deliveries: 2000, extPuts: 50}
	if o.Quick {
		c = clusterConfig{seqTurns: 100, tpTurns: 1000, sessions: 50, deliveries: 200, extPuts: 10}
	}
	nodes := o.Nodes
	if len(nodes) == 0 {
		nodes = []int{1, 2, 3}
	}
	res := &ClusterResult{Store: postgres.Redact(o.Store), CPUs: goruntime.NumCPU(), Quick: o.Quick,
		TurnsPerS: map[int]float64{}, Sessions: c.sessions}
	dir, err := os.MkdirTemp("", "agentd-bench-cluster-")
	if err != nil {
		return nil, err
	}
	defer os.RemoveAll(dir)

	lat, err := seqTurns(ctx, filepath.Join(dir, "sqlite"), app.StoreSQLite, c.seqTurns)
	if err != nil {
		return nil, fmt.Errorf("bench: cluster: sqlite: %w", err)
	}
	res.SQLiteTurnP50ms, res.SQLiteTurnP99ms = pct(lat, 50), pct(lat, 99)
	if lat, err = seqTurns(ctx, filepath.Join(dir, "postgres"), o.Store, c.seqTurns); err != nil {
		return nil, fmt.Errorf("bench: cluster: postgres: %w", err)
	}
	res.PostgresTurnP50ms, res.PostgresTurnP99ms = pct(lat, 50), pct(lat, 99)

	for _, n := range nodes {
		tps, err := clusterTurns(ctx, filepath.Join(dir, fmt.Sprintf("nodes%d", n)), o.Store, n, c)
		if err != nil {
			return nil, fmt.Errorf("bench: cluster: %d nodes: %w", n, err)
		}
		res.TurnsPerS[n] = tps
	}
	d, err := delivery(ctx, o.Store, c.deliveries)
	if err != nil {
		return nil, fmt.Errorf("bench: cluster: delivery: %w", err)
	}
	res.DeliveryP50ms, res.DeliveryP99ms = pct(d, 50), pct(d, 99)
	if d, err = extPutToActive(ctx, filepath.Join(dir, "ext"), o.Store, c.extPuts); err != nil {
		return nil, fmt.Errorf("bench: cluster: extension put to active: %w", err)
	}
	res.ExtPutToActiveP50ms, res.ExtPutToActiveP99ms, res.ExtPuts = pct(d, 50), pct(d, 99), c.extPuts
	res.Skipped = append(res.Skipped, "failover: measured by the multi-node kill test, which kills nodes")
	return res, nil
}

// openNode opens an agentd node on store in dir, with the echo agent.
func openNode(ctx context.Context, dir, storeURL string) (*app.App, error) {
	if err := os.MkdirAll(filepath.Join(dir, "agents"), 0o700); err != nil {
		return nil, err
	}
	if err := os.WriteFile(filepath.Join(dir, "agents", "echo.yaml"), []byte("name: Echo\nmodel:\n  provider: echo\n"), 0o600); err != nil {
		return nil, err
	}
	a, err := app.Open(ctx, dir, &app.Options{Store: storeURL})
	if err != nil {
		return nil, err
	}
	if err := a.Start(ctx); err != nil {
		a.Close(context.Background())
		return nil, err
	}
	return a, nil
}

// seqTurns runs n turns one after the other on a node of store and
// returns their latencies; a fresh session every 20 turns keeps the
// context the size of a conversation.
func seqTurns(ctx context.Context, dir, storeURL string, n int) ([]time.Duration, error) {
	a, err := openNode(ctx, dir, storeURL)
	if err != nil {
		return nil, err
	}
	defer a.Close(context.Background())
	run := fmt.Sprintf("%d", time.Now().UnixNano()) // sessions of their own on a database used before
	var lat []time.Duration
	for i := range n {
		t0 := time.Now()
		_, end, err := a.Runtime.Send(ctx, runtime.Input{Session: fmt.Sprintf("echo/seq-%s-%d", run, i/20), Text: "hello", Source: "bench"})
		if err == nil && end.Status != event.StatusDone {
			err = errors.New(end.Reason)
		}
		if err != nil {
			return nil, err
		}
		lat = append(lat, time.Since(t0))
	}
	return lat, nil
}

// clusterTurns runs c.tpTurns turns from c.sessions sessions at once on n
// nodes of store, each session on one node, and returns turns a second.
func clusterTurns(ctx context.Context, dir, storeURL string, n int, c clusterConfig) (float64, error) {
	var apps []*app.App
	defer func() {
		for _, a := range apps {
			a.Close(context.Background())
		}
	}()
	for i := range n {
		a, err := openNode(ctx, filepath.Join(dir, fmt.Sprint(i)), storeURL)
		if err != nil {
			return 0, err
		}
		apps = append(apps, a)
	}
	run := fmt.Sprintf("%d", time.Now().UnixNano())
	var next atomic.Int64
	var wg sync.WaitGroup
	errs := make(chan error, c.sessions)
	t0 := time.Now()
	for w := range c.sessions {
		rt := apps[w%n].Runtime
		wg.Go(func() {
			for k := 0; next.Add(1) <= int64(c.tpTurns); k++ {
				_, end, err := rt.Send(ctx, runtime.Input{Session: fmt.Sprintf("echo/tp-%s-%d-%d", run, w, k/20), Text: "hello", Source: "bench"})
				if err == nil && end.Status != event.StatusDone {
					err = errors.New(end.Reason)
				}
				if err != nil {
					errs <- err
					return
				}
			}
		})
	}
	wg.Wait()
	el := time.Since(t0)
	select {
	case err := <-errs:
		return 0, err
	default:
	}
	return float64(c.tpTurns) / el.Seconds(), nil
}

// delivery commits n batches of three events through one store (node B)
// and times each from the commit's return to its last event on another
// store's bus (node A), fed by A's listener; a delivery before the
// commit returned counts 0.
func delivery(ctx context.Context, storeURL string, n int) ([]time.Duration, error) {
	var opts *postgres.Options
	a, err := postgres.Open(ctx, storeURL, opts)
	if err != nil {
		return nil, err
	}
	defer a.Close()
	b, err := postgres.Open(ctx, storeURL, opts)
	if err != nil {
		return nil, err
	}
	defer b.Close()
	bus := event.NewBus()
	sub := bus.Subscribe(0, 4096)
	defer sub.Close()
	lctx, cancel := context.WithCancel(ctx)
	done := make(chan error, 1)
	go func() { done <- a.Listen(lctx, bus, nil) }()
	defer func() { cancel(); <-done }()
	for !a.Listening() {
		select {
		case <-ctx.Done():
			return nil, ctx.Err()
		case err := <-done:
			return nil, err
		case <-time.After(time.Millisecond):
		}
	}
	sess, _, err := b.Session(ctx, "echo", fmt.Sprintf("delivery-%d", time.Now().UnixNano()))
	if err != nil {
		return nil, err
	}
	var out []time.Duration
	timeout := time.NewTimer(time.Minute)
	defer timeout.Stop()
	for range n {
		batch := &store.Batch{Session: sess.ID}
		for _, s := range []string{"one", "two", "three"} {
			batch.Events = append(batch.Events, event.New(sess.ID, 1, event.Text, event.TextData{Text: s}))
		}
		if err := b.Commit(ctx, batch); err != nil {
			return nil, err
		}
		committed := time.Now()
		last := batch.Events[len(batch.Events)-1].Seq
		for got := false; !got; {
			select {
			case e, ok := <-sub.C:
				if !ok {
					return nil, fmt.Errorf("the bus dropped the subscription: %s", sub.Err())
				}
				got = e.Session == sess.ID && e.Seq == last
			case <-timeout.C:
				return nil, fmt.Errorf("event %d not delivered within a minute", last)
			}
		}
		out = append(out, max(0, time.Since(committed)))
		timeout.Reset(time.Minute)
	}
	return out, nil
}

// extPutToActive opens two nodes on store and puts a control row n times
// on node A (Ext.Put, a new value each time), timing each from the put's
// start to node B's manager reporting that version active.
func extPutToActive(ctx context.Context, dir, storeURL string, n int) ([]time.Duration, error) {
	a, err := openNode(ctx, filepath.Join(dir, "a"), storeURL)
	if err != nil {
		return nil, err
	}
	defer a.Close(context.Background())
	b, err := openNode(ctx, filepath.Join(dir, "b"), storeURL)
	if err != nil {
		return nil, err
	}
	defer b.Close(context.Background())
	name := fmt.Sprintf("bench-%d", time.Now().UnixNano()) // a row of its own on a database used before
	active := make(chan int64, n+1)                        // B's activations may come before A's Put returns
	b.Ext.Subscribe(func(s extension.Status) {
		if s.Type == "control" && s.Name == name && s.Active > 0 {
			select {
			case active <- s.Active:
			default:
			}
		}
	})
	if l, ok := b.Store.(interface{ Listening() bool }); ok {
		for !l.Listening() { // B hears of A's first change
			select {
			case <-ctx.Done():
				return nil, ctx.Err()
			case <-time.After(time.Millisecond):
			}
		}
	}
	defer a.Ext.Delete(context.Background(), "control", name, benchWho)
	var out []time.Duration
	timeout := time.NewTimer(time.Minute)
	defer timeout.Stop()
	for i := range n {
		doc := extension.Doc{Type: "control", Name: name, Spec: json.RawMessage(fmt.Sprintf(`{"kind": "number", "value": %d}`, i))}
		t0 := time.Now()
		st, err := a.Ext.Put(ctx, doc, benchWho)
		if err != nil {
			return nil, err
		}
		for v := int64(0); v < st.Version; {
			select {
			case v = <-active:
			case <-timeout.C:
				return nil, fmt.Errorf("version %d not active on the other node within a minute", st.Version)
			}
		}
		out = append(out, time.Since(t0))
		timeout.Reset(time.Minute)
	}
	return out, nil
}

// WriteTable writes the result for people.
func (r *ClusterResult) WriteTable(w io.Writer) error {
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintf(tw, "# agentd on PostgreSQL (%s), %d CPUs\nFIGURE\tVALUE\tTARGET\tWHAT\n", r.Store, r.CPUs)
	for _, n := range []int{1, 2, 3} {
		if v, ok := r.TurnsPerS[n]; ok {
			fmt.Fprintf(tw, "durable turns/s, %d node(s)\t%.0f\t\t%d sessions at once, echo model; nodes in one process on one machine\n", n, v, r.Sessions)
		}
	}
	fmt.Fprintf(tw, "turn p50 / p99, SQLite\t%.2f / %.2f ms\t\tsequential turns, echo model: agentd's overhead\n", r.SQLiteTurnP50ms, r.SQLiteTurnP99ms)
	fmt.Fprintf(tw, "turn p50 / p99, PostgreSQL\t%.2f / %.2f ms\t\tthe same turns on PostgreSQL\n", r.PostgresTurnP50ms, r.PostgresTurnP99ms)
	fmt.Fprintf(tw, "cross-node delivery p50 / p99\t%.2f / %.2f ms\t≤ 50 ms (p99)\tcommit on node B → event on node A's bus\n", r.DeliveryP50ms, r.DeliveryP99ms)
	fmt.Fprintf(tw, "extension put → active on another node p50 / p99\t%.2f / %.2f ms\tp50 reported; bound: a write + a NOTIFY round trip (delivery p50)\t"+
		"%d puts of a control row on node A until node B's manager reports the version active\n", r.ExtPutToActiveP50ms, r.ExtPutToActiveP99ms, r.ExtPuts)
	if r.FailoverP50ms > 0 {
		fmt.Fprintf(tw, "failover p50 / max\t%.0f / %.0f ms\t≤ 15 s\tnode death → its sessions' next turn\n", r.FailoverP50ms, r.FailoverMaxms)
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	for _, s := range r.Skipped {
		if _, err := fmt.Fprintf(w, "not measured: %s\n", strings.TrimSpace(s)); err != nil {
			return err
		}
	}
	return nil
}
