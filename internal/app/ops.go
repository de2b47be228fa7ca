package app

import (
	"context"
	"errors"
	"fmt"
	"time"

	"agentd/internal/gateway"
	"agentd/internal/job"
	"agentd/internal/metrics"
	"agentd/internal/store"
	"agentd/internal/store/sqlite"
)

// readiness says whether this node can take work: Start has resumed its
// work, stopping has not begun, and the store answers a read and can
// write. It also lists the optional parts that are off, which do not make
// it unready.
type readiness struct{ a *App }

// StoreKind names the node's store: sqlite or postgres.
func (r readiness) StoreKind() string { return r.a.storeKind }

// Degraded lists the optional parts that are off.
func (r readiness) Degraded() []gateway.Degraded { return r.a.Degraded() }

// ProbeStore times one read of the store.
func (r readiness) ProbeStore(ctx context.Context) gateway.StoreState {
	t0 := time.Now()
	err := r.a.Store.Ping(ctx)
	return gateway.StoreState{Kind: r.a.storeKind, Reachable: err == nil,
		LatencyMS: float64(time.Since(t0).Microseconds()) / 1000}
}

// Cluster says the node's part in a cluster: on a store several nodes
// share, whether its listener follows the others' commits.
func (r readiness) Cluster() *gateway.ClusterState {
	l, ok := r.a.Store.(listener)
	if !ok {
		return nil
	}
	c := &gateway.ClusterState{Listener: "disconnected"}
	if l.Listening() {
		c.Listener = "connected"
	}
	return c
}

// Ready's errors are shown to whoever asks /readyz: they say what is not
// ready, and the details go to the log.
func (r readiness) Ready(ctx context.Context) error {
	if r.a.stopping.Load() {
		return errors.New("shutting down")
	}
	if !r.a.started.Load() {
		return errors.New("starting: unfinished work is not resumed yet")
	}
	if err := r.a.Store.Ping(ctx); err != nil {
		r.a.Logger.Warn("readiness: the store does not answer", "err", err)
		return fmt.Errorf("the store (%s) does not answer: new messages are refused until it does", r.a.storeKind)
	}
	if err := r.a.Store.Writable(ctx); errors.Is(err, store.ErrFull) {
		return errors.New("the disk is full: new messages are refused until space is freed")
	} else if err != nil {
		r.a.Logger.Warn("readiness: the store cannot write", "err", err)
		return fmt.Errorf("the store (%s) cannot write", r.a.storeKind)
	}
	return nil
}

// startMetrics starts counting the events of the node's bus; the collector
// stops at Close.
func (a *App) startMetrics() *metrics.Collector {
	degraded := func() []string {
		var parts []string
		for _, d := range a.Degraded() {
			parts = append(parts, d.Part)
		}
		return parts
	}
	c := metrics.New(a.Bus, &metrics.Options{Sessions: a.Store, Queue: a.Store, States: a.Store, Version: a.version, Logger: a.Logger,
		Degraded: degraded, SQLiteMemory: func() int64 { n, _ := sqlite.MemoryUsed(); return n }, Connectors: a.connectorFigures})
	a.metrics.Store(c)
	a.wg.Go(func() {
		if err := c.Run(context.Background()); err != nil {
			a.Logger.Error("metrics stopped", "err", err)
		}
	})
	a.wg.Go(func() {
		<-a.done
		c.Close()
	})
	return c
}

// jobFired counts a scheduler's fire in the metrics, once they run.
func (a *App) jobFired(name, trigger string, due, fired time.Time, err error) {
	if c := a.metrics.Load(); c != nil {
		c.JobFired(name, trigger, fired.Sub(due), err)
	}
}

// jobEnded counts a job run's end in the metrics, once they run.
func (a *App) jobEnded(res job.Result) {
	if c := a.metrics.Load(); c != nil {
		c.JobRunEnded(res.Job, res.Status)
	}
}
