package bench

import (
	"context"
	"fmt"
	"path/filepath"
	"strings"
	"sync/atomic"
	"time"

	"agentd/internal/embed"
	"agentd/internal/engine"
	"agentd/internal/event"
	"agentd/internal/history"
	"agentd/internal/memory"
	"agentd/internal/runtime"
	"agentd/internal/store"
	"agentd/internal/store/sqlite"
)

// runMemory measures memory and context: history search over a large
// synthetic corpus, hybrid recall over many memories, and assembling the
// context of a long session, cold (from the log) and warm (cached).
func runMemory(ctx context.Context, dir string, res *Result, c config) error {
	messages, memories := 1_000_000, 100_000
	if c.quick {
		messages, memories = 100_000, 10_000
	}
	res.HistoryMessages, res.Memories = messages, memories

	// History search: one agent's sessions, top 20.
	st, err := sqlite.Open(ctx, filepath.Join(dir, "history.db"), &sqlite.Options{Synchronous: "normal"})
	if err != nil {
		return err
	}
	defer st.Close()
	if err := history.GenerateHistory(ctx, st, 10, max(messages/500, 10), messages, 1); err != nil {
		return fmt.Errorf("bench: generate history: %w", err)
	}
	var lat []time.Duration
	for _, q := range history.BenchQueries(200, 2) {
		t0 := time.Now()
		if _, _, err := st.SearchHistory(ctx, store.HistoryQuery{Query: q, Agents: []string{"agent-0"}, Limit: 20}); err != nil {
			return fmt.Errorf("bench: search history %q: %w", q, err)
		}
		lat = append(lat, time.Since(t0))
	}
	res.HistorySearchP50ms = pct(lat, 50)

	// Hybrid recall with the offline embedder's 384-d vectors.
	m, err := memory.Open(ctx, filepath.Join(dir, "memory.db"), &memory.Options{Embedder: embed.NewHashed(384), BatchSize: 512})
	if err != nil {
		return err
	}
	defer m.Close()
	if err := memory.Generate(ctx, m, "bench", memories, 1); err != nil {
		return fmt.Errorf("bench: generate memories: %w", err)
	}
	if err := m.Drain(ctx); err != nil {
		return err
	}
	queries := []string{"who prefers green tea?", "billing-service deploy failures", "what is Alice Chen responsible for",
		"meetings on Friday", "contract with Globex in Tokyo", "latency in the EU region", "error rate after deploy"}
	lat = lat[:0]
	for i := 0; i < 200; i++ {
		t0 := time.Now()
		r, err := m.Recall(ctx, memory.Query{Scope: "bench", Text: queries[i%len(queries)], K: 10})
		if err != nil {
			return fmt.Errorf("bench: recall: %w", err)
		}
		if r.Degraded {
			return fmt.Errorf("bench: recall degraded: %s", r.Reason)
		}
		lat = append(lat, time.Since(t0))
	}
	res.RecallP50ms = pct(lat, 50)

	// Context assembly of a session with 10,000 events.
	return runContext(ctx, st, res)
}

// runContext times what a turn does to get its context: cold, the
// events since the last reset or summary read from the store, decoded into
// messages and sized in tokens; warm, the cached conversation's messages
// sized in tokens.
func runContext(ctx context.Context, st *sqlite.Store, res *Result) error {
	sess, _, err := st.Session(ctx, "ctx", "long")
	if err != nil {
		return err
	}
	const turns = 2500 // 4 events each
	var evs []event.Event
	for i := 0; i < turns; i++ {
		turn := int64(i + 1)
		evs = append(evs,
			event.New(sess.ID, turn, event.Input, event.InputData{Text: fmt.Sprintf("Question %d: how do I rotate the logs of service-%d on host db-%d?", i, i%40, i%7)}),
			event.New(sess.ID, turn, event.ModelCall, event.ModelCallData{Step: 1, InputTokens: 900, OutputTokens: 60}),
			event.New(sess.ID, turn, event.Text, event.TextData{Text: fmt.Sprintf("Use logrotate with a daily rule for /var/log/service-%d; keep 14 files and compress them.", i%40), Step: 1}),
			event.New(sess.ID, turn, event.TurnEnd, event.TurnEndData{Status: event.StatusDone}))
		if len(evs) >= 4000 || i == turns-1 {
			if err := st.Commit(ctx, &store.Batch{Session: sess.ID, Events: evs}); err != nil {
				return err
			}
			evs = nil
		}
	}
	var cold, warm []time.Duration
	var conv *engine.Conversation
	for i := 0; i < 30; i++ {
		t0 := time.Now()
		evs, err := st.ContextEvents(ctx, sess.ID)
		if err != nil {
			return err
		}
		conv = new(engine.Conversation)
		conv.Add(engine.FromSummary(evs)...)
		_, _, _ = conv.Messages(), conv.Marks(), conv.Tokens()
		cold = append(cold, time.Since(t0))
	}
	for i := 0; i < 200; i++ {
		t0 := time.Now()
		// What a turn of a cached session does: the messages, the turn
		// boundaries and the token sizes, all kept up to date.
		_, _, _ = conv.Messages(), conv.Marks(), conv.Tokens()
		warm = append(warm, time.Since(t0))
	}
	res.ContextColdMS, res.ContextWarmMS = pct(cold, 50), pct(warm, 50)
	return nil
}

// runWhileCompacting runs the latency turns again while another
// session compacts over and over (each summary takes the fake model
// 200 ms): a session compacting elsewhere must not slow them.
func runWhileCompacting(ctx context.Context, rt *runtime.Runtime, res *Result, c config) error {
	cctx, stop := context.WithCancel(ctx)
	defer stop()
	var compactions atomic.Int64
	done := make(chan error, 1)
	go func() {
		long := strings.Repeat("Keep these words in the context for a while; they fill the window. ", 12)
		for i := 0; cctx.Err() == nil; i++ {
			_, end, err := rt.Send(cctx, runtime.Input{Session: "comp/busy", Text: fmt.Sprintf("%d %s", i, long), Source: "bench"})
			if err != nil {
				if cctx.Err() != nil {
					break
				}
				done <- err
				return
			}
			if end.Status != event.StatusDone {
				done <- fmt.Errorf("compacting turn %s: %s", end.Status, end.Reason)
				return
			}
			if i > 0 {
				compactions.Add(1)
			}
		}
		done <- nil
	}()
	time.Sleep(300 * time.Millisecond) // the first compaction under way
	var lat []time.Duration
	for i := 0; i < c.turns/2; i++ {
		in := runtime.Input{Session: fmt.Sprintf("bench/iso-%d", i/20), Text: "tool please", Source: "bench"}
		t0 := time.Now()
		if _, _, err := rt.Send(ctx, in); err != nil {
			return err
		}
		lat = append(lat, time.Since(t0))
	}
	stop()
	if err := <-done; err != nil {
		return fmt.Errorf("bench: compacting session: %w", err)
	}
	res.CompactingTurnP50, res.Compactions = pct(lat, 50), int(compactions.Load())
	return nil
}
