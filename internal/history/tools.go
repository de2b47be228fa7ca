package history

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"math"
	"slices"
	"strconv"
	"strings"
	"time"

	"agentd/internal/event"
	"agentd/internal/store"
	"agentd/internal/tool"
)

// Store is what the tools need of agentd's store (store/sqlite has it all).
type Store interface {
	SessionByAddress(ctx context.Context, agent, key string) (store.Session, error)
	Events(ctx context.Context, session, after int64, limit int) ([]event.Event, error)
	SearchHistory(ctx context.Context, q store.HistoryQuery) ([]store.HistoryHit, string, error)
	Threads(ctx context.Context, agent string, limit int, cursor string) ([]store.Thread, string, error)
	SetWorking(ctx context.Context, session int64, key string, value json.RawMessage) (event.Event, error)
	DeleteWorking(ctx context.Context, session int64, key string) (event.Event, error)
	Working(ctx context.Context, session int64) (map[string]json.RawMessage, error)
}

// Sentinel errors of the tools (wrapped in what a call returns).
var (
	ErrNotAllowed = errors.New("not allowed")
	ErrNoSession  = errors.New("no calling session")
	ErrBadArgs    = errors.New("invalid arguments")
)

// DefaultHalfLife is find_relevant's default recency half-life.
const DefaultHalfLife = 7 * 24 * time.Hour

// Options configure the tools. The zero value (or nil) gives the defaults.
type Options struct {
	// Allowed reports whether an agent may use search_all, which searches
	// every agent's sessions. nil allows no agent.
	Allowed func(agentID string) bool
	// HalfLife is the age at which find_relevant halves a hit's score
	// (default DefaultHalfLife).
	HalfLife time.Duration
	// Now is the clock of find_relevant; nil means time.Now.
	Now func() time.Time
	// Logger receives nothing yet but failures of the store; nil discards.
	Logger *slog.Logger
}

// Page sizes.
const (
	defaultLimit         = 20
	maxLimit             = 100
	defaultRelevantLimit = 10
	relevantCandidates   = 100 // BM25 hits find_relevant re-ranks
	maxEventText         = 2000
	maxSummary           = 200
)

// Tools returns the history and working memory tools over st.
func Tools(st Store, opts *Options) []tool.Tool {
	h := &tools{st: st}
	if opts != nil {
		h.o = *opts
	}
	if h.o.HalfLife <= 0 {
		h.o.HalfLife = DefaultHalfLife
	}
	if h.o.Now == nil {
		h.o.Now = time.Now
	}
	if h.o.Logger == nil {
		h.o.Logger = slog.New(slog.DiscardHandler)
	}
	ro := func(name, desc, schema string, fn func(context.Context, *tool.Call) (tool.Result, error)) tool.Tool {
		return tool.Func(tool.Spec{Name: name, Description: desc, InputSchema: json.RawMessage(schema), ReadOnly: true}, h.logged(name, fn))
	}
	rw := func(name, desc, schema string, fn func(context.Context, *tool.Call) (tool.Result, error)) tool.Tool {
		return tool.Func(tool.Spec{Name: name, Description: desc, InputSchema: json.RawMessage(schema), Idempotent: true}, h.logged(name, fn))
	}
	return []tool.Tool{
		ro("list_threads", "Lists your conversation threads (sessions), most recently active first, with their state, message count, first message and last activity. Use the returned cursor to see older threads.", listThreadsSchema, h.listThreads),
		ro("search_history", "Full-text search over the messages of your own past conversations, best matches first. Returns snippets with the matching words marked «like this», the thread and event number of each hit, and a cursor for more results.", searchHistorySchema, h.searchHistory),
		ro("get_thread", "Reads one of your conversation threads in order: messages in full, tool calls summarised. Use the cursor to read on.", getThreadSchema, h.getThread),
		ro("find_relevant", "Finds the messages of your past conversations most relevant to a query, favouring recent ones, optionally within a time range.", findRelevantSchema, h.findRelevant),
		// Offered only to the agents allowed to use it.
		tool.Func(tool.Spec{Name: "search_all", Description: "Full-text search over the conversations of all agents (or some), best matches first. Returns snippets with matches marked «like this» and a cursor for more results.",
			InputSchema: json.RawMessage(searchAllSchema), ReadOnly: true, Serves: h.allowed}, h.logged("search_all", h.searchAll)),
		rw("wm_set", "Sets a key of this conversation's working memory to a JSON value (a string, number, object, ...), replacing any earlier value. Working memory persists with the conversation.", wmSetSchema, h.wmSet),
		ro("wm_get", "Reads this conversation's working memory: one key, or all keys and values when no key is given.", wmGetSchema, h.wmGet),
		rw("wm_delete", "Deletes a key from this conversation's working memory.", wmDeleteSchema, h.wmDelete),
	}
}

const (
	limitProp  = `"limit": {"type": "integer", "minimum": 1, "maximum": 100, "description": "How many results to return (default 20)."}`
	cursorProp = `"cursor": {"type": "string", "description": "The cursor a previous call returned, to get the next page."}`
	queryProp  = `"query": {"type": "string", "minLength": 1, "description": "Words to look for; all must occur. End a word with * to match words starting with it."}`

	listThreadsSchema   = `{"type": "object", "properties": {` + limitProp + `, ` + cursorProp + `}, "additionalProperties": false}`
	searchHistorySchema = `{"type": "object", "properties": {` + queryProp + `, ` + limitProp + `, ` + cursorProp + `}, "required": ["query"], "additionalProperties": false}`
	getThreadSchema     = `{"type": "object", "properties": {
		"session": {"type": "string", "minLength": 1, "description": "The thread: its address (agent/key) or key, as list_threads or a search shows it."},
		` + limitProp + `, ` + cursorProp + `}, "required": ["session"], "additionalProperties": false}`
	findRelevantSchema = `{"type": "object", "properties": {` + queryProp + `,
		"since": {"type": "string", "description": "Only messages from this time on: RFC 3339 (2025-06-01T00:00:00Z) or an age such as \"72h\" or \"7d\"."},
		"until": {"type": "string", "description": "Only messages before this time: RFC 3339 or an age such as \"24h\"."},
		"limit": {"type": "integer", "minimum": 1, "maximum": 100, "description": "How many results to return (default 10)."}
		}, "required": ["query"], "additionalProperties": false}`
	searchAllSchema = `{"type": "object", "properties": {` + queryProp + `,
		"agents": {"type": "array", "items": {"type": "string"}, "description": "Only these agents' conversations (default: all agents)."},
		` + limitProp + `, ` + cursorProp + `}, "required": ["query"], "additionalProperties": false}`
	wmSetSchema = `{"type": "object", "properties": {
		"key": {"type": "string", "minLength": 1, "maxLength": 256, "description": "The name to store the value under."},
		"value": {"description": "Any JSON value to remember."}
		}, "required": ["key", "value"], "additionalProperties": false}`
	wmGetSchema    = `{"type": "object", "properties": {"key": {"type": "string", "description": "The key to read; omit it to read all keys."}}, "additionalProperties": false}`
	wmDeleteSchema = `{"type": "object", "properties": {"key": {"type": "string", "minLength": 1, "description": "The key to delete."}}, "required": ["key"], "additionalProperties": false}`
)

type tools struct {
	st Store
	o  Options
}

// allowed reports whether an agent may use search_all.
func (h *tools) allowed(agentID string) bool { return h.o.Allowed != nil && h.o.Allowed(agentID) }

// logged logs store failures of a tool (a tool's error goes to the model).
func (h *tools) logged(name string, fn func(context.Context, *tool.Call) (tool.Result, error)) func(context.Context, *tool.Call) (tool.Result, error) {
	return func(ctx context.Context, c *tool.Call) (tool.Result, error) {
		res, err := fn(ctx, c)
		if err != nil && !errors.Is(err, ErrBadArgs) && !errors.Is(err, ErrNotAllowed) &&
			!errors.Is(err, store.ErrNotFound) && !errors.Is(err, store.ErrBadCursor) {
			h.o.Logger.Warn("history tool failed", "tool", name, "agent", c.Agent, "err", err)
		}
		return res, err
	}
}

func decodeArgs(c *tool.Call, v any) error {
	if len(c.Args) == 0 {
		return nil
	}
	if err := json.Unmarshal(c.Args, v); err != nil {
		return fmt.Errorf("%s: %w: %v", c.Name, ErrBadArgs, err)
	}
	return nil
}

func checkLimit(name string, limit, def int) (int, error) {
	switch {
	case limit == 0:
		return def, nil
	case limit < 0 || limit > maxLimit:
		return 0, fmt.Errorf("%s: %w: limit %d, want 1 to %d", name, ErrBadArgs, limit, maxLimit)
	}
	return limit, nil
}

func callerAgent(c *tool.Call) (string, error) {
	if c.Agent == "" {
		return "", fmt.Errorf("%s: %w: the call has no agent", c.Name, ErrNoSession)
	}
	return c.Agent, nil
}

func (h *tools) listThreads(ctx context.Context, c *tool.Call) (tool.Result, error) {
	var a struct {
		Limit  int    `json:"limit"`
		Cursor string `json:"cursor"`
	}
	if err := decodeArgs(c, &a); err != nil {
		return tool.Result{}, err
	}
	agent, err := callerAgent(c)
	if err != nil {
		return tool.Result{}, err
	}
	limit, err := checkLimit(c.Name, a.Limit, defaultLimit)
	if err != nil {
		return tool.Result{}, err
	}
	threads, next, err := h.st.Threads(ctx, agent, limit, a.Cursor)
	if err != nil {
		return tool.Result{}, fmt.Errorf("list_threads: %w", err)
	}
	var b strings.Builder
	if len(threads) == 0 {
		b.WriteString("no threads\n")
	} else {
		fmt.Fprintf(&b, "%d threads, most recently active first:\n", len(threads))
	}
	for _, t := range threads {
		fmt.Fprintf(&b, "- %s · %s · %d messages · started %s · last active %s\n",
			t.Address(), t.State, t.Messages, stamp(t.CreatedAt), stamp(t.LastActivity))
		if t.Title != "" {
			fmt.Fprintf(&b, "  first message: %s\n", t.Title)
		}
	}
	writeNext(&b, next)
	return tool.Result{Output: b.String()}, nil
}

func stamp(t time.Time) string { return t.UTC().Format("2006-01-02 15:04Z") }

func writeNext(b *strings.Builder, next string) {
	if next != "" {
		fmt.Fprintf(b, "next cursor: %s\n", next)
	} else {
		b.WriteString("(no more results)\n")
	}
}

func (h *tools) searchHistory(ctx context.Context, c *tool.Call) (tool.Result, error) {
	var a struct {
		Query  string `json:"query"`
		Limit  int    `json:"limit"`
		Cursor string `json:"cursor"`
	}
	if err := decodeArgs(c, &a); err != nil {
		return tool.Result{}, err
	}
	agent, err := callerAgent(c)
	if err != nil {
		return tool.Result{}, err
	}
	limit, err := checkLimit(c.Name, a.Limit, defaultLimit)
	if err != nil {
		return tool.Result{}, err
	}
	return h.search(ctx, c.Name, store.HistoryQuery{Query: a.Query, Agents: []string{agent}, Limit: limit, Cursor: a.Cursor})
}

func (h *tools) searchAll(ctx context.Context, c *tool.Call) (tool.Result, error) {
	var a struct {
		Query  string   `json:"query"`
		Agents []string `json:"agents"`
		Limit  int      `json:"limit"`
		Cursor string   `json:"cursor"`
	}
	if err := decodeArgs(c, &a); err != nil {
		return tool.Result{}, err
	}
	agent, err := callerAgent(c)
	if err != nil {
		return tool.Result{}, err
	}
	if !h.allowed(agent) {
		return tool.Result{}, fmt.Errorf("search_all: %w: agent %q may not search other agents' conversations; use search_history for your own", ErrNotAllowed, agent)
	}
	limit, err := checkLimit(c.Name, a.Limit, defaultLimit)
	if err != nil {
		return tool.Result{}, err
	}
	return h.search(ctx, c.Name, store.HistoryQuery{Query: a.Query, Agents: a.Agents, Limit: limit, Cursor: a.Cursor})
}

func (h *tools) search(ctx context.Context, name string, q store.HistoryQuery) (tool.Result, error) {
	if strings.TrimSpace(q.Query) == "" {
		return tool.Result{}, fmt.Errorf("%s: %w: empty query", name, ErrBadArgs)
	}
	hits, next, err := h.st.SearchHistory(ctx, q)
	if err != nil {
		return tool.Result{}, fmt.Errorf("%s: %w", name, err)
	}
	var b strings.Builder
	if len(hits) == 0 {
		fmt.Fprintf(&b, "no matches for %q\n", q.Query)
	} else {
		fmt.Fprintf(&b, "%d matches for %q, best first:\n", len(hits), q.Query)
	}
	for i, hit := range hits {
		fmt.Fprintf(&b, "[%d] %s/%s #%d %s %s score %.3g\n    %s\n", i+1, hit.Agent, hit.Key, hit.Event.Seq,
			speaker(hit.Event.Kind), stamp(hit.Event.Time), hit.Score, hit.Snippet)
	}
	writeNext(&b, next)
	return tool.Result{Output: b.String()}, nil
}

func speaker(k event.Kind) string {
	switch k {
	case event.Input:
		return "user"
	case event.Text:
		return "assistant"
	case event.SystemMessage:
		return "system"
	}
	return string(k)
}

func (h *tools) findRelevant(ctx context.Context, c *tool.Call) (tool.Result, error) {
	var a struct {
		Query string `json:"query"`
		Since string `json:"since"`
		Until string `json:"until"`
		Limit int    `json:"limit"`
	}
	if err := decodeArgs(c, &a); err != nil {
		return tool.Result{}, err
	}
	agent, err := callerAgent(c)
	if err != nil {
		return tool.Result{}, err
	}
	limit, err := checkLimit(c.Name, a.Limit, defaultRelevantLimit)
	if err != nil {
		return tool.Result{}, err
	}
	if strings.TrimSpace(a.Query) == "" {
		return tool.Result{}, fmt.Errorf("find_relevant: %w: empty query", ErrBadArgs)
	}
	now := h.o.Now()
	q := store.HistoryQuery{Query: a.Query, Agents: []string{agent}, Limit: relevantCandidates}
	if q.Since, err = parseWhen(a.Since, now); err != nil {
		return tool.Result{}, fmt.Errorf("find_relevant: %w: since: %v", ErrBadArgs, err)
	}
	if q.Until, err = parseWhen(a.Until, now); err != nil {
		return tool.Result{}, fmt.Errorf("find_relevant: %w: until: %v", ErrBadArgs, err)
	}
	if !q.Since.IsZero() && !q.Until.IsZero() && !q.Since.Before(q.Until) {
		return tool.Result{}, fmt.Errorf("find_relevant: %w: since (%s) is not before until (%s)", ErrBadArgs, stamp(q.Since), stamp(q.Until))
	}
	hits, _, err := h.st.SearchHistory(ctx, q)
	if err != nil {
		return tool.Result{}, fmt.Errorf("find_relevant: %w", err)
	}
	ranked := Rerank(hits, now, h.o.HalfLife)
	ranked = ranked[:min(limit, len(ranked))]
	var b strings.Builder
	if len(ranked) == 0 {
		fmt.Fprintf(&b, "no matches for %q\n", a.Query)
	} else {
		fmt.Fprintf(&b, "%d most relevant messages for %q (relevance weighted by recency, half-life %s):\n", len(ranked), a.Query, h.o.HalfLife)
	}
	for i, r := range ranked {
		fmt.Fprintf(&b, "[%d] %s/%s #%d %s %s score %.3g (text %.3g, %s old)\n    %s\n", i+1, r.Agent, r.Key, r.Event.Seq,
			speaker(r.Event.Kind), stamp(r.Event.Time), r.Score, r.Relevance, age(now.Sub(r.Event.Time)), r.Snippet)
	}
	return tool.Result{Output: b.String()}, nil
}

// Ranked is a hit re-ranked by recency.
type Ranked struct {
	store.HistoryHit
	Relevance float64 // the hit's BM25 score; Score is the weighted one
}

// Rerank orders hits by their BM25 score times 0.5^(age/halfLife), the age
// counted from now (events in the future count as new), best first; ties
// keep the hits' order.
func Rerank(hits []store.HistoryHit, now time.Time, halfLife time.Duration) []Ranked {
	out := make([]Ranked, len(hits))
	for i, h := range hits {
		ageH := max(now.Sub(h.Event.Time), 0)
		out[i] = Ranked{HistoryHit: h, Relevance: h.Score}
		out[i].Score = h.Score * math.Pow(0.5, float64(ageH)/float64(halfLife))
	}
	slices.SortStableFunc(out, func(a, b Ranked) int {
		switch {
		case a.Score > b.Score:
			return -1
		case a.Score < b.Score:
			return 1
		}
		return 0
	})
	return out
}

func age(d time.Duration) string {
	switch {
	case d < 0:
		return "0s"
	case d < time.Hour:
		return d.Round(time.Minute).String()
	case d < 48*time.Hour:
		return strconv.Itoa(int(d.Hours())) + "h"
	}
	return strconv.Itoa(int(d.Hours()/24)) + "d"
}

// parseWhen reads an RFC 3339 time or an age before now ("72h", "7d",
// "1d12h"); "" is the zero time.
func parseWhen(s string, now time.Time) (time.Time, error) {
	s = strings.TrimSpace(s)
	if s == "" {
		return time.Time{}, nil
	}
	if t, err := time.Parse(time.RFC3339, s); err == nil {
		return t, nil
	}
	d, err := parseAge(s)
	if err != nil {
		return time.Time{}, fmt.Errorf("%q is neither an RFC 3339 time nor an age such as 72h or 7d", s)
	}
	return now.Add(-d), nil
}

// parseAge is time.ParseDuration that also accepts days ("7d", "1d12h")
// and refuses negative ages.
func parseAge(s string) (time.Duration, error) {
	var days time.Duration
	if i := strings.IndexByte(s, 'd'); i > 0 {
		n, err := strconv.ParseUint(s[:i], 10, 16)
		if err != nil {
			return 0, err
		}
		days, s = time.Duration(n)*24*time.Hour, s[i+1:]
		if s == "" {
			return days, nil
		}
	}
	d, err := time.ParseDuration(s)
	if err != nil {
		return 0, err
	}
	if d < 0 {
		return 0, errors.New("negative age")
	}
	return days + d, nil
}

// ownSession resolves a session of the calling agent given as an address
// (agent/key) or a key.
func (h *tools) ownSession(ctx context.Context, c *tool.Call, ref string) (store.Session, error) {
	agent, err := callerAgent(c)
	if err != nil {
		return store.Session{}, err
	}
	key := ref
	if a, k, ok := strings.Cut(ref, "/"); ok && a == agent {
		key = k
	} else if ok {
		if _, err := h.st.SessionByAddress(ctx, agent, ref); err == nil {
			key = ref // a key of the agent's own that contains "/"
		} else {
			return store.Session{}, fmt.Errorf("%s: %w: %q is not one of your threads", c.Name, ErrNotAllowed, ref)
		}
	}
	s, err := h.st.SessionByAddress(ctx, agent, key)
	if errors.Is(err, store.ErrNotFound) {
		return store.Session{}, fmt.Errorf("%s: no thread %q: %w", c.Name, ref, store.ErrNotFound)
	}
	if err != nil {
		return store.Session{}, fmt.Errorf("%s: %w", c.Name, err)
	}
	return s, nil
}

func (h *tools) getThread(ctx context.Context, c *tool.Call) (tool.Result, error) {
	var a struct {
		Session string `json:"session"`
		Limit   int    `json:"limit"`
		Cursor  string `json:"cursor"`
	}
	if err := decodeArgs(c, &a); err != nil {
		return tool.Result{}, err
	}
	if a.Session == "" {
		return tool.Result{}, fmt.Errorf("get_thread: %w: no session given", ErrBadArgs)
	}
	limit, err := checkLimit(c.Name, a.Limit, defaultLimit)
	if err != nil {
		return tool.Result{}, err
	}
	var after int64
	if a.Cursor != "" {
		n, err := strconv.ParseInt(strings.TrimPrefix(a.Cursor, "seq:"), 10, 64)
		if err != nil || n < 0 || !strings.HasPrefix(a.Cursor, "seq:") {
			return tool.Result{}, fmt.Errorf("get_thread: %w %q", store.ErrBadCursor, a.Cursor)
		}
		after = n
	}
	sess, err := h.ownSession(ctx, c, a.Session)
	if err != nil {
		return tool.Result{}, err
	}
	evs, err := h.st.Events(ctx, sess.ID, after, limit)
	if err != nil {
		return tool.Result{}, fmt.Errorf("get_thread: %w", err)
	}
	var b strings.Builder
	fmt.Fprintf(&b, "thread %s (%s, %d events)", sess.Address(), sess.State, sess.LastSeq)
	if len(evs) == 0 {
		b.WriteString(": no events")
		if after > 0 {
			fmt.Fprintf(&b, " after #%d", after)
		}
		b.WriteString("\n")
	} else {
		fmt.Fprintf(&b, ", events #%d to #%d:\n", evs[0].Seq, evs[len(evs)-1].Seq)
	}
	for i := range evs {
		renderEvent(&b, &evs[i])
	}
	next := ""
	if len(evs) == limit && evs[len(evs)-1].Seq < sess.LastSeq {
		next = "seq:" + strconv.FormatInt(evs[len(evs)-1].Seq, 10)
	}
	writeNext(&b, next)
	return tool.Result{Output: b.String()}, nil
}

// renderEvent writes one line (or a message) for e.
func renderEvent(b *strings.Builder, e *event.Event) {
	fmt.Fprintf(b, "#%d %s ", e.Seq, e.Time.UTC().Format(time.RFC3339))
	switch e.Kind {
	case event.Input, event.SystemMessage:
		var d event.InputData
		_ = e.Decode(&d)
		fmt.Fprintf(b, "%s: %s\n", speaker(e.Kind), cut(d.Text, maxEventText))
	case event.Text:
		var d event.TextData
		_ = e.Decode(&d)
		fmt.Fprintf(b, "assistant: %s\n", cut(d.Text, maxEventText))
	case event.Thought:
		b.WriteString("(reasoning)\n")
	case event.ToolCall:
		var d event.ToolCallData
		_ = e.Decode(&d)
		fmt.Fprintf(b, "tool call %s %s\n", d.Name, cut(string(d.Args), maxSummary))
	case event.ToolResult:
		var d event.ToolResultData
		_ = e.Decode(&d)
		status := "result"
		if d.IsError {
			status = "error"
		}
		fmt.Fprintf(b, "tool %s %s: %s\n", d.Name, status, cut(d.Output, maxSummary))
	case event.WorkingMemory:
		var d event.WorkingMemoryData
		_ = e.Decode(&d)
		if d.Deleted {
			fmt.Fprintf(b, "working memory: deleted %q\n", d.Key)
		} else {
			fmt.Fprintf(b, "working memory: %q = %s\n", d.Key, cut(string(d.Value), maxSummary))
		}
	case event.TurnEnd:
		var d event.TurnEndData
		_ = e.Decode(&d)
		fmt.Fprintf(b, "turn end: %s\n", d.Status)
	case event.Error:
		var d event.ErrorData
		_ = e.Decode(&d)
		fmt.Fprintf(b, "error: %s\n", cut(d.Message, maxSummary))
	default:
		fmt.Fprintf(b, "(%s)\n", e.Kind)
	}
}

// cut shortens s to at most n bytes (at a rune boundary) on one line.
func cut(s string, n int) string {
	s = strings.Join(strings.Fields(s), " ")
	if len(s) <= n {
		return s
	}
	for n > 0 && s[n]&0xC0 == 0x80 {
		n--
	}
	return s[:n] + "…"
}

// callingSession resolves the calling session, which must be the calling
// agent's.
func (h *tools) callingSession(ctx context.Context, c *tool.Call) (store.Session, error) {
	agent, key, ok := strings.Cut(c.Session, "/")
	if !ok || agent == "" || key == "" {
		return store.Session{}, fmt.Errorf("%s: %w (session %q)", c.Name, ErrNoSession, c.Session)
	}
	if c.Agent != "" && agent != c.Agent {
		return store.Session{}, fmt.Errorf("%s: %w: session %q is not agent %q's", c.Name, ErrNotAllowed, c.Session, c.Agent)
	}
	s, err := h.st.SessionByAddress(ctx, agent, key)
	if err != nil {
		return store.Session{}, fmt.Errorf("%s: %w", c.Name, err)
	}
	return s, nil
}

// ownKey says why a key beginning with "_" is refused.
const ownKey = `keys beginning with "_" are agentd's own (a context's state)`

func (h *tools) wmSet(ctx context.Context, c *tool.Call) (tool.Result, error) {
	var a struct {
		Key   string          `json:"key"`
		Value json.RawMessage `json:"value"`
	}
	if err := decodeArgs(c, &a); err != nil {
		return tool.Result{}, err
	}
	if a.Key == "" || len(a.Value) == 0 {
		return tool.Result{}, fmt.Errorf("wm_set: %w: key and value are required", ErrBadArgs)
	}
	if store.OwnWorkingKey(a.Key) {
		return tool.Result{}, fmt.Errorf("wm_set: %w: %s", ErrBadArgs, ownKey)
	}
	s, err := h.callingSession(ctx, c)
	if err != nil {
		return tool.Result{}, err
	}
	if _, err := h.st.SetWorking(ctx, s.ID, a.Key, a.Value); err != nil {
		return tool.Result{}, fmt.Errorf("wm_set: %w", err)
	}
	return tool.Result{Output: fmt.Sprintf("set %q", a.Key)}, nil
}

func (h *tools) wmGet(ctx context.Context, c *tool.Call) (tool.Result, error) {
	var a struct {
		Key string `json:"key"`
	}
	if err := decodeArgs(c, &a); err != nil {
		return tool.Result{}, err
	}
	s, err := h.callingSession(ctx, c)
	if err != nil {
		return tool.Result{}, err
	}
	wm, err := h.st.Working(ctx, s.ID)
	if err != nil {
		return tool.Result{}, fmt.Errorf("wm_get: %w", err)
	}
	if a.Key != "" {
		v, ok := wm[a.Key]
		if !ok {
			return tool.Result{Output: fmt.Sprintf("%q is not set", a.Key)}, nil
		}
		return tool.Result{Output: string(v)}, nil
	}
	if len(wm) == 0 {
		return tool.Result{Output: "working memory is empty"}, nil
	}
	keys := make([]string, 0, len(wm))
	for k := range wm {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	var b strings.Builder
	for _, k := range keys {
		fmt.Fprintf(&b, "%s = %s\n", strconv.Quote(k), wm[k])
	}
	return tool.Result{Output: b.String()}, nil
}

func (h *tools) wmDelete(ctx context.Context, c *tool.Call) (tool.Result, error) {
	var a struct {
		Key string `json:"key"`
	}
	if err := decodeArgs(c, &a); err != nil {
		return tool.Result{}, err
	}
	if a.Key == "" {
		return tool.Result{}, fmt.Errorf("wm_delete: %w: key is required", ErrBadArgs)
	}
	if store.OwnWorkingKey(a.Key) {
		return tool.Result{}, fmt.Errorf("wm_delete: %w: %s", ErrBadArgs, ownKey)
	}
	s, err := h.callingSession(ctx, c)
	if err != nil {
		return tool.Result{}, err
	}
	if _, err := h.st.DeleteWorking(ctx, s.ID, a.Key); err != nil {
		if errors.Is(err, store.ErrNotFound) {
			return tool.Result{Output: fmt.Sprintf("%q was not set", a.Key)}, nil
		}
		return tool.Result{}, fmt.Errorf("wm_delete: %w", err)
	}
	return tool.Result{Output: fmt.Sprintf("deleted %q", a.Key)}, nil
}
