package store

import (
	"context"
	"encoding/base64"
	"encoding/binary"
	"errors"
	"fmt"
	"math"
	"slices"
	"strings"
	"time"
	"unicode/utf8"
)

// ErrLimit is returned (wrapped, with the limit that refused: "max_children
// 8", "max_live 2000", "max_depth 3") by CreateInstance for an instance a
// limit of InstanceLimits does not let in. Nothing was written.
var ErrLimit = errors.New("agent limit reached")

// Dynamic agent instance states. An instance moves forward only
// (InstanceTransition): starting → running ⇄ idle → done, failed or
// stopped.
const (
	AgentStarting = "starting" // its row is written, its first input maybe not yet
	AgentRunning  = "running"  // a turn of it runs, or is queued
	AgentIdle     = "idle"     // waiting for a message (user, swarm, permanent)
	AgentDone     = "done"     // its task completed
	AgentFailed   = "failed"   // its task ended otherwise (a budget, an error)
	AgentStopped  = "stopped"  // stopped by a person, its parent or a cancelled turn
)

// AgentStates returns the instance states, the live ones first (starting,
// running, idle), then the ends.
func AgentStates() []string {
	return []string{AgentStarting, AgentRunning, AgentIdle, AgentDone, AgentFailed, AgentStopped}
}

// LiveAgentStates returns the states of an instance that has not ended.
func LiveAgentStates() []string { return AgentStates()[:3] }

// AgentEnded reports whether state is an end (done, failed, stopped).
func AgentEnded(state string) bool {
	return slices.Contains(AgentStates(), state) && !slices.Contains(LiveAgentStates(), state)
}

// The agent types a row of agentd_instances may have: package agent's
// types that have instances (cron and system agents have none).
const (
	InstanceUser       = "user"
	InstanceSwarm      = "swarm"
	InstancePermanent  = "permanent"
	InstanceBackground = "background"
	InstanceSubagent   = "subagent"
)

// InstanceTypes returns the types an instance may have.
func InstanceTypes() []string {
	return []string{InstanceUser, InstanceSwarm, InstancePermanent, InstanceBackground, InstanceSubagent}
}

// TaskTypes returns the types of the instances InstanceLimits.MaxLive
// counts: agents started to do a task (background agents and sub-agents).
func TaskTypes() []string { return []string{InstanceBackground, InstanceSubagent} }

// ContactTypes returns the types of the instances InstanceLimits.MaxContacts
// counts: those people make on first contact (user and swarm).
func ContactTypes() []string { return []string{InstanceUser, InstanceSwarm} }

// How an instance reports its end to ReportTo.
const (
	ReportLoud   = "loud"   // a system message that starts the parent's turn
	ReportSilent = "silent" // a silent one: it enters the parent's next turn
)

// Instance limits and sizes.
const (
	// InstanceIDLen is the length of an instance id (a cuid2): a
	// lowercase letter, then lowercase letters and digits.
	InstanceIDLen = 24
	// MaxInstanceText bounds an instance's descriptor and its other
	// names and addresses, in bytes.
	MaxInstanceText = 1024
	// MaxInstanceTask bounds its task (its first message), in bytes: as
	// an input's text is bounded.
	MaxInstanceTask = 1 << 20
	// MaxInstanceResult bounds its result (or a report's failure); a
	// longer one is cut (RunText).
	MaxInstanceResult = 64 << 10
	// DefaultInstanceLimit is how many rows Instances returns for a
	// limit of 0; MaxInstanceLimit the most it returns.
	DefaultInstanceLimit = 500
	MaxInstanceLimit     = 5000
)

// Instance is a dynamic agent: an instance of a definition (its template),
// made at run time, a row of agentd_instances.
type Instance struct {
	ID         string // cuid2 (IsInstanceID)
	Type       string // InstanceUser, …, InstanceSubagent
	Descriptor string // unique: what made it finds it again (first contact, a tool call re-run)
	// Agent is the registry id its sessions run under: ID, or a
	// permanent agent's name. Unique; CreateInstance defaults it to ID.
	Agent    string
	Template string // the definition it is derived from ("" for a permanent agent)
	Name     string // a label
	// Parent is the agent id (Agent of an instance, or a definition's id)
	// of the agent that started it, "" for none. Root and Depth are
	// derived from it by CreateInstance (the caller's are ignored): with
	// no parent, Root is Agent and Depth 0; with a parent that is an
	// instance, its Root and its Depth + 1; with a parent that is not
	// (a definition), Parent and 1.
	Parent string
	Root   string
	Depth  int
	// Payer is whose max_usd_per_day pays its spending; Account the
	// "<session id>:<turn id>" of the turn whose max_usd_per_turn bounds
	// it with that turn (a sub-agent's); TurnLimit that turn's limit when
	// it started (0 none).
	Payer     string
	Account   string
	TurnLimit float64
	// Report is how it reports its end (ReportLoud, ReportSilent, ""
	// not at all) to the session ReportTo ("<agent>/<key>").
	Report   string
	ReportTo string
	// OriginTurn and OriginCall are the parent's turn and tool call that
	// started it (0 and "" for none).
	OriginTurn int64
	OriginCall string
	Task       string // its first message
	Hops       int    // the hops of its first message
	// Budgets are the budget options of its first input as JSON ("" for
	// none), kept so that a recovery that submits an input a crash lost
	// submits it with them.
	Budgets string
	State   string // AgentStarting, …, AgentStopped
	// Result is its final answer or why it failed or stopped, set when
	// it ends.
	Result string
	Turn   int64 // its first message's turn id (0 until known)
	// CreatedAt and UpdatedAt are set by the store; EndedAt when it
	// ends, ReportedAt when its report was recorded (RecordReport): zero
	// until then. ReportError is why a report was given up ("" when it
	// was delivered).
	CreatedAt, UpdatedAt, EndedAt, ReportedAt time.Time
	ReportError                               string
}

// InstanceLimits are the limits CreateInstance holds a new task (a
// background agent or sub-agent: TaskTypes) or a new contact (a user or
// swarm instance: ContactTypes) to; 0 is none. An instance of another
// type, or one whose descriptor exists, is not checked.
type InstanceLimits struct {
	// MaxDepth bounds the new instance's depth.
	MaxDepth int
	// MaxChildren bounds the live sub-agents of one parent that report to
	// one session: a sub-agent is refused when its parent has that many
	// with its ReportTo.
	MaxChildren int
	// MaxLive bounds the live tasks of the store (of the node, or of the
	// cluster sharing it).
	MaxLive int
	// MaxContacts bounds the live contacts of the store: a new person's
	// instance is refused when that many user and swarm instances live.
	MaxContacts int
}

// AgentFilter selects instances to list. Empty fields select all.
type AgentFilter struct {
	Type   string
	Parent string // the parent's agent id
	Root   string
	State  string
	Live   bool // only instances that have not ended
	// Limit is the page size: 0 means DefaultInstanceLimit, at most
	// MaxInstanceLimit.
	Limit int
	// Before is the cursor of the page ("" for the first): Instances
	// returns the next page's.
	Before string
}

// AgentStore keeps the dynamic agents' instances. Both stores implement
// it; it is optional, a caller type-asserts it.
type AgentStore interface {
	// CreateInstance inserts a unless an instance of its descriptor
	// exists: then it returns that one and created false, and checks
	// nothing. Otherwise it derives a's Root and Depth from its parent
	// and, a being a task, holds it to l, all in the insert's
	// transaction (so that concurrent creators, on any node, cannot pass
	// a limit together); a limit that refuses is ErrLimit. A's state is
	// a live one; CreatedAt and UpdatedAt are now, EndedAt and
	// ReportedAt zero.
	CreateInstance(ctx context.Context, a Instance, l InstanceLimits) (inst Instance, created bool, err error)
	// Instance returns an instance by id, or ErrNotFound.
	Instance(ctx context.Context, id string) (Instance, error)
	// InstanceByDescriptor returns the instance of a descriptor, or
	// ErrNotFound.
	InstanceByDescriptor(ctx context.Context, descriptor string) (Instance, error)
	// InstanceByAgent returns the instance whose sessions run under the
	// agent id (a permanent agent's name, or an instance id), or
	// ErrNotFound.
	InstanceByAgent(ctx context.Context, agent string) (Instance, error)
	// Instances lists the instances f selects, newest first, and the
	// cursor of the next page ("" if there is none).
	Instances(ctx context.Context, f AgentFilter) (rows []Instance, next string, err error)
	// SetInstanceState moves an instance to state if InstanceTransition
	// allows it, and reports whether it did (false: the move was not
	// forward, nothing changed). An end sets EndedAt and Result (cut at
	// MaxInstanceResult; result is ignored otherwise); a turn not 0 sets
	// Turn if it is 0. An instance that does not exist is ErrNotFound.
	SetInstanceState(ctx context.Context, id, state, result string, turn int64) (bool, error)
	// RecordReport records that an ended instance's report was made
	// (failure "") or given up for that reason, once: it reports whether
	// this call recorded it. An instance still live is ErrConflict, one
	// that does not exist ErrNotFound.
	RecordReport(ctx context.Context, id, failure string) (first bool, err error)
	// RecordRefusal records that an ended instance's report, accepted by
	// the session it reports to, was refused there after all (at its
	// turn's start: that session was stopped or closed meanwhile):
	// ReportError becomes failure, whether or not the report was recorded
	// as delivered (ReportedAt is set if it was not). A failure recorded
	// before is kept. It reports whether this call changed the row; an
	// instance still live is ErrConflict, one that does not exist
	// ErrNotFound.
	RecordRefusal(ctx context.Context, id, failure string) (changed bool, err error)
	// UnreportedInstances returns up to limit (0: DefaultInstanceLimit)
	// ended instances that report and whose report is not recorded,
	// oldest end first.
	UnreportedInstances(ctx context.Context, limit int) ([]Instance, error)
	// OpenInstances returns the instances starting or running, oldest
	// first.
	OpenInstances(ctx context.Context) ([]Instance, error)
	// InstanceCosts sums the usage (cost_usd) of the agents ids (agent
	// ids: Instance.Agent), by agent; an agent without usage is absent.
	InstanceCosts(ctx context.Context, ids []string) (map[string]float64, error)
	// MostRecent returns the live instance of type typ whose session was
	// updated last (ErrNotFound if none has a session).
	MostRecent(ctx context.Context, typ string) (Instance, error)
	// UsageOfAccount sums the cost of the usage recorded with account
	// (Usage.Account).
	UsageOfAccount(ctx context.Context, account string) (float64, error)
}

// IsInstanceID reports whether id has an instance id's shape: a cuid2 of
// InstanceIDLen characters, a lowercase letter then lowercase letters and
// digits.
func IsInstanceID(id string) bool {
	if len(id) != InstanceIDLen || id[0] < 'a' || id[0] > 'z' {
		return false
	}
	for i := 1; i < len(id); i++ {
		if c := id[i]; (c < 'a' || c > 'z') && (c < '0' || c > '9') {
			return false
		}
	}
	return true
}

// InstanceCreate checks an instance CreateInstance is given and returns it
// ready to write: Agent defaulting to ID, times now (EndedAt, ReportedAt
// zero), Result and ReportError empty. Root and Depth are the store's to
// derive.
func InstanceCreate(a Instance, now time.Time) (Instance, error) {
	if !IsInstanceID(a.ID) {
		return a, fmt.Errorf("instance id %q: want %d lowercase letters and digits, a letter first", a.ID, InstanceIDLen)
	}
	if !slices.Contains(InstanceTypes(), a.Type) {
		return a, fmt.Errorf("instance %s: unknown type %q", a.ID, a.Type)
	}
	if a.Agent == "" {
		a.Agent = a.ID
	}
	if a.Agent != a.ID && a.Type != InstancePermanent {
		return a, fmt.Errorf("instance %s: agent %q: only a permanent agent runs under a name of its own", a.ID, a.Agent)
	}
	if a.Descriptor == "" {
		return a, fmt.Errorf("instance %s: empty descriptor", a.ID)
	}
	for _, f := range [...]struct{ what, s string }{{"descriptor", a.Descriptor}, {"agent", a.Agent}, {"template", a.Template},
		{"name", a.Name}, {"parent", a.Parent}, {"payer", a.Payer}, {"account", a.Account}, {"report_to", a.ReportTo},
		{"origin_call", a.OriginCall}, {"budgets", a.Budgets}} {
		if err := checkInstanceText(f.s, MaxInstanceText); err != nil {
			return a, fmt.Errorf("instance %s: %s: %v", a.ID, f.what, err)
		}
	}
	if strings.Contains(a.Agent, "/") || strings.Contains(a.Parent, "/") {
		return a, fmt.Errorf("instance %s: an agent id holds no '/'", a.ID)
	}
	if err := checkInstanceText(a.Task, MaxInstanceTask); err != nil {
		return a, fmt.Errorf("instance %s: task: %v", a.ID, err)
	}
	switch a.Report {
	case "":
	case ReportLoud, ReportSilent:
		if a.ReportTo == "" {
			return a, fmt.Errorf("instance %s: reports %s to no session", a.ID, a.Report)
		}
	default:
		return a, fmt.Errorf("instance %s: report %q: want %q, %q or none", a.ID, a.Report, ReportLoud, ReportSilent)
	}
	if !slices.Contains(LiveAgentStates(), a.State) {
		return a, fmt.Errorf("instance %s: state %q: an instance starts %s", a.ID, a.State, strings.Join(LiveAgentStates(), ", "))
	}
	if a.Hops < 0 || a.OriginTurn < 0 || a.Turn < 0 || a.TurnLimit < 0 || math.IsNaN(a.TurnLimit) || math.IsInf(a.TurnLimit, 0) {
		return a, fmt.Errorf("instance %s: negative or not finite hops, turn or limit", a.ID)
	}
	a.Root, a.Depth = "", 0
	a.CreatedAt, a.UpdatedAt = now.UTC(), now.UTC()
	a.EndedAt, a.ReportedAt, a.Result, a.ReportError = time.Time{}, time.Time{}, "", ""
	return a, nil
}

// Lineage returns an instance's Root and Depth: with no parent, its agent
// and 0; with a parent instance (found, of that root and depth), its root
// and depth + 1; with a parent that is no instance, the parent and 1.
func Lineage(a Instance, parentFound bool, parentRoot string, parentDepth int) (root string, depth int) {
	switch {
	case a.Parent == "":
		return a.Agent, 0
	case parentFound:
		return parentRoot, parentDepth + 1
	}
	return a.Parent, 1
}

// LiveCounted reports whether a limit of l counts the live instances a
// new instance of type typ is among, and whether those are contacts
// (ContactTypes) rather than tasks (TaskTypes): what a store counts for
// InstanceRefusal's live.
func LiveCounted(typ string, l InstanceLimits) (count, contacts bool) {
	switch {
	case l.MaxLive > 0 && slices.Contains(TaskTypes(), typ):
		return true, false
	case l.MaxContacts > 0 && slices.Contains(ContactTypes(), typ):
		return true, true
	}
	return false, false
}

// InstanceRefusal checks a new instance against l: depth is its derived
// depth, children its parent's live sub-agents reporting to its ReportTo,
// live the store's live instances it counts among (LiveCounted). It
// returns the ErrLimit that refuses it, or nil. Only a task (TaskTypes)
// and a contact (ContactTypes) are checked, children only for a
// sub-agent.
func InstanceRefusal(a Instance, l InstanceLimits, depth, children, live int) error {
	if slices.Contains(ContactTypes(), a.Type) {
		if l.MaxContacts > 0 && live >= l.MaxContacts {
			return fmt.Errorf("%w: max_contacts %d", ErrLimit, l.MaxContacts)
		}
		return nil
	}
	if !slices.Contains(TaskTypes(), a.Type) {
		return nil
	}
	switch {
	case l.MaxDepth > 0 && depth > l.MaxDepth:
		return fmt.Errorf("%w: max_depth %d", ErrLimit, l.MaxDepth)
	case l.MaxChildren > 0 && a.Type == InstanceSubagent && children >= l.MaxChildren:
		return fmt.Errorf("%w: max_children %d", ErrLimit, l.MaxChildren)
	case l.MaxLive > 0 && live >= l.MaxLive:
		return fmt.Errorf("%w: max_live %d", ErrLimit, l.MaxLive)
	}
	return nil
}

// InstanceTransition reports whether an instance in state from may move
// to to: forward only, between running and idle both ways, never out of
// an end.
func InstanceTransition(from, to string) bool {
	if AgentEnded(from) || from == to || to == AgentStarting {
		return false
	}
	return slices.Contains(AgentStates(), to)
}

// CheckInstanceState checks a SetInstanceState and returns its result as
// an instance keeps it: cut at MaxInstanceResult for an end, "" otherwise.
func CheckInstanceState(id, state, result string, turn int64) (string, error) {
	if !IsInstanceID(id) {
		return "", fmt.Errorf("instance id %q", id)
	}
	if !slices.Contains(AgentStates(), state) {
		return "", fmt.Errorf("instance %s: unknown state %q", id, state)
	}
	if turn < 0 {
		return "", fmt.Errorf("instance %s: turn %d", id, turn)
	}
	if !AgentEnded(state) {
		return "", nil
	}
	return RunText(result, MaxInstanceResult), nil
}

// InstanceQuery checks an AgentFilter and returns its page size and the
// cursor's position (created_at in unix nanoseconds and id; 0 and "" for
// the first page).
func InstanceQuery(f AgentFilter) (limit int, created int64, id string, err error) {
	switch {
	case f.Limit < 0:
		return 0, 0, "", fmt.Errorf("limit %d", f.Limit)
	case f.Limit == 0:
		limit = DefaultInstanceLimit
	default:
		limit = min(f.Limit, MaxInstanceLimit)
	}
	if f.Type != "" && !slices.Contains(InstanceTypes(), f.Type) {
		return 0, 0, "", fmt.Errorf("unknown type %q", f.Type)
	}
	if f.State != "" && !slices.Contains(AgentStates(), f.State) {
		return 0, 0, "", fmt.Errorf("unknown state %q", f.State)
	}
	if f.Before != "" {
		if created, id, err = decodeInstanceCursor(f.Before); err != nil {
			return 0, 0, "", err
		}
	}
	return limit, created, id, nil
}

// InstanceCursor returns the cursor of the instances listed after a.
func InstanceCursor(a Instance) string {
	b := binary.AppendVarint(nil, a.CreatedAt.UnixNano())
	return instanceCursorPrefix + base64.RawURLEncoding.EncodeToString(append(b, a.ID...))
}

const instanceCursorPrefix = "i1."

func decodeInstanceCursor(c string) (int64, string, error) {
	rest, ok := strings.CutPrefix(c, instanceCursorPrefix)
	if !ok || len(rest) > 64 {
		return 0, "", fmt.Errorf("%w %q", ErrBadCursor, c)
	}
	b, err := base64.RawURLEncoding.DecodeString(rest)
	if err != nil {
		return 0, "", fmt.Errorf("%w %q", ErrBadCursor, c)
	}
	ts, n := binary.Varint(b)
	if n <= 0 || !IsInstanceID(string(b[n:])) {
		return 0, "", fmt.Errorf("%w %q", ErrBadCursor, c)
	}
	return ts, string(b[n:]), nil
}

// ReportConflict is the ErrConflict of a RecordReport of an instance that
// is still live.
func ReportConflict(a Instance) error {
	return fmt.Errorf("%w: instance %s is %s: it has no report yet", ErrConflict, a.ID, a.State)
}

// checkInstanceText reports what is wrong with a text an instance keeps:
// not valid UTF-8, a NUL (which PostgreSQL's text refuses), longer than
// limit bytes.
func checkInstanceText(s string, limit int) error {
	switch {
	case len(s) > limit:
		return fmt.Errorf("longer than %d bytes", limit)
	case !utf8.ValidString(s) || strings.ContainsRune(s, 0):
		return errors.New("not valid text")
	}
	return nil
}
