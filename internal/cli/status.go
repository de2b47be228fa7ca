package cli

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"

	"agentd/internal/app"
	"agentd/internal/gateway"
	"agentd/internal/store"
)

// statusReport is what agentd status shows (and prints with --json).
type statusReport struct {
	Running bool   `json:"running"`
	Data    string `json:"data,omitempty"`   // the data directory looked at
	Socket  string `json:"socket,omitempty"` // the socket looked for
	Remote  string `json:"remote,omitempty"` // --remote
	Reason  string `json:"reason,omitempty"` // why agentd is not running
	*gateway.StatusResponse
	// Agents are the agents people use; SystemAgents those that serve
	// them, addressed by their tags (the memory keeper).
	Agents       []gateway.AgentInfo  `json:"agents,omitempty"`
	SystemAgents []gateway.AgentInfo  `json:"system_agents,omitempty"`
	MCPServers   []gateway.ServerInfo `json:"mcp_servers,omitempty"`
}

func (e *env) statusCmd() *cobra.Command {
	var asJSON bool
	cmd := &cobra.Command{
		Use:   "status",
		Short: "Show whether agentd runs, where, and what it serves",
		Long: "Ask the agentd serving the data directory (or --remote) what runs: its process, version and\n" +
			"uptime, the addresses it serves, its sessions by state, its agents and its MCP servers. When it\n" +
			"is not running, say so and what was looked at, and exit 5.",
		Example: "  agentd status\n" +
			"  agentd status --data /srv/agentd --json\n" +
			"  agentd status --remote https://agentd.example.com",
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			ctx := cmd.Context()
			rep, c, err := e.statusOf(ctx)
			if err != nil {
				return err
			}
			if c != nil {
				if err := rep.fill(ctx, c); err != nil {
					return err
				}
			}
			if asJSON {
				if err := e.printJSON(rep); err != nil {
					return err
				}
			} else {
				rep.print(e)
			}
			if !rep.Running {
				return withCode(ExitUnavailable, silent{errors.New("agentd is not running")})
			}
			return nil
		},
	}
	cmd.Flags().BoolVar(&asJSON, "json", false, "print JSON")
	return e.remoteFlags(cmd)
}

// silent is an error whose message has been said already: Main prints no
// line for it.
type silent struct{ error }

// statusOf finds the agentd to ask: --remote, or the one on the data
// directory's socket. Without one, the report says what was looked at.
func (e *env) statusOf(ctx context.Context) (*statusReport, *gateway.Client, error) {
	if e.remote != "" {
		b, err := e.remoteBackend()
		if err != nil {
			return nil, nil, err
		}
		return &statusReport{Running: true, Remote: e.remote}, b.Client, nil
	}
	dir := e.absDataDir()
	rep := &statusReport{Data: dir, Socket: filepath.Join(dir, app.SocketFile)}
	c, why := e.daemon(ctx)
	if c != nil {
		rep.Running = true
		return rep, c, nil
	}
	if !app.HasData(dir) {
		return nil, nil, e.noData()
	}
	rep.Reason = why
	return rep, nil, nil
}

// fill asks the running agentd.
func (r *statusReport) fill(ctx context.Context, c *gateway.Client) error {
	st, err := c.Status(ctx)
	if err != nil {
		return fmt.Errorf("agentd answers but not its status (an older agentd?): %w", err)
	}
	r.StatusResponse = &st
	agents, err := c.Agents(ctx)
	if err != nil {
		return err
	}
	r.Agents, r.SystemAgents = pickable(agents)
	r.MCPServers, err = c.MCPServers(ctx)
	return err
}

func (r *statusReport) print(e *env) {
	w := e.stdout
	if !r.Running {
		fmt.Fprintf(w, "agentd is not running on %s (%s: looked for %s)\n", r.Data, r.Reason, r.Socket)
		fmt.Fprintf(w, "start it with agentd serve --data %s, or run it as a service: agentd service install --data %s\n", r.Data, r.Data)
		return
	}
	where := r.Data
	if r.Remote != "" {
		where = r.Remote
	}
	st := r.StatusResponse
	fmt.Fprintf(w, "agentd %s is running on %s\n", st.Version, where)
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	row := func(k string, vs ...string) {
		if len(vs) == 0 {
			vs = []string{"none"}
		}
		for i, v := range vs {
			if i > 0 {
				k = ""
			}
			fmt.Fprintf(tw, "  %s\t%s\n", k, v)
		}
	}
	row("pid", fmt.Sprint(st.PID))
	row("up", fmt.Sprintf("%s (since %s)", (time.Duration(st.UptimeSeconds)*time.Second).String(), st.Started.Local().Format(time.DateTime)))
	row("listening", st.Listening...)
	row("sessions", sessionCounts(st.Sessions))
	row("agents", agentCells(r.Agents)...)
	if len(r.SystemAgents) > 0 {
		row("system agents", agentCells(r.SystemAgents)...)
	}
	var servers []string
	for _, s := range r.MCPServers {
		line := fmt.Sprintf("%s: %s, %d tools", s.Name, s.State, s.Tools)
		if s.LastError != "" {
			line += " (last error: " + cell(s.LastError, 80) + ")"
		}
		servers = append(servers, line)
	}
	row("mcp servers", servers...)
	tw.Flush()
}

// agentCells says each agent's id and model.
func agentCells(list []gateway.AgentInfo) []string {
	var out []string
	for _, a := range list {
		m := a.Provider
		if a.Model != a.Provider {
			m += " " + a.Model
		}
		out = append(out, fmt.Sprintf("%s (%s)", a.ID, strings.TrimSpace(m)))
	}
	return out
}

// sessionCounts says how many sessions are in each state, in the order
// sessions meet them.
func sessionCounts(m map[string]int64) string {
	var parts []string
	var total int64
	for _, s := range store.States() {
		if n := m[s]; n > 0 {
			parts = append(parts, fmt.Sprintf("%d %s", n, s))
			total += n
		}
	}
	if total == 0 {
		return "none"
	}
	return fmt.Sprintf("%s (%d in all)", strings.Join(parts, ", "), total)
}
