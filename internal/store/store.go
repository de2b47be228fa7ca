// Package store defines agentd's durable state: sessions, their append-only
// event logs, per-session inboxes and usage. store/sqlite implements it on
// one node's file (the default), store/postgres on a database several nodes
// can share; store/storetest is the contract both pass.
//
// All writes that belong together go through Commit in one transaction, so
// that, for example, the final event of a turn and the completion of the
// inbox item that started it are durable together or not at all.
package store

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"time"
	"unicode"

	"agentd/internal/event"
)

// Sentinel errors.
var (
	ErrNotFound = errors.New("not found")
	ErrClosed   = errors.New("store closed")
	// ErrInvalid is returned (wrapped) for a request a store refuses
	// before writing or reading anything: a bad key, query or payload.
	ErrInvalid = errors.New("invalid request")
	// ErrFull is returned (wrapped) for a write that failed because the
	// disk (or the file system's quota) is full. Nothing of it was written;
	// the same write succeeds once space is freed.
	ErrFull = errors.New("storage full")
	// ErrUnavailable is returned (wrapped) for a request a store could not
	// make because it cannot reach its database (a network store: the
	// server is down or cut off). A write that fails so before it was sent
	// wrote nothing; the same request succeeds once the database is back.
	ErrUnavailable = errors.New("store unreachable")
)

// Session states.
const (
	StateCreated    = "created"
	StateActive     = "active"
	StateIdle       = "idle"
	StateCompacting = "compacting"
	StateClosed     = "closed"
)

// States returns the session states, in the order a session meets them.
func States() []string {
	return []string{StateCreated, StateActive, StateIdle, StateCompacting, StateClosed}
}

// Session is one conversation of one agent.
type Session struct {
	ID        int64
	Agent     string
	Key       string // e.g. chat:alice; the full address is Agent + "/" + Key
	State     string
	LastSeq   int64 // the sequence number of the session's newest event
	CreatedAt time.Time
	UpdatedAt time.Time
	// Title names the conversation for people ("" until its first
	// message); TitleBy says who set it.
	Title   string
	TitleBy string
	// Undelivered counts the session's replies a connector finally failed
	// to deliver and no person has seen yet (failed, unacked outbox rows).
	Undelivered int
}

// Who set a session's title. A title is replaced only by a later source
// of this list: the first message's line by a model's title, either by a
// person's.
const (
	TitleByInput = "input" // the first message's first line (TitleOf), set when it is logged
	TitleByModel = "model" // a few words a model wrote after the first reply
	TitleByUser  = "user"  // a person named it
)

// TitleLen is about the longest title TitleOf makes, in characters.
const TitleLen = 60

// MaxTitle is the longest title a session may have, in characters.
const MaxTitle = 200

// TitleOf makes a title from a message: its first line that holds
// something, with its spaces folded and control characters dropped, cut
// at a word boundary near TitleLen characters (marked with an ellipsis).
func TitleOf(text string) string {
	for line := range strings.Lines(text) {
		if t := CleanTitle(line); t != "" {
			return clip(t, TitleLen)
		}
	}
	return ""
}

// CleanTitle folds a title's white space (line breaks included) into
// single spaces and drops control characters, so that it prints as one
// line anywhere, a terminal included.
func CleanTitle(s string) string {
	s = strings.Map(func(r rune) rune {
		if unicode.IsControl(r) && !unicode.IsSpace(r) {
			return -1
		}
		return r
	}, s)
	return strings.Join(strings.Fields(s), " ")
}

// clip cuts s to about n characters, at a word boundary when there is one
// in the second half, and marks the cut with an ellipsis.
func clip(s string, n int) string {
	r := []rune(s)
	if len(r) <= n {
		return s
	}
	cut := string(r[:n])
	if i := strings.LastIndexByte(cut, ' '); i > len(cut)/2 {
		cut = cut[:i]
	}
	return strings.TrimRight(cut, " ,.;:-") + "…"
}

// Address returns "<agent>/<key>".
func (s *Session) Address() string { return s.Agent + "/" + s.Key }

// Inbox item states.
const (
	InboxPending = "pending" // accepted, not yet finished
	InboxDone    = "done"
)

// InboxItem is an accepted input waiting for, or given, its turn. Its ID is
// the turn id.
type InboxItem struct {
	ID             int64
	Session        int64
	Kind           event.Kind // event.Input, event.SystemMessage or event.Reset
	Silent         bool       // a system message that is logged but starts no turn
	Text           string
	Source         string
	Origin         string
	IdempotencyKey string // "" if none; unique per session otherwise
	// Options are the message lifecycle's options (JSON), nil if none.
	Options json.RawMessage
	// Images are the message's attached images, nil if none.
	Images []event.ImageRef
	// Hops counts the agent messages of the chain the item ends (0: none,
	// a message from a person or a job); never negative.
	Hops      int
	State     string
	CreatedAt time.Time
}

// Usage is one model call's usage, recorded for accounting.
type Usage struct {
	Session      int64
	Agent        string
	Model        string
	InputTokens  int
	OutputTokens int
	CostUSD      float64
	Time         time.Time
	// Payer is whose max_usd_per_day the call counts against (UsageSince
	// sums by it): "" is Agent. Account is the "<session id>:<turn id>"
	// of the turn whose max_usd_per_turn bounds it ("" for none:
	// UsageOfAccount sums by it).
	Payer   string
	Account string
}

// Batch is a set of writes committed together in one transaction.
type Batch struct {
	// Session is the session the events belong to (required if Events is not empty).
	Session int64
	// Events are appended in order; Commit sets their Seq.
	Events []event.Event
	// Done marks these inbox items done.
	Done []int64
	// State, if not empty, becomes the session's state.
	State string
	// Usage rows to record.
	Usage []Usage
	// Epoch, if not 0, is the epoch of the session's lease this node
	// holds (ClusterStore.Lease): the batch is written only if the node
	// still holds the lease at that epoch, checked in the commit's own
	// transaction, else Commit fails with ErrFenced. A batch outside any
	// turn (a marker, a recorded event) has none.
	Epoch int64
}

// AgentRecord is an agent definition as last loaded.
type AgentRecord struct {
	ID         string
	Name       string
	Type       string
	Definition []byte // the definition as JSON
	UpdatedAt  time.Time
}

// SessionFilter selects sessions to list.
type SessionFilter struct {
	Agent string // "" for all
	State string // "" for all
	Limit int    // 0 for a default of 100
}

// Store is the durable state of one agentd node.
type Store interface {
	// Session returns the session with this address, creating it (state
	// created) if it does not exist; created reports which.
	Session(ctx context.Context, agent, key string) (s Session, created bool, err error)
	// SessionByAddress returns an existing session, or ErrNotFound.
	SessionByAddress(ctx context.Context, agent, key string) (Session, error)
	// SessionByID returns a session by id, or ErrNotFound.
	SessionByID(ctx context.Context, id int64) (Session, error)
	// Sessions lists sessions, most recently updated first.
	Sessions(ctx context.Context, f SessionFilter) ([]Session, error)

	// Enqueue persists an inbox item. If the session already has an item
	// with the same non-empty IdempotencyKey it returns that item and
	// duplicate = true, and persists nothing.
	Enqueue(ctx context.Context, item InboxItem) (stored InboxItem, duplicate bool, err error)
	// Pending returns a session's pending inbox items, oldest first.
	Pending(ctx context.Context, session int64) ([]InboxItem, error)
	// PendingSessions returns the ids of sessions with pending inbox items.
	PendingSessions(ctx context.Context) ([]int64, error)
	// InboxItem returns an inbox item by id, or ErrNotFound.
	InboxItem(ctx context.Context, id int64) (InboxItem, error)
	// InboxByKey returns a session's inbox item with a non-empty
	// idempotency key, whatever its state, or ErrNotFound: what Enqueue
	// would answer as a duplicate.
	InboxByKey(ctx context.Context, session int64, key string) (InboxItem, error)

	// Commit writes a batch atomically and durably. Concurrent commits are
	// grouped into one transaction and one sync.
	Commit(ctx context.Context, b *Batch) error
	// Events returns up to limit events of a session with Seq > after, in order
	// (limit <= 0: all).
	Events(ctx context.Context, session, after int64, limit int) ([]event.Event, error)
	// ContextEvents returns the events a session's conversation is built
	// from: those after its last reset marker (inputs, messages, text,
	// tool calls and results, turn ends), the latest summary since then
	// standing in for the events it folds.
	ContextEvents(ctx context.Context, session int64) ([]event.Event, error)
	// TurnEvents returns the events of one turn, in order.
	TurnEvents(ctx context.Context, session, turn int64) ([]event.Event, error)

	// SaveAgent records an agent definition (as loaded from its file) so the
	// store knows every agent a session refers to.
	SaveAgent(ctx context.Context, a AgentRecord) error
	// Agents returns the recorded agents, by id.
	Agents(ctx context.Context) ([]AgentRecord, error)

	// UsageSince sums usage paid by an agent (Usage.Payer) since t (""
	// agent: all agents).
	UsageSince(ctx context.Context, agent string, t time.Time) (Usage, error)

	// Close flushes pending writes and closes the store.
	Close() error
}

// ErrBadCursor is returned (wrapped) for a paging cursor that is malformed or
// belongs to another query.
var ErrBadCursor = errors.New("invalid cursor")

// HistoryQuery is a full-text search over session histories.
type HistoryQuery struct {
	// Query is what to look for, as a person or a model types it: words,
	// all of which must occur (in any order); a word ending in * matches
	// words starting with it. It is never interpreted as query syntax.
	Query string
	// Agents limits the search to these agents' sessions; empty: all agents.
	Agents []string
	// Since and Until, when set, limit the search to events at or after
	// Since and before Until.
	Since, Until time.Time
	// Limit is the page size: 0 means 20, at most 100.
	Limit int
	// Cursor continues a previous search ("" for the first page).
	Cursor string
}

// HistoryHit is one event found by a history search.
type HistoryHit struct {
	Event event.Event
	Agent string // the session's agent
	Key   string // the session's key
	// Score is the relevance (BM25 in SQLite, ts_rank in PostgreSQL),
	// higher is better; scores are comparable within one search only.
	Score float64
	// Snippet is about 30 words of the event's text around the first
	// match, with the matching words wrapped in « and ».
	Snippet string
}

// Thread is a session with what a listing of conversations shows.
type Thread struct {
	Session
	Messages     int       // input, system_message and text events
	Title        string    // the first input's text, shortened (Session.Title is the session's title for people)
	LastActivity time.Time // the time of the newest event (CreatedAt if none)
}

// HistoryStore is what a store offers for searching histories and keeping
// working memory, beside Store. It is optional: a caller type-asserts it.
type HistoryStore interface {
	// SearchHistory returns a page of events whose text matches q, best
	// first, and the cursor of the next page ("" if there is none).
	SearchHistory(ctx context.Context, q HistoryQuery) (hits []HistoryHit, next string, err error)
	// Threads lists an agent's sessions, most recently updated first, and
	// the cursor of the next page ("" if there is none).
	Threads(ctx context.Context, agent string, limit int, cursor string) (threads []Thread, next string, err error)

	// SetWorking sets a key of a session's working memory to a JSON value
	// and logs a working_memory event, in one transaction; it returns the
	// event, with its sequence number, for the caller to publish.
	SetWorking(ctx context.Context, session int64, key string, value json.RawMessage) (event.Event, error)
	// DeleteWorking deletes a key (ErrNotFound if it is not set) and logs
	// a working_memory event, in one transaction; it returns the event.
	DeleteWorking(ctx context.Context, session int64, key string) (event.Event, error)
	// Working returns a session's working memory.
	Working(ctx context.Context, session int64) (map[string]json.RawMessage, error)
}

// Groupings of a usage report.
const (
	UsageByDay     = "day"     // by UTC day, oldest first
	UsageByAgent   = "agent"   // by agent, costliest first
	UsageBySession = "session" // by session address, costliest first
	UsageByModel   = "model"   // by model name, costliest first
)

// UsageGroups returns the groupings of a usage report, the default first.
func UsageGroups() []string {
	return []string{UsageByDay, UsageByAgent, UsageBySession, UsageByModel}
}

// Usage report row limits.
const (
	DefaultUsageLimit = 1000
	MaxUsageLimit     = 10000
)

// UsageQuery selects recorded usage (one row per model call) and groups it.
type UsageQuery struct {
	// Group is UsageByDay, UsageByAgent, UsageBySession or UsageByModel.
	Group string
	// Agent limits the report to one agent ("" for all).
	Agent string
	// Session limits it to one session, by address "<agent>/<key>" ("" for all).
	Session string
	// Since and Until, when set, limit it to usage recorded at or after
	// Since and before Until.
	Since, Until time.Time
	// Limit caps the rows: 0 means DefaultUsageLimit, at most MaxUsageLimit.
	Limit int
}

// UsageRow is the usage of one group: its key is the day (2006-01-02),
// the agent, the session's address or the model.
type UsageRow struct {
	Key          string
	InputTokens  int64
	OutputTokens int64
	CostUSD      float64
	Calls        int64 // model calls
}

// UsageReport is usage grouped as a UsageQuery asks.
type UsageReport struct {
	Rows []UsageRow
	// Total sums every row the query selects, those past the limit too.
	Total UsageRow
	// Truncated reports that there were more rows than the limit.
	Truncated bool
}

// OpsStore is what a store offers an operator beside Store: usage reports
// and figures for readiness and metrics. It is optional: a caller
// type-asserts it.
type OpsStore interface {
	// UsageReport groups the usage q selects; a bad query is ErrInvalid.
	UsageReport(ctx context.Context, q UsageQuery) (UsageReport, error)
	// QueueDepth counts the pending inbox items of every session.
	QueueDepth(ctx context.Context) (int64, error)
	// SessionStates counts sessions by state.
	SessionStates(ctx context.Context) (map[string]int64, error)
	// Ping reports whether the store answers a read.
	Ping(ctx context.Context) error
}

// OnceStore is what a store offers for work that must happen once in the
// cluster of nodes sharing it (a timer that fires, a source polled): a
// claim per piece of work, or a leader per role. On a store of one node
// (SQLite) the node is the cluster. It is optional: a caller
// type-asserts it.
type OnceStore interface {
	// Claim records that node takes the work key names, unless some
	// node took it before; it reports whether this call took it. A claim
	// stays: key names one piece of work, e.g. "cron:digest:2026-11-26T09:00".
	Claim(ctx context.Context, key, node string) (bool, error)
	// TryLead makes the caller the leader of role, unless someone leads
	// it already: then it returns nil and no error.
	TryLead(ctx context.Context, role string) (Lead, error)
}

// Lead is the leadership of a role, held until it is released or lost.
type Lead interface {
	// Lost is closed when the leadership ends: released, the store
	// closed, or (PostgreSQL) the connection that holds it lost. A
	// leader stops leading's work when it is.
	Lost() <-chan struct{}
	// Release ends the leadership; another may then take it.
	Release()
}
