package doctor

import (
	"cmp"
	"fmt"
	"maps"
	"slices"
	"strings"

	"agentd/internal/agent"
	"agentd/internal/sandbox"
)

// SandboxProber tells how commands would run here (sandbox.Sandbox.Probe).
type SandboxProber interface {
	Probe() sandbox.Report
}

// execTools are the tools that run commands.
var execTools = []string{"exec", "process"}

// sandbox checks, for each agent offered a tool that runs commands, that
// its sandbox can run here, and says how the limits hold.
func (d *doctor) sandbox(defs []*agent.Definition) {
	const area = "sandbox"
	if d.o.Sandbox == nil {
		return
	}
	var users []*agent.Definition
	for _, def := range defs {
		if def.Tools.Builtin != nil && (def.OffersBuiltin(execTools[0]) || def.OffersBuiltin(execTools[1])) {
			users = append(users, def)
		}
	}
	if len(users) == 0 {
		d.r.add(area, "bubblewrap", Skip, "no agent is offered exec or process", "")
		return
	}
	rep := d.o.Sandbox.Probe()
	install := "install bubblewrap (Debian/Ubuntu: apt install bubblewrap; Fedora: dnf install bubblewrap; Arch: pacman -S bubblewrap; Alpine: apk add bubblewrap)"
	for _, def := range users {
		name := "agent " + def.ID
		switch mode := def.SandboxMode(); {
		case mode == agent.SandboxNone:
			fix := "set sandbox: bwrap in " + relTo(d.dir, def.File) + " (bubblewrap runs here)"
			if !rep.Runs {
				fix = install + ", then set sandbox: bwrap in " + relTo(d.dir, def.File)
			}
			d.r.add(area, name, Warn, "sandbox none: commands run as agentd's user, bounded by the limits alone", fix)
		case rep.Runs:
			d.r.add(area, name, OK, mode+": "+summary(rep), "")
		case mode == agent.SandboxBwrap:
			d.r.add(area, name, Fail, "sandbox bwrap, and bubblewrap cannot run here: "+problem(rep),
				install+", or set sandbox: auto or none in "+relTo(d.dir, def.File))
		default:
			d.r.add(area, name, Warn, "sandbox auto runs commands without bubblewrap here: "+problem(rep), install)
		}
	}
}

// summary is a Report on one line: "bubblewrap 0.8.0 runs; cgroup v1;
// limits: cpu rlimit, memory cgroup, …".
func summary(r sandbox.Report) string {
	var limits []string
	for _, k := range slices.Sorted(maps.Keys(r.Limits)) {
		limits = append(limits, k+" "+r.Limits[k])
	}
	return fmt.Sprintf("%s runs; cgroup %s; limits: %s", cmp.Or(r.Version, r.Bwrap), r.Cgroup, strings.Join(limits, ", "))
}

func problem(r sandbox.Report) string {
	if r.Problem != "" {
		return r.Problem
	}
	if r.Bwrap == "" {
		return "bwrap is not installed"
	}
	return strings.TrimSpace(r.String())
}
