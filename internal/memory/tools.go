package memory

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"

	"agentd/internal/tool"
)

// ToolOptions configure the memory tools. nil gives the defaults.
type ToolOptions struct {
	// Shared reports whether an agent may read and write the memories
	// shared between agents. nil: no agent may.
	Shared func(agentID string) bool
}

// ErrBadArgs is returned by the memory tools for arguments they cannot use.
var ErrBadArgs = errors.New("bad arguments")

// Tools returns the memory tools: remember, recall, forget and relate. A
// call's scope is its own (Call.Scope, else its agent); its provenance
// is its session and turn.
func Tools(s *Store, o *ToolOptions) []tool.Tool {
	var opt ToolOptions
	if o != nil {
		opt = *o
	}
	t := &tools{s: s, shared: opt.Shared}
	return []tool.Tool{
		tool.Func(tool.Spec{Name: "remember", Description: rememberDesc, InputSchema: json.RawMessage(rememberSchema)}, t.remember),
		tool.Func(tool.Spec{Name: "recall", Description: recallDesc, InputSchema: json.RawMessage(recallSchema), ReadOnly: true}, t.recall),
		tool.Func(tool.Spec{Name: "forget", Description: forgetDesc, InputSchema: json.RawMessage(forgetSchema), Idempotent: true}, t.forget), // the agent's own memory: no approval by default
		tool.Func(tool.Spec{Name: "relate", Description: relateDesc, InputSchema: json.RawMessage(relateSchema), Idempotent: true}, t.relate),
	}
}

const rememberDesc = `Store something in your long-term memory so you can recall it in later conversations.
Either record facts about named entities (people, projects, places, things): each entity gets a name, an optional type and short, self-contained observations ("prefers email over phone"); entities that already exist are extended, and a fact already known is not stored twice.
Or record a free-form insight (a lesson, a preference, a summary) with optional tags. Both may be given at once.`

const rememberSchema = `{
  "type": "object",
  "properties": {
    "entities": {
      "type": "array",
      "description": "Entities to create or add observations to.",
      "items": {
        "type": "object",
        "properties": {
          "name": {"type": "string", "description": "The entity's name, e.g. \"Alice Chen\" or \"billing-service\". Names are matched case-insensitively."},
          "type": {"type": "string", "description": "What kind of thing it is, e.g. person, project, company, place."},
          "observations": {"type": "array", "items": {"type": "string"}, "description": "Short facts about the entity, one per item."}
        },
        "required": ["name"],
        "additionalProperties": false
      }
    },
    "insight": {"type": "string", "description": "A free-form note worth remembering, not tied to one entity."},
    "tags": {"type": "array", "items": {"type": "string"}, "description": "Tags for the insight."},
    "shared": {"type": "boolean", "description": "Store in the memory shared with other agents instead of your own (only if you are allowed to)."}
  },
  "additionalProperties": false
}`

const recallDesc = `Search your long-term memory. Give a question or some keywords; results are ranked by relevance (matching words and similar wording), newer memories first among equals, with near-duplicates left out.
Each result starts with its kind and id, e.g. [observation 12], which you can pass to forget.`

const recallSchema = `{
  "type": "object",
  "properties": {
    "query": {"type": "string", "description": "What to look for, e.g. \"Alice's preferred contact method\"."},
    "k": {"type": "integer", "minimum": 1, "maximum": 100, "description": "How many results, default 10."},
    "kinds": {"type": "array", "items": {"type": "string", "enum": ["entity", "observation", "insight"]}, "description": "Only these kinds of memory; all by default."},
    "since": {"type": "string", "description": "Only memories stored on or after this date (YYYY-MM-DD or RFC 3339 time)."}
  },
  "required": ["query"],
  "additionalProperties": false
}`

const forgetDesc = `Delete memories that are wrong or no longer wanted. Name entities (deleting them with all their observations and relations), or give the ids of single observations, insights or relations as recall shows them.`

const forgetSchema = `{
  "type": "object",
  "properties": {
    "entities": {"type": "array", "items": {"type": "string"}, "description": "Names of entities to delete entirely."},
    "observations": {"type": "array", "items": {"type": "integer"}, "description": "Ids of observations to delete."},
    "insights": {"type": "array", "items": {"type": "integer"}, "description": "Ids of insights to delete."},
    "relations": {"type": "array", "items": {"type": "integer"}, "description": "Ids of relations to delete."},
    "shared": {"type": "boolean", "description": "Delete from the memory shared with other agents instead of your own."}
  },
  "additionalProperties": false
}`

const relateDesc = `Record how entities in your long-term memory are connected, as directed relations in active voice: from "Alice" type "works_at" to "Acme". Entities that do not exist yet are created.`

const relateSchema = `{
  "type": "object",
  "properties": {
    "relations": {
      "type": "array",
      "minItems": 1,
      "items": {
        "type": "object",
        "properties": {
          "from": {"type": "string", "description": "The source entity's name."},
          "type": {"type": "string", "description": "The relation, in active voice, e.g. works_at, manages, depends_on."},
          "to": {"type": "string", "description": "The target entity's name."}
        },
        "required": ["from", "type", "to"],
        "additionalProperties": false
      }
    },
    "shared": {"type": "boolean", "description": "Store in the memory shared with other agents instead of your own."}
  },
  "required": ["relations"],
  "additionalProperties": false
}`

type tools struct {
	s      *Store
	shared func(string) bool
}

// decodeArgs decodes a call's arguments strictly (tool.DecodeArgs), an
// error being ErrBadArgs.
func decodeArgs(raw json.RawMessage, v any) error {
	if err := tool.DecodeArgs(raw, v); err != nil {
		return fmt.Errorf("%w: %v", ErrBadArgs, err)
	}
	return nil
}

// provenance takes the session from c and the turn from the prefix of
// c.ID before the first '.'.
func provenance(c *tool.Call) Provenance {
	p := Provenance{Session: c.Session}
	prefix, _, _ := strings.Cut(c.ID, ".")
	if n, err := strconv.ParseInt(prefix, 10, 64); err == nil && n > 0 {
		p.Turn = n
	}
	return p
}

// ownScope is the memory the calling agent reads and writes: its scope
// (a swarm instance's own, another instance's its template's), or the
// agent's id when the call has none.
func ownScope(c *tool.Call) string {
	if c.Scope != "" {
		return c.Scope
	}
	return c.Agent
}

func (t *tools) mayShare(agent string) bool { return t.shared != nil && t.shared(agent) }

// scope is the call's own scope (ownScope), or Shared when asked for and
// allowed.
func (t *tools) scope(c *tool.Call, shared bool) (string, error) {
	if c.Agent == "" {
		return "", fmt.Errorf("%w: the call has no agent", ErrBadArgs)
	}
	if !shared {
		return ownScope(c), nil
	}
	if !t.mayShare(c.Agent) {
		return "", fmt.Errorf("%w: this agent may not use the shared memory", ErrBadArgs)
	}
	return Shared, nil
}

func (t *tools) remember(ctx context.Context, c *tool.Call) (tool.Result, error) {
	var a struct {
		Entities []struct {
			Name         string   `json:"name"`
			Type         string   `json:"type"`
			Observations []string `json:"observations"`
		} `json:"entities"`
		Insight string   `json:"insight"`
		Tags    []string `json:"tags"`
		Shared  bool     `json:"shared"`
	}
	if err := decodeArgs(c.Args, &a); err != nil {
		return tool.Result{}, err
	}
	scope, err := t.scope(c, a.Shared)
	if err != nil {
		return tool.Result{}, err
	}
	in := Remember{Insight: a.Insight, Tags: a.Tags}
	for _, e := range a.Entities {
		in.Entities = append(in.Entities, EntityInput{Name: e.Name, Type: e.Type, Observations: e.Observations})
	}
	res, err := t.s.Remember(ctx, scope, in, provenance(c))
	if err != nil {
		return tool.Result{}, err
	}
	var parts []string
	if len(res.Created) > 0 {
		parts = append(parts, "created "+plural(len(res.Created), "entity", "entities")+": "+strings.Join(res.Created, ", "))
	}
	if len(res.Observations) > 0 {
		parts = append(parts, "added "+plural(len(res.Observations), "observation", "observations")+" (ids "+joinIDs(res.Observations)+")")
	}
	if res.Duplicates > 0 {
		parts = append(parts, plural(res.Duplicates, "observation was", "observations were")+" already known")
	}
	if res.Insight > 0 {
		parts = append(parts, "stored insight "+strconv.FormatInt(res.Insight, 10))
	}
	if len(parts) == 0 {
		parts = append(parts, "nothing new")
	}
	return tool.Result{Output: "Remembered: " + strings.Join(parts, "; ") + "."}, nil
}

func (t *tools) recall(ctx context.Context, c *tool.Call) (tool.Result, error) {
	var a struct {
		Query string   `json:"query"`
		K     int      `json:"k"`
		Kinds []string `json:"kinds"`
		Since string   `json:"since"`
	}
	if err := decodeArgs(c.Args, &a); err != nil {
		return tool.Result{}, err
	}
	if c.Agent == "" {
		return tool.Result{}, fmt.Errorf("%w: the call has no agent", ErrBadArgs)
	}
	if strings.TrimSpace(a.Query) == "" {
		return tool.Result{}, fmt.Errorf("%w: query is empty", ErrBadArgs)
	}
	if a.K < 0 || a.K > MaxK {
		return tool.Result{}, fmt.Errorf("%w: k must be between 1 and %d", ErrBadArgs, MaxK)
	}
	q := Query{Scope: ownScope(c), Text: a.Query, K: a.K, Kinds: a.Kinds, Shared: t.mayShare(c.Agent)}
	if a.Since != "" {
		since, err := parseSince(a.Since)
		if err != nil {
			return tool.Result{}, err
		}
		q.Since = since
	}
	r, err := t.s.Recall(ctx, q)
	if err != nil {
		return tool.Result{}, err
	}
	return tool.Result{Output: FormatRecall(r)}, nil
}

func parseSince(s string) (time.Time, error) {
	if t, err := time.Parse(time.DateOnly, s); err == nil {
		return t, nil
	}
	if t, err := time.Parse(time.RFC3339, s); err == nil {
		return t, nil
	}
	return time.Time{}, fmt.Errorf("%w: since %q: want YYYY-MM-DD or an RFC 3339 time", ErrBadArgs, s)
}

// FormatRecall renders r as the compact text the recall tool returns: a
// header line, then one line per item with its kind and id (which forget
// takes), its text (matched words in «»), its date and where it came from.
func FormatRecall(r Recall) string {
	var b strings.Builder
	if len(r.Items) == 0 {
		b.WriteString("No memories found.")
	} else {
		b.WriteString("Found " + plural(len(r.Items), "memory", "memories") + ", best first.")
	}
	if r.Degraded {
		b.WriteString(" (Keyword search only: " + r.Reason + ".)")
	}
	for _, it := range r.Items {
		b.WriteString("\n[" + it.Kind + " " + strconv.FormatInt(it.ID, 10) + "] ")
		if it.Kind == KindObservation {
			b.WriteString(it.Entity + ": ")
		}
		b.WriteString(strings.Join(strings.Fields(it.Snippet), " "))
		if len(it.Tags) > 0 {
			b.WriteString(" #" + strings.Join(it.Tags, " #"))
		}
		b.WriteString(" — " + it.Created.Format(time.DateOnly))
		if it.Scope == Shared {
			b.WriteString(", shared")
		}
		if it.Provenance.Session != "" {
			b.WriteString(", session " + it.Provenance.Session)
			if it.Provenance.Turn > 0 {
				b.WriteString(" turn " + strconv.FormatInt(it.Provenance.Turn, 10))
			}
		}
	}
	return b.String()
}

func (t *tools) forget(ctx context.Context, c *tool.Call) (tool.Result, error) {
	var a struct {
		Entities     []string `json:"entities"`
		Observations []int64  `json:"observations"`
		Insights     []int64  `json:"insights"`
		Relations    []int64  `json:"relations"`
		Shared       bool     `json:"shared"`
	}
	if err := decodeArgs(c.Args, &a); err != nil {
		return tool.Result{}, err
	}
	scope, err := t.scope(c, a.Shared)
	if err != nil {
		return tool.Result{}, err
	}
	if len(a.Entities)+len(a.Observations)+len(a.Insights)+len(a.Relations) == 0 {
		return tool.Result{}, fmt.Errorf("%w: name entities or give ids of observations, insights or relations to forget", ErrBadArgs)
	}
	n, err := t.s.Forget(ctx, scope, Forget{Entities: a.Entities, Observations: a.Observations, Insights: a.Insights, Relations: a.Relations})
	if err != nil {
		return tool.Result{}, err
	}
	if n == 0 {
		return tool.Result{Output: "Nothing matched; no memories were deleted."}, nil
	}
	return tool.Result{Output: "Forgot " + plural(n, "memory", "memories") + "."}, nil
}

func (t *tools) relate(ctx context.Context, c *tool.Call) (tool.Result, error) {
	var a struct {
		Relations []struct {
			From string `json:"from"`
			Type string `json:"type"`
			To   string `json:"to"`
		} `json:"relations"`
		Shared bool `json:"shared"`
	}
	if err := decodeArgs(c.Args, &a); err != nil {
		return tool.Result{}, err
	}
	scope, err := t.scope(c, a.Shared)
	if err != nil {
		return tool.Result{}, err
	}
	if len(a.Relations) == 0 {
		return tool.Result{}, fmt.Errorf("%w: relations is empty", ErrBadArgs)
	}
	rels := make([]Relation, len(a.Relations))
	for i, r := range a.Relations {
		rels[i] = Relation{From: r.From, To: r.To, Type: r.Type}
	}
	n, err := t.s.Relate(ctx, scope, rels, provenance(c))
	if err != nil {
		return tool.Result{}, err
	}
	return tool.Result{Output: fmt.Sprintf("Related: %s new, %d already known.", plural(n, "relation", "relations"), len(rels)-n)}, nil
}

func plural(n int, one, many string) string {
	if n == 1 {
		return "1 " + one
	}
	return strconv.Itoa(n) + " " + many
}

func joinIDs(ids []int64) string {
	s := make([]string, len(ids))
	for i, id := range ids {
		s[i] = strconv.FormatInt(id, 10)
	}
	return strings.Join(s, ", ")
}
