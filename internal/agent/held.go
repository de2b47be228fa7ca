package agent

import (
	"context"
	"fmt"
	"path"
	"slices"
	"strings"

	"agentd/internal/extension"
	"agentd/internal/tool"
)

// An agent that writes an agent row (through the extensions tool) gives
// the agent no more than it has itself, as create_permanent_agent does:
// each tool the row's agent would be offered and allowed, its writer must
// be offered and allowed as freely (allow over ask over deny); the row
// includes only capabilities and skills its writer has. Type system and
// tags are machine-level (agentMachine); a name a dynamic agent has or had
// is not taken.

// hooks are what the Registry asks when an agent writes an agent row.
type hooks struct {
	tools func() []tool.Spec
	taken func(ctx context.Context, name string) (bool, error)
}

// SetTools installs f, which lists the tools registered on this node: an
// agent row an agent writes is held to its writer on each of them. Until
// it is set (and for tools registered later) the row is held on the tool
// names and globs the two definitions write.
func (r *Registry) SetTools(f func() []tool.Spec) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.hooks.tools = f
}

// SetTaken installs f, which says whether an instance row (a dynamic
// agent's, a permanent agent's, a deleted one's) has name as its agent:
// an agent does not write a new agent row of that name, which would get
// that agent's sessions, memory and key.
func (r *Registry) SetTaken(f func(ctx context.Context, name string) (bool, error)) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.hooks.taken = f
}

// CheckWriter holds an agent row agent writer writes to what writer has.
func (h agentRows) CheckWriter(ctx context.Context, d *extension.Doc, writer string, created bool) error {
	w, ok := h.r.Get(writer)
	if !ok {
		return fmt.Errorf("the writing agent %q is not defined", writer)
	}
	def, err := h.r.ParseRow(d.Name, d.Spec)
	if err != nil {
		return err
	}
	h.r.mu.Lock()
	hk := h.r.hooks
	def, _ = withCapabilities(def, h.r.caps)
	h.r.mu.Unlock()
	if created && hk.taken != nil {
		taken, err := hk.taken(ctx, d.Name)
		if err != nil {
			return err
		}
		if taken {
			return fmt.Errorf("agent %q existed before and keeps its history; choose another name", d.Name)
		}
	}
	var specs []tool.Spec
	if hk.tools != nil {
		specs = hk.tools()
	}
	return Holds(w, def, specs)
}

// Holds reports, as an error naming the first, what def would have that
// writer has not: a looser budget, a capability or skill, or a tool of
// specs (or one the two policies name) def is offered and allowed more
// freely.
func Holds(writer, def *Definition, specs []tool.Spec) error {
	if err := holdsBudgets(writer.Budgets, def.Budgets); err != nil {
		return err
	}
	if err := holdsExec(writer, def); err != nil {
		return err
	}
	for _, c := range def.Capabilities {
		if !slices.Contains(writer.Capabilities, c) {
			return fmt.Errorf("capability %q: the writing agent does not include it", c)
		}
	}
	if writer.Skills != nil {
		if def.Skills == nil {
			return fmt.Errorf("skills: left out, every skill; the writing agent may load only %v", writer.Skills)
		}
		for _, s := range def.Skills {
			if !slices.Contains(writer.Skills, s) && !slices.Contains(writer.Skills, "*") {
				return fmt.Errorf("skill %q: the writing agent may not load it", s)
			}
		}
	}
	for _, s := range append(specs, witnesses(writer, def)...) {
		if got, has := def.Verdict(&s), writer.Verdict(&s); freer(got, has) {
			return fmt.Errorf("tool %s: the writing agent's policy says %s, the row's %s; an agent gives no tool it may not use itself", s.Name, has, got)
		}
	}
	return nil
}

// holdsBudgets reports a budget of def's looser than writer's: left out
// (no limit) or higher where the writer has one.
func holdsBudgets(writer, def Budgets) error {
	for _, b := range []struct {
		name      string
		has, gets float64
	}{
		{"max_steps", float64(writer.MaxSteps), float64(def.MaxSteps)},
		{"max_output_tokens", float64(writer.MaxOutputTokens), float64(def.MaxOutputTokens)},
		{"max_usd_per_turn", writer.MaxUSDPerTurn, def.MaxUSDPerTurn},
		{"max_usd_per_day", writer.MaxUSDPerDay, def.MaxUSDPerDay},
		{"max_wall_time", float64(writer.MaxWallTime), float64(def.MaxWallTime)},
	} {
		if b.has > 0 && (b.gets <= 0 || b.gets > b.has) {
			return fmt.Errorf("budgets.%s: the writing agent's is %v; an agent gives no looser budget than its own", b.name, b.has)
		}
	}
	return nil
}

// CommandTools are the built-in tools that run commands, in the sandbox
// and with the limits of the agent's sandbox and exec settings.
var CommandTools = []string{"exec", "process"}

// runsCommands reports whether d is offered a tool of CommandTools (they
// are opt-in: offered only when tools.builtin names them).
func (d *Definition) runsCommands() bool {
	return d.Tools.Builtin != nil && slices.ContainsFunc(CommandTools, d.OffersBuiltin)
}

// sandboxRank orders the sandbox modes from the weakest: none, auto
// (bubblewrap where it runs), bwrap.
var sandboxRank = map[string]int{SandboxNone: 0, SandboxAuto: 1, SandboxBwrap: 2}

// holdsExec reports, for a def offered a tool that runs commands, a
// sandbox or exec setting of def's (with the defaults) looser than
// writer's: a weaker sandbox mode, the network or a shell its writer has
// not, an environment variable its writer does not pass, or a larger
// timeout, output, number of processes or limit.
func holdsExec(writer, def *Definition) error {
	if !def.runsCommands() {
		return nil
	}
	const why = "; an agent gives no looser sandbox or exec settings than its own"
	if has, gets := writer.SandboxMode(), def.SandboxMode(); sandboxRank[gets] < sandboxRank[has] {
		return fmt.Errorf("sandbox: the row's is %s, the writing agent's %s%s", gets, has, why)
	}
	w, d := writer.Exec.WithDefaults(), def.Exec.WithDefaults()
	for _, f := range []struct {
		name      string
		has, gets bool
	}{{"exec.network", w.Network, d.Network}, {"exec.shell", w.Shell, d.Shell}} {
		if f.gets && !f.has {
			return fmt.Errorf("%s: the row's is on, the writing agent's off%s", f.name, why)
		}
	}
	for _, e := range d.Env {
		if !slices.Contains(w.Env, e) {
			return fmt.Errorf("exec.env: the row passes %s, the writing agent does not%s", e, why)
		}
	}
	for _, f := range []struct {
		name      string
		has, gets any
		looser    bool
	}{
		{"exec.timeout", w.Timeout.D(), d.Timeout.D(), d.Timeout > w.Timeout},
		{"exec.max_output_bytes", w.MaxOutputBytes, d.MaxOutputBytes, d.MaxOutputBytes > w.MaxOutputBytes},
		{"exec.max_processes", w.MaxProcesses, d.MaxProcesses, d.MaxProcesses > w.MaxProcesses},
		{"exec.limits.cpu", w.Limits.CPU.D(), d.Limits.CPU.D(), d.Limits.CPU > w.Limits.CPU},
		{"exec.limits.memory", sizeText(w.Limits.Memory), sizeText(d.Limits.Memory), d.Limits.Memory > w.Limits.Memory},
		{"exec.limits.processes", w.Limits.Processes, d.Limits.Processes, d.Limits.Processes > w.Limits.Processes},
		{"exec.limits.file_size", sizeText(w.Limits.FileSize), sizeText(d.Limits.FileSize), d.Limits.FileSize > w.Limits.FileSize},
		{"exec.limits.disk", sizeText(w.Limits.Disk), sizeText(d.Limits.Disk), d.Limits.Disk > w.Limits.Disk},
		{"exec.limits.tmp", sizeText(w.Limits.Tmp), sizeText(d.Limits.Tmp), d.Limits.Tmp > w.Limits.Tmp},
	} {
		if f.looser {
			return fmt.Errorf("%s: the row's is %v, the writing agent's %v%s", f.name, f.gets, f.has, why)
		}
	}
	return nil
}

// sizeText is s as a setting writes it: 64MiB.
func sizeText(s Size) string {
	b, _ := s.MarshalText()
	return string(b)
}

// freer reports whether a lets a tool run more freely than b: allow over
// ask over deny.
func freer(a, b tool.Verdict) bool {
	rank := map[tool.Verdict]int{tool.Deny: 0, tool.Ask: 1, tool.Allow: 2}
	return rank[a] > rank[b]
}

// Verdict is what d's tool policy says of s, and Deny for a tool d is not
// offered at all: a built-in tool its tools.builtin leaves out, a server
// it does not use, a tool of an agent's own servers, a skill's, or one
// that serves only some agents (which are not held here).
func (d *Definition) Verdict(s *tool.Spec) tool.Verdict {
	switch {
	case s.Serves != nil && !s.Serves(d.ID), s.Skills != nil, s.Scope != nil,
		s.Server == "" && !d.OffersSpec(s), s.Server != "" && !d.UsesServer(s.Server):
		return tool.Deny
	}
	p := tool.Policy{Allow: d.Tools.Allow, Deny: d.Tools.Deny, Ask: d.Tools.Ask, Grant: d.Tools.Grant}
	return p.Decide(*s).Verdict
}

// unlisted is a tool name no policy names: what an empty allow list (every
// tool that is not risky) or a bare "*" gives.
const unlisted = "unlisted-tool"

// witnesses are tools the policies of writer and def name (a name each
// pattern matches), and one they do not, each as a built-in and a
// server's tool, risky and not: a row is held on them when a tool they
// stand for is not registered yet.
func witnesses(writer, def *Definition) []tool.Spec {
	names := []string{unlisted, "unlisted__tool"}
	for _, d := range []*Definition{writer, def} {
		for _, list := range [][]string{d.Tools.Allow, d.Tools.Ask, d.Tools.Deny, d.Tools.Grant, d.Tools.Builtin} {
			for _, p := range list {
				if n, ok := witness(p); ok && !slices.Contains(names, n) {
					names = append(names, n)
				}
			}
		}
	}
	var out []tool.Spec
	for _, n := range names {
		out = append(out, tool.Spec{Name: n}, tool.Spec{Name: n, Risky: true})
		if server, _, ok := strings.Cut(n, "__"); ok && server != "" {
			out = append(out, tool.Spec{Name: n, Server: server}, tool.Spec{Name: n, Server: server, Risky: true})
		}
	}
	return out
}

// witness is a name glob p matches ("*" matches "x"), false for a class.
func witness(p string) (string, bool) {
	if strings.Contains(p, "[") {
		return "", false
	}
	n := strings.NewReplacer(`\`, "", "*", "x", "?", "x").Replace(p)
	if ok, err := path.Match(p, n); !ok || err != nil {
		return "", false
	}
	return n, true
}

// OffersSpec reports whether the agent is offered the built-in tool s:
// as OffersBuiltin says, except that a tool marked OptIn is offered only
// when tools.builtin is written and names it.
func (d *Definition) OffersSpec(s *tool.Spec) bool {
	if s.OptIn && d.Tools.Builtin == nil {
		return false
	}
	return d.OffersBuiltin(s.Name)
}
