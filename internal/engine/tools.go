package engine

import (
	"sync"

	"agentd/internal/model"
	"agentd/internal/tokens"
	"agentd/internal/tool"
)

// maxOffered bounds the tools an offerCache keeps; past it, it starts
// afresh.
const maxOffered = 4096

// offerCache keeps, by name, what the engine derives from a tool it offers
// a model: the wire encodings the model clients keep (model.Encoded) and
// the token estimate. A turn's every model call offers the agent's tools
// again; each is now encoded and sized once, and again only when the tool
// registered under its name changes. Its lock is a leaf.
type offerCache struct {
	mu sync.RWMutex
	m  map[string]*offered
}

// offered is one tool as last offered.
type offered struct {
	desc, schema string
	wire         *model.Encoded
	tokens       int
}

// spec returns the model's spec of s, with the Encoded of s as last
// offered.
func (c *offerCache) spec(s *tool.Spec) model.ToolSpec {
	ms := model.ToolSpec{Name: s.Name, Description: s.Description, Parameters: s.InputSchema}
	c.mu.RLock()
	o := c.m[s.Name]
	c.mu.RUnlock()
	if o == nil || o.desc != s.Description || o.schema != string(s.InputSchema) {
		o = &offered{desc: s.Description, schema: string(s.InputSchema), wire: new(model.Encoded)}
		o.tokens = tokens.Tool(&ms, tokens.Text)
		c.mu.Lock()
		if c.m == nil || len(c.m) >= maxOffered {
			c.m = make(map[string]*offered)
		}
		c.m[s.Name] = o
		c.mu.Unlock()
	}
	ms.Wire = o.wire
	return ms
}

// tokens returns the token estimate of t.
func (c *offerCache) tokens(t *model.ToolSpec) int {
	c.mu.RLock()
	o := c.m[t.Name]
	c.mu.RUnlock()
	if o != nil && t.Wire != nil && o.wire == t.Wire {
		return o.tokens
	}
	return tokens.Tool(t, tokens.Text)
}

// versioned is a tool registry that tells when its contents change
// (tool.Registry does).
type versioned interface{ Version() uint64 }

// offerMemo is what offer last found, with what it depends on.
type offerMemo struct {
	mu      sync.Mutex // a leaf; taken by parallel tool calls too (unknownTool)
	ok      bool
	version uint64
	skills  int // len(run.skills.names): a turn's skills only grow
	specs   []tool.Spec
}

// offer returns the tools the agent sees and its policy allows, of every
// kind, sorted by name; the caller must not change the slice. A turn asks
// for them several times (the lifecycle's phases, every model step), and
// they are found once while the registry and the skills the session loaded
// stay the same. (A tool's Serves is asked again only then.)
func (r *run) offer() []tool.Spec {
	v, canKeep := r.e.o.Tools.(versioned)
	m := &r.offered
	m.mu.Lock()
	defer m.mu.Unlock()
	var version uint64
	if canKeep {
		version = v.Version()
		if m.ok && m.version == version && m.skills == len(r.skills.names) {
			return m.specs
		}
	}
	vis := r.e.o.Tools.Visible(r.policy)
	specs := vis[:0]
	for i := range vis {
		if r.sees(&vis[i]) {
			specs = append(specs, vis[i]) // Visible left out the denied ones
		}
	}
	m.ok, m.version, m.skills, m.specs = canKeep, version, len(r.skills.names), specs
	return specs
}
