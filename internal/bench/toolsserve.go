package bench

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"agentd/internal/agent"
	"agentd/internal/app"
	"agentd/internal/event"
	"agentd/internal/gateway"
)

// A turn of agentd serve whose step calls exec, beside a one-step turn of
// the same agent: what running a command costs a turn, and what the turn
// costs on top of the command.

// toolsAgent is the agent of the serve figures: exec allowed without
// asking (an approval is a person's time, not agentd's), no recall.
const toolsAgent = "ex"

// toolsScript is the fake model's script: a message starting "run" has a
// step that calls exec of true, then a reply; any other a reply at once.
const toolsScript = "match ^run\ncall exec {\"argv\": [\"true\"]}\n---\nsay done\n\nmatch *\nsay ok\n"

// runToolsServe times c.turns exec turns and as many plain ones through
// agentd serve on a data directory under dir, in the sandbox c asks for
// (default: bwrap where it runs, else none).
func runToolsServe(ctx context.Context, dir string, c toolsConfig, res *ToolsResult) error {
	base, stop, err := startFake(ctx, "bench", toolsScript)
	if err != nil {
		return err
	}
	defer stop()

	data := filepath.Join(dir, "serve")
	res.TurnMode = c.serveMode
	if res.TurnMode == "" {
		res.TurnMode = agent.SandboxNone
		if res.Bwrap != "" {
			res.TurnMode = agent.SandboxBwrap
		}
	}
	if err := writeToolsData(data, base, res.TurnMode); err != nil {
		return err
	}
	srv, err := startServe(ctx, c.exe, data)
	if err != nil {
		return err
	}
	defer srv.stop()
	tok, err := gatewayToken(data)
	if err != nil {
		return err
	}
	tcp := &http.Client{Transport: &http.Transport{}}
	defer tcp.CloseIdleConnections()
	post := newPoster(srv.base(), http.Header{"Authorization": {"Bearer " + tok}}, tcp)
	var withExec, plain []time.Duration
	for i := range c.turns {
		addr := toolsAgent + "/t-" + strconv.Itoa(i/20) // a fresh session every 20 turns, as the other figures
		for _, tt := range []struct {
			text string
			took *[]time.Duration
		}{{"run " + strconv.Itoa(i), &withExec}, {"hello " + strconv.Itoa(i), &plain}} {
			t0 := time.Now()
			if err := post(ctx, addr, tt.text); err != nil {
				return fmt.Errorf("bench: a turn through agentd serve: %w", err)
			}
			*tt.took = append(*tt.took, time.Since(t0))
		}
	}
	calls, err := execCalls(ctx, data, c.turns)
	if err != nil {
		return err
	}
	over := make([]time.Duration, len(calls))
	for i := range calls {
		over[i] = withExec[i] - calls[i]
	}
	res.TurnExecP50ms, res.TurnExecP99ms = pct(withExec, 50), pct(withExec, 99)
	res.TurnPlainP50ms, res.TurnPlainP99ms = pct(plain, 50), pct(plain, 99)
	res.TurnAddedP50ms = res.TurnExecP50ms - res.TurnPlainP50ms
	res.TurnCallP50ms, res.TurnCallP99ms = pct(calls, 50), pct(calls, 99)
	res.TurnOverExecP50ms, res.TurnOverExecP99ms = pct(over, 50), pct(over, 99)
	return nil
}

// writeToolsData writes the serve figures' data directory: agentd init's,
// with the agent ex on the fake at base, in sandbox mode.
func writeToolsData(dir, base, mode string) error {
	if err := writeAPIData(dir, base, "full"); err != nil {
		return err
	}
	def := "name: Exec\nmodel:\n  provider: openai\n  name: fake\n  base_url: " + base + "\n" +
		"tools:\n  builtin: [exec]\n  allow: [exec]\nmemory:\n  recall: -1\nsandbox: " + mode + "\n"
	return os.WriteFile(filepath.Join(dir, agent.AgentsDir, toolsAgent+".yaml"), []byte(def), 0o600)
}

// execCalls reads the exec calls of the turns' sessions from their logs,
// in the order they ran, and checks each: the command ran and exited 0 (a
// turn whose call failed would be as done, and faster). A call's time is
// from its tool_call event to its tool_result event, as the daemon wrote
// them.
func execCalls(ctx context.Context, dir string, turns int) ([]time.Duration, error) {
	cl := gateway.NewUnixClient(filepath.Join(dir, app.SocketFile))
	var calls []time.Duration
	for s := 0; s*20 < turns; s++ {
		page, err := cl.Events(ctx, toolsAgent+"/t-"+strconv.Itoa(s), 0, 10000, 0)
		if err != nil {
			return nil, err
		}
		var at time.Time
		for _, ev := range page.Events {
			switch ev.Kind {
			case event.ToolCall:
				at = ev.Time
			case event.ToolResult:
				var d event.ToolResultData
				if err := json.Unmarshal(ev.Data, &d); err != nil {
					return nil, err
				}
				if d.IsError || !strings.HasPrefix(d.Output, "exit 0 ") {
					return nil, fmt.Errorf("bench: exec through agentd serve: %q", d.Output)
				}
				calls = append(calls, ev.Time.Sub(at))
			}
		}
	}
	if len(calls) != turns {
		return nil, fmt.Errorf("bench: %d exec results in the logs of %d turns", len(calls), turns)
	}
	return calls, nil
}
