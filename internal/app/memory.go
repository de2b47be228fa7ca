package app

import (
	"context"
	"errors"
	"fmt"
	"os"
	"strings"

	"agentd/internal/agent"
	"agentd/internal/embed"
	"agentd/internal/memory"
	"agentd/internal/tool"
)

// MemoryFile is the long-term memory's database inside the data directory
// (with the SQLite store; with PostgreSQL, memory is in its database).
const MemoryFile = "memory.db"

// embedder builds the configured embedder.
func embedder(c agent.Embeddings) (memory.Embedder, error) {
	switch c.Provider {
	case agent.EmbedOpenAI:
		key := ""
		if c.APIKeyEnv != "" {
			if key = os.Getenv(c.APIKeyEnv); key == "" {
				return nil, fmt.Errorf("embeddings: environment variable %s is not set", c.APIKeyEnv)
			}
		}
		return embed.NewOpenAI(&embed.Options{BaseURL: c.BaseURL, APIKey: key, Model: c.Model, Dim: c.Dim, SendDimensions: c.Dim > 0}), nil
	default:
		dim := c.Dim
		if dim <= 0 {
			dim = agent.DefaultEmbedDim
		}
		return embed.NewHashed(dim), nil
	}
}

// memoryOff is the reason readiness gives while long-term memory is off;
// it names no path (the log has the error).
const memoryOff = "its database could not be opened; agentd runs without long-term memory (the log says why)"

// errMemoryOff is what the memory tools answer while long-term memory is off.
var errMemoryOff = errors.New("long-term memory is unavailable on this agentd: its database could not be opened. Recent turns and the history tools still work")

// openMemory makes the long-term memory and registers its tools. With the
// SQLite store memory.db is opened when first used (a recall before
// anything was remembered creates nothing); with PostgreSQL memory is
// opened now, in the store's database. Long-term memory is optional: when
// its database cannot be opened (unreadable, not a database, on a full
// disk), agentd goes on without it, says so once in the log and from then
// on in readiness, and its tools answer errMemoryOff. The file is left as
// it is.
func (a *App) openMemory(ctx context.Context) error {
	e, err := embedder(a.Config.Embeddings)
	if err != nil {
		a.Logger.Warn("recall is keyword-only", "err", err)
		e = nil
	}
	off := func(err error) {
		a.Logger.Warn("long-term memory is off: agentd runs without it; recent turns and history work, the memory tools answer an error", "err", err)
		a.degrade("memory", memoryOff)
	}
	m, err := a.openMem(ctx, &memory.Options{Logger: a.Logger, Embedder: e,
		OnStatus: func(degraded bool, reason string) {
			if degraded {
				a.Logger.Warn("memory recall degraded to keyword search", "reason", reason)
			} else {
				a.Logger.Info("memory recall is hybrid again")
			}
		},
		OnUnavailable: off})
	if err != nil {
		off(err)
	}
	a.Memory = m
	for _, t := range memory.Tools(m, &memory.ToolOptions{Shared: func(agentID string) bool {
		d, ok := a.Agents.Get(agentID)
		return ok && d.Memory.Shared
	}}) {
		run := t
		t = tool.Func(t.Spec(), func(ctx context.Context, c *tool.Call) (tool.Result, error) {
			if m == nil {
				return tool.Result{}, errMemoryOff
			}
			res, err := run.Call(ctx, c)
			if errors.Is(err, memory.ErrUnavailable) {
				return tool.Result{}, errMemoryOff
			}
			return res, err
		})
		if err := a.Tools.Register(t); err != nil {
			return fmt.Errorf("app: register tool: %w", err)
		}
	}
	return nil
}

// recaller gives the engine long-term memories for a turn's context.
type recaller struct{ m *memory.Store }

func (r recaller) Recall(ctx context.Context, agentID, query string, k int, shared bool) ([]string, string, error) {
	res, err := r.m.Recall(ctx, memory.Query{Scope: agentID, Text: query, K: k, Shared: shared})
	if errors.Is(err, memory.ErrUnavailable) {
		return nil, "", nil // off, and said so once
	}
	if err != nil {
		return nil, "", err
	}
	out := make([]string, 0, len(res.Items))
	for _, it := range res.Items {
		var b strings.Builder
		if it.Entity != "" && it.Kind != memory.KindEntity {
			b.WriteString(it.Entity + ": ")
		}
		b.WriteString(it.Text)
		fmt.Fprintf(&b, " [%s %d, %s]", it.Kind, it.ID, it.Created.Format("2006-01-02"))
		out = append(out, b.String())
	}
	reason := ""
	if res.Degraded {
		reason = "keyword search only: " + res.Reason
	}
	return out, reason, nil
}
