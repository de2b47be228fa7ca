package cli

// How agentd agents prints agents: the definitions' table as it always
// was, the dynamic agents' table, their forest, and one agent's state.
// Names, results and reasons come from models and people: they go
// through termSafe wherever they are printed.

import (
	"fmt"
	"io"
	"strings"
	"text/tabwriter"
	"time"

	"agentd/internal/agentsys"
	"agentd/internal/gateway"
)

// writeAgents prints the definitions of list (ID NAME TYPE MODEL STATE,
// then their files' problems) and, after them, its dynamic agents (ID NAME
// TYPE PARENT STATE COST MODEL).
func writeAgents(w io.Writer, list []gateway.AgentInfo) error {
	var defs, dyn []gateway.AgentInfo
	for _, a := range list {
		if a.Dynamic {
			dyn = append(dyn, a)
		} else {
			defs = append(defs, a)
		}
	}
	if len(defs) > 0 || len(dyn) == 0 {
		if err := writeDefinitions(w, defs); err != nil {
			return err
		}
	}
	if len(dyn) == 0 {
		return nil
	}
	if len(defs) > 0 {
		fmt.Fprintln(w)
	}
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "ID\tNAME\tTYPE\tPARENT\tSTATE\tCOST\tMODEL")
	for _, a := range dyn {
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\t%s\n", termSafe(a.ID), dash(oneLine(termSafe(a.Name), 40)), a.Type,
			dash(termSafe(a.Parent)), a.State, usd(a.CostUSD), dash(termSafe(a.Model)))
	}
	return tw.Flush()
}

// writeDefinitions prints agent definitions as agentd agents always has.
func writeDefinitions(w io.Writer, list []gateway.AgentInfo) error {
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "ID\tNAME\tTYPE\tMODEL\tSTATE")
	for _, a := range list {
		m := a.Provider + " " + a.Model
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\n", a.ID, a.Name, a.Type, strings.TrimSpace(m), a.State)
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	for _, a := range list {
		if len(a.Problems) == 0 {
			continue
		}
		if a.State == gateway.AgentInvalid {
			fmt.Fprintf(w, "\n%s: invalid, not loaded:\n", a.ID)
		} else {
			fmt.Fprintf(w, "\n%s: its file does not load; the last good definition stays in use:\n", a.ID)
		}
		for _, p := range a.Problems {
			fmt.Fprintf(w, "  %s\n", problemText(p))
		}
	}
	return nil
}

// writeAgentTree prints a forest of agents, one line each under its
// parent (├─ and └─): id, name, type, state and the cost of its subtree
// (its own too when it has children).
func writeAgentTree(w io.Writer, nodes []gateway.AgentNode) error {
	if len(nodes) == 0 {
		_, err := fmt.Fprintln(w, "no dynamic agents")
		return err
	}
	var b strings.Builder
	var walk func(ns []gateway.AgentNode, indent string, top bool)
	walk = func(ns []gateway.AgentNode, indent string, top bool) {
		for i, n := range ns {
			branch, next := "", ""
			if !top {
				branch, next = "├─ ", "│  "
				if i == len(ns)-1 {
					branch, next = "└─ ", "   "
				}
			}
			b.WriteString(indent + branch + nodeLine(n) + "\n")
			walk(n.Children, indent+next, false)
		}
	}
	walk(nodes, "", true)
	_, err := io.WriteString(w, b.String())
	return err
}

// nodeLine is an agent of the tree in one line.
func nodeLine(n gateway.AgentNode) string {
	parts := []string{termSafe(n.ID)}
	if n.Name != "" {
		parts = append(parts, oneLine(termSafe(n.Name), 40))
	}
	parts = append(parts, n.Type, n.State, usd(n.CostTreeUSD))
	if len(n.Children) > 0 {
		parts[len(parts)-1] += " (own " + usd(n.CostUSD) + ")"
	}
	return strings.Join(parts, "  ")
}

// writeAgentStatus prints a dynamic agent's state: what it is, where it
// stands, its live children and its last result.
func writeAgentStatus(w io.Writer, st agentsys.Status) error {
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	row := func(k, v string) {
		if v != "" {
			fmt.Fprintf(tw, "%s\t%s\n", k, v)
		}
	}
	row("id", termSafe(st.ID))
	row("name", oneLine(termSafe(st.Name), 80))
	row("type", st.Type)
	row("template", termSafe(st.Template))
	row("parent", termSafe(st.Parent))
	if st.Root != st.ID {
		row("root", termSafe(st.Root))
	}
	state := st.State
	if st.SessionState != "" {
		state += " (session " + st.SessionState + ")"
	}
	row("state", state)
	row("session", termSafe(st.Session))
	row("model", termSafe(st.Model))
	row("cost", usd(st.CostUSD))
	if st.CostTreeUSD != st.CostUSD {
		row("cost with children", usd(st.CostTreeUSD))
	}
	row("started", stamp(st.CreatedAt))
	row("ended", stamp(st.EndedAt))
	if st.LastEnd != nil {
		row("last turn", strings.TrimSpace(st.LastEnd.Status+" "+oneLine(termSafe(st.LastEnd.Reason), 80)))
	}
	row("report", reportState(st))
	if err := tw.Flush(); err != nil {
		return err
	}
	if len(st.Children) > 0 {
		fmt.Fprintf(w, "\nlive children:\n")
		cw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
		for _, c := range st.Children {
			fmt.Fprintf(cw, "  %s\t%s\t%s\t%s\t%s\n", termSafe(c.ID), dash(oneLine(termSafe(c.Name), 40)), c.Type, c.State, usd(c.CostUSD))
		}
		if err := cw.Flush(); err != nil {
			return err
		}
	}
	if st.Result != "" {
		fmt.Fprintf(w, "\nresult:\n%s\n", indentText(termSafe(st.Result)))
	}
	return nil
}

// reportState says where an ended agent's report to its parent stands.
func reportState(st agentsys.Status) string {
	switch {
	case st.ReportError != "":
		return "given up: " + oneLine(termSafe(st.ReportError), 80)
	case !st.ReportedAt.IsZero():
		return "delivered " + stamp(st.ReportedAt)
	}
	return ""
}

// usd is a cost as the tables print it.
func usd(v float64) string { return fmt.Sprintf("$%.4f", v) }

// dash is s, or "-" for nothing.
func dash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}

// indentText indents each line of s by two spaces.
func indentText(s string) string {
	return "  " + strings.ReplaceAll(strings.TrimRight(s, "\n"), "\n", "\n  ")
}

// stamp is a time in UTC, "" for none.
func stamp(t time.Time) string {
	if t.IsZero() {
		return ""
	}
	return t.UTC().Format("2006-01-02 15:04:05 UTC")
}
