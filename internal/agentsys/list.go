package agentsys

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sort"

	"agentd/internal/agent"
	"agentd/internal/store"
)

// stateReady is the state the list gives an agent that is a definition.
const stateReady = "ready"

// Lister is the optional ability of Options.Agents to list the
// definitions (the registry's List), for the list's system agents.
type Lister interface {
	List() []*agent.Definition
}

// List lists the instances f selects, newest first, with their own costs
// and live children, and the next page's cursor. A filter of type cron or
// system lists the cron agents (one per job naming an agent, descriptor
// cron:<job>) or the system agents (one per tag, system:<tag>); a list
// with no filter (of the live instances or of all) ends with them.
func (s *System) List(ctx context.Context, f store.AgentFilter) ([]Info, string, error) {
	return s.list(ctx, f, nil)
}

// ListFor is List as the agent caller sees it (list_agents): only the
// agents it may reach (mayReach). A page may so hold fewer than the
// filter's limit; its cursor still leads to the next.
func (s *System) ListFor(ctx context.Context, caller string, f store.AgentFilter) ([]Info, string, error) {
	def, ok := s.definition(caller)
	if !ok {
		return nil, "", fmt.Errorf("agentsys: list: %w: %s (the caller)", ErrNotFound, caller)
	}
	return s.list(ctx, f, func(t target) bool { return s.mayReach(ctx, def, t) })
}

// list lists what f selects and keep keeps (nil: all).
func (s *System) list(ctx context.Context, f store.AgentFilter, keep func(target) bool) ([]Info, string, error) {
	if f.Type == agent.TypeCron || f.Type == agent.TypeSystem {
		return kept(s.computed(ctx, f.Type), keep), "", nil
	}
	rows, next, err := s.st.Instances(ctx, f)
	if err != nil {
		return nil, "", fmt.Errorf("agentsys: list: %w", err)
	}
	if keep != nil {
		rows = slices.DeleteFunc(rows, func(in store.Instance) bool { return !keep(target{agent: in.Agent, in: &in}) })
	}
	out, err := s.infos(ctx, rows)
	if err != nil {
		return nil, "", err
	}
	if f.Type == "" && f.Parent == "" && f.Root == "" && f.State == "" && f.Before == "" {
		out = append(out, kept(s.computed(ctx, agent.TypeCron), keep)...)
		out = append(out, kept(s.computed(ctx, agent.TypeSystem), keep)...)
	}
	return out, next, nil
}

// kept is the computed agents (definitions) of infos that keep keeps.
func kept(infos []Info, keep func(target) bool) []Info {
	if keep == nil {
		return infos
	}
	return slices.DeleteFunc(infos, func(i Info) bool { return !keep(target{agent: i.ID}) })
}

// infos describes rows, with their costs and live children.
func (s *System) infos(ctx context.Context, rows []store.Instance) ([]Info, error) {
	if len(rows) == 0 {
		return []Info{}, nil
	}
	ids := make([]string, len(rows))
	for i, r := range rows {
		ids[i] = r.Agent
	}
	costs, err := s.st.InstanceCosts(ctx, ids)
	if err != nil {
		return nil, fmt.Errorf("agentsys: list: %w", err)
	}
	live, err := s.liveChildren(ctx)
	if err != nil {
		return nil, err
	}
	out := make([]Info, len(rows))
	for i, r := range rows {
		out[i] = s.info(r)
		out[i].CostUSD = costs[r.Agent]
		out[i].LiveChildren = live[r.Agent]
	}
	return out, nil
}

// liveChildren counts the live instances of each parent.
func (s *System) liveChildren(ctx context.Context) (map[string]int, error) {
	n := map[string]int{}
	f := store.AgentFilter{Live: true, Limit: store.MaxInstanceLimit}
	for {
		rows, next, err := s.st.Instances(ctx, f)
		if err != nil {
			return nil, fmt.Errorf("agentsys: list: %w", err)
		}
		for _, r := range rows {
			if r.Parent != "" {
				n[r.Parent]++
			}
		}
		if next == "" {
			return n, nil
		}
		f.Before = next
	}
}

// info describes an instance.
func (s *System) info(in store.Instance) Info {
	i := Info{ID: in.ID, Name: in.Name, Type: in.Type, Descriptor: in.Descriptor, Template: in.Template, Parent: in.Parent,
		Root: in.Root, Depth: in.Depth, State: in.State, Session: mainSession(in.Agent), Dynamic: true,
		CreatedAt: in.CreatedAt, EndedAt: in.EndedAt}
	if in.Type == store.InstancePermanent && i.Name == "" {
		i.Name = in.Agent
	}
	if d, ok := s.definition(in.Agent); ok {
		i.Model = d.Model.Name
	}
	return i
}

// defInfo describes a definition.
func defInfo(d *agent.Definition) Info {
	return Info{ID: d.ID, Name: d.Name, Type: d.Type, State: stateReady, Session: mainSession(d.ID), Model: d.Model.Name}
}

// openRuns is the optional ability of the Store to read a job's open runs
// (store.JobRunStore).
type openRuns interface {
	OpenRuns(ctx context.Context, job string) ([]store.JobRun, error)
}

// computed lists the cron or system agents, whose descriptors are
// computed: a job's agent per job (running while a run of the job is
// open), a system agent per tag.
func (s *System) computed(ctx context.Context, typ string) []Info {
	out := []Info{}
	switch typ {
	case agent.TypeCron:
		if s.o.Jobs == nil {
			return out
		}
		jobs := s.o.Jobs.JobAgents()
		names := make([]string, 0, len(jobs))
		for name := range jobs {
			names = append(names, name)
		}
		sort.Strings(names)
		for _, name := range names {
			i := Info{ID: jobs[name], Type: agent.TypeCron, Descriptor: CronDescriptor(name).String(), State: stateReady}
			if d, ok := s.definition(jobs[name]); ok {
				i = defInfo(d)
				i.Type, i.Descriptor = agent.TypeCron, CronDescriptor(name).String()
			}
			if r, ok := s.st.(openRuns); ok {
				if runs, err := r.OpenRuns(ctx, name); err == nil && len(runs) > 0 {
					i.State = store.AgentRunning
				}
			}
			out = append(out, i)
		}
	case agent.TypeSystem:
		l, ok := s.o.Agents.(Lister)
		if !ok {
			return out
		}
		for _, d := range l.List() {
			if d.Type != agent.TypeSystem {
				continue
			}
			for _, tag := range d.Tags {
				i := defInfo(d)
				i.Descriptor = SystemDescriptor(tag).String()
				out = append(out, i)
			}
		}
	}
	return out
}

// Tree returns the tree of root (an instance, or a definition whose
// sub-agents it holds), or with root "" every tree that has a live
// member (all: any member, of the newest store.MaxInstanceLimit
// instances), each node with its children and the cost of its subtree.
func (s *System) Tree(ctx context.Context, root string, all bool) ([]Node, error) {
	var roots []string
	if root != "" {
		roots = []string{root}
	} else {
		live, _, err := s.st.Instances(ctx, store.AgentFilter{Live: !all, Limit: store.MaxInstanceLimit})
		if err != nil {
			return nil, fmt.Errorf("agentsys: tree: %w", err)
		}
		for _, in := range live {
			if !slices.Contains(roots, in.Root) {
				roots = append(roots, in.Root)
			}
		}
	}
	out := []Node{}
	for _, r := range roots {
		n, err := s.tree(ctx, r)
		if err != nil {
			return nil, err
		}
		out = append(out, n)
	}
	return out, nil
}

// tree builds the tree below id.
func (s *System) tree(ctx context.Context, id string) (Node, error) {
	var top Node
	in, err := s.instance(ctx, id)
	switch {
	case err == nil:
		top.Info = s.info(in)
		id = in.Agent
	case errors.Is(err, ErrNotFound):
		d, ok := s.definition(id)
		if !ok {
			return top, fmt.Errorf("agentsys: tree: %w", err)
		}
		top.Info = defInfo(d)
	default:
		return top, fmt.Errorf("agentsys: tree: %w", err)
	}
	below, err := s.descendants(ctx, id, false)
	if err != nil {
		return top, fmt.Errorf("agentsys: tree: %w", err)
	}
	infos, err := s.infos(ctx, below)
	if err != nil {
		return top, err
	}
	if top.Dynamic {
		costs, err := s.st.InstanceCosts(ctx, []string{id})
		if err != nil {
			return top, fmt.Errorf("agentsys: tree: %w", err)
		}
		top.CostUSD = costs[id]
	}
	kids := map[string][]int{} // parent agent → indexes into below
	for i, b := range below {
		kids[b.Parent] = append(kids[b.Parent], i)
	}
	var build func(agentID string, info Info) Node
	build = func(agentID string, info Info) Node {
		n := Node{Info: info, CostTreeUSD: info.CostUSD}
		for _, i := range kids[agentID] {
			c := build(below[i].Agent, infos[i])
			n.CostTreeUSD += c.CostTreeUSD
			n.Children = append(n.Children, c)
		}
		return n
	}
	return build(id, top.Info), nil
}

// StatusFor is Status as the agent caller sees it (agent_status): the
// state of an agent it may reach (mayReach), named as send_agent_message
// names one (an id, a name or #tag); any other is refused as ErrReach.
func (s *System) StatusFor(ctx context.Context, caller, id string) (Status, error) {
	def, ok := s.definition(caller)
	if !ok {
		return Status{}, fmt.Errorf("agentsys: status: %w: %s (the caller)", ErrNotFound, caller)
	}
	t, err := s.resolve(ctx, id)
	if err != nil {
		return Status{}, fmt.Errorf("agentsys: status: %w", err)
	}
	if !s.mayReach(ctx, def, t) {
		return Status{}, fmt.Errorf("agentsys: status: %w: %s may not reach %s (not its parent or child; agents.targets)", ErrReach, caller, id)
	}
	return s.Status(ctx, t.agent)
}

// Status returns the state of the agent id (an instance id, a permanent
// agent's name, or a definition's id): its instance, its main session's
// state and last turn's end, its live children, and its costs.
func (s *System) Status(ctx context.Context, id string) (Status, error) {
	var st Status
	in, err := s.instance(ctx, id)
	agentID := id
	switch {
	case err == nil:
		st.Info, st.Instance, agentID = s.info(in), in, in.Agent
		st.Result, st.ReportedAt, st.ReportError = in.Result, in.ReportedAt, in.ReportError
		c, err := s.cost(ctx, in)
		if err != nil {
			return st, fmt.Errorf("agentsys: status: %w", err)
		}
		st.CostTreeUSD = c.USD
		if costs, err := s.st.InstanceCosts(ctx, []string{in.Agent}); err == nil {
			st.CostUSD = costs[in.Agent]
		}
	case errors.Is(err, ErrNotFound):
		d, ok := s.definition(id)
		if !ok || d.Template != "" {
			return st, fmt.Errorf("agentsys: status: %w", err)
		}
		st.Info = defInfo(d)
	default:
		return st, fmt.Errorf("agentsys: status: %w", err)
	}
	if sess, err := s.st.SessionByAddress(ctx, agentID, "main"); err == nil {
		st.SessionState = sess.State
		if end, ok, err := s.lastEnd(ctx, sess); err == nil && ok {
			st.LastEnd = &end
		}
	}
	rows, _, err := s.st.Instances(ctx, store.AgentFilter{Parent: agentID, Live: true, Limit: store.MaxInstanceLimit})
	if err != nil {
		return st, fmt.Errorf("agentsys: status: %w", err)
	}
	if st.Children, err = s.infos(ctx, rows); err != nil {
		return st, err
	}
	st.LiveChildren = len(rows)
	return st, nil
}
