// Package agentsys is agentd's agent system: the dynamic agents made at run
// time (user and swarm instances made on first contact, background agents
// and sub-agents started by an agent or a person, permanent agents made by
// an agent), their life cycle, the supervisor that finishes them and
// reports their ends to their parents exactly once, the cancellation of a
// subtree, the ledger that makes a turn and the sub-agents it started share
// one budget, the guards (hops, depth, live children, a global cap), and
// their recovery after a crash. A dynamic agent is an instance of a
// definition (its template): the registry resolves its id to a derived
// definition through Definition, so the runtime runs its sessions as any
// agent's.
package agentsys

import (
	"context"
	"errors"
	"log/slog"
	"time"

	"agentd/internal/agent"
	"agentd/internal/event"
	"agentd/internal/model"
	"agentd/internal/runtime"
	"agentd/internal/store"
)

// Errors the System returns (wrapped, with a lowercase prefix saying what
// was refused). A limit of the store is store.ErrLimit.
var (
	// ErrNotFound: no agent of that id, name, descriptor or tag.
	ErrNotFound = errors.New("no such agent")
	// ErrNotTemplate: the definition cannot make an instance of the kind
	// asked (a contact on a template that is not of type user or swarm, a
	// start from a definition the caller may not use, an instance as a
	// template).
	ErrNotTemplate = errors.New("not a template for that")
	// ErrReach: the caller may not reach that agent (not its parent, its
	// child, nor a target its definition's agents.targets allows).
	ErrReach = errors.New("agent out of reach")
	// ErrEnded: the agent has ended (done, failed, stopped) and takes no
	// more messages.
	ErrEnded = errors.New("agent has ended")
	// ErrHops: the message would pass agents.max_hops.
	ErrHops = errors.New("hop limit reached")
)

// Runtime is what the System needs of *runtime.Runtime.
type Runtime interface {
	Submit(ctx context.Context, in runtime.Input) (runtime.Receipt, error)
	Send(ctx context.Context, in runtime.Input) (runtime.Receipt, event.TurnEndData, error)
	Wait(ctx context.Context, turn int64) (event.TurnEndData, error)
	CancelRunning(session, turn int64)
	CloseSession(ctx context.Context, addr string) error
	Stop(ctx context.Context, addr, reason string) error
	Record(ctx context.Context, addr string, evs ...event.Event) error
}

// Store is what the System reads and writes: the instances, and the
// sessions, inboxes and logs of their conversations. Both stores
// implement it.
type Store interface {
	store.AgentStore
	SessionByAddress(ctx context.Context, agent, key string) (store.Session, error)
	Pending(ctx context.Context, session int64) ([]store.InboxItem, error)
	Events(ctx context.Context, session, after int64, limit int) ([]event.Event, error)
}

// Definitions resolves agent ids to definitions (the agent registry).
type Definitions interface {
	Get(id string) (*agent.Definition, bool)
}

// Recorder writes an agent event into the log of a session whose turn is
// running, under the turn's epoch the ctx carries (a tool's ctx), as the
// turn's own tools write working memory.
type Recorder interface {
	RecordAgent(ctx context.Context, session string, turn int64, d event.AgentData) error
}

// Tagged finds the agents a tag addresses (command.Router.Tagged).
type Tagged interface {
	Tagged(tag string) []string
}

// Jobs names the jobs that run an agent, for the list's cron agents.
type Jobs interface {
	// JobAgents returns, by job name, the agent each job runs on.
	JobAgents() map[string]string
}

// Options are the System's optional parts.
type Options struct {
	// Config holds the limits (agentd.yaml agents:); a zero field is its
	// default (agent.DefaultMaxHops, …).
	Config agent.AgentsConfig
	// Agents resolves templates and callers (default: none resolves, so
	// nothing can be started).
	Agents Definitions
	// Recorder logs guard events in the caller's log (default: none are
	// logged; the refusal still reaches the caller).
	Recorder Recorder
	// Tags resolves "#tag" targets (default: no tag resolves).
	Tags Tagged
	// Jobs lists cron agents (default: none are listed).
	Jobs Jobs
	// Logger (default: discard).
	Logger *slog.Logger
	// Now is the clock (default time.Now).
	Now func() time.Time
	// Shared says the store is shared by other nodes (PostgreSQL): the
	// ledger re-reads an account's spending when its view is older than a
	// second (default false).
	Shared bool
	// Sweep is how often the supervisor looks for work a turn's end did
	// not bring it (default 30s).
	Sweep time.Duration
	// Lead, when set, makes only the node that leads LeadRole sweep (on a
	// store several nodes share); every node still finishes the turns it
	// ran. Default: this node sweeps.
	Lead Leader
}

// LeadRole is the role whose leader sweeps for the dynamic agents.
const LeadRole = "agents"

// Leader grants a role's leadership (store.OnceStore).
type Leader interface {
	TryLead(ctx context.Context, role string) (store.Lead, error)
}

// StartRequest starts a background agent or a sub-agent.
type StartRequest struct {
	// Caller is the starting agent's id ("" for a person through the
	// API); CallerSession its session's address ("<agent>/<key>"); Turn
	// the caller's turn (inbox item id), CallID the tool call, Hops the
	// hops of the input the caller's turn serves.
	Caller        string
	CallerSession string
	Turn          int64
	CallID        string
	Hops          int
	// Prompt is the new agent's first message (its task).
	Prompt string
	// Template is the definition it is made from ("" the caller's own).
	Template string
	// Name labels it.
	Name string
	// Detached makes a background agent (own budget, not cancelled with
	// the caller) instead of a sub-agent.
	Detached bool
	// Report is how it reports its end: store.ReportLoud ("" too, for a
	// caller), store.ReportSilent.
	Report string

	// Key is a person's Idempotency-Key (descriptor "task:api:<key>"; ""
	// a fresh one). ReportTo is the session address a person's start
	// reports to ("" none). Budgets tighten its first input's budgets.
	Key      string
	ReportTo string
	Budgets  *agent.Budgets
}

// SendRequest sends a message to an agent.
type SendRequest struct {
	Caller        string
	CallerSession string
	Turn          int64
	CallID        string
	Hops          int
	// Target is an instance id, an agent id or name, "#tag", or "" for
	// the most recent user agent (most-recent-foreground).
	Target string
	Text   string
	// Silent messages are logged and enter the target's next turn
	// without starting one.
	Silent bool
}

// AskRequest asks an agent a question and waits for its answer.
type AskRequest struct {
	Caller        string
	CallerSession string
	Turn          int64
	CallID        string
	Hops          int
	Target        string
	Question      string
	// Timeout bounds the wait (0 or more than agents.ask_timeout: that).
	Timeout time.Duration
}

// AskResult is an ask's answer.
type AskResult struct {
	Answer  string  `json:"answer"`
	Status  string  `json:"status"` // the callee's turn end status
	CostUSD float64 `json:"cost_usd"`
	Session string  `json:"session"` // the callee's session that answered
}

// Contact is a person's message to a user or swarm template through a
// connector: it goes to that person's instance, made on first contact.
type Contact struct {
	Template       string
	Connector      string
	Channel        string
	User           string
	Text           string
	IdempotencyKey string
	// Images go with Text to the model (a photo sent in a chat).
	Images []model.Image
	// Source is the input's source (telegram, discord, slack); "" is
	// contact.
	Source string
	// MessageID is the platform's id of the message ("" none), kept as
	// the input's Origin: the connector's reply answers it.
	MessageID string
}

// Info is one agent in a list: an instance, or a definition (cron and
// system agents get a computed descriptor).
type Info struct {
	ID           string    `json:"id"`
	Name         string    `json:"name,omitempty"`
	Type         string    `json:"type"`
	Descriptor   string    `json:"descriptor,omitempty"`
	Template     string    `json:"template,omitempty"`
	Parent       string    `json:"parent,omitempty"`
	Root         string    `json:"root,omitempty"`
	Depth        int       `json:"depth,omitempty"`
	State        string    `json:"state"`
	Session      string    `json:"session,omitempty"` // its main session's address
	Model        string    `json:"model,omitempty"`
	Dynamic      bool      `json:"dynamic,omitempty"`  // an instance (not a definition)
	LiveChildren int       `json:"children,omitempty"` // live children
	CostUSD      float64   `json:"cost_usd,omitempty"` // its own
	CreatedAt    time.Time `json:"created_at,omitzero"`
	EndedAt      time.Time `json:"ended_at,omitzero"`
}

// Node is an agent in a tree, with its children and the cost of its
// subtree.
type Node struct {
	Info
	Children    []Node  `json:"children,omitempty"`
	CostTreeUSD float64 `json:"cost_tree_usd,omitempty"`
}

// Status is one agent's state: its instance, its main session, the last
// turn's end, its live children and costs.
type Status struct {
	Info
	Instance     store.Instance     `json:"-"`
	SessionState string             `json:"session_state,omitempty"`
	LastEnd      *event.TurnEndData `json:"last_end,omitempty"`
	Result       string             `json:"result,omitempty"`
	ReportedAt   time.Time          `json:"reported_at,omitzero"`
	ReportError  string             `json:"report_error,omitempty"`
	Children     []Info             `json:"children_live,omitempty"`
	CostTreeUSD  float64            `json:"cost_tree_usd,omitempty"`
}

var _ Runtime = (*runtime.Runtime)(nil)
