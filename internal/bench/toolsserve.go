package bench

import (
	"context"
	"encoding/json"
	"fmt"
	"net"
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
	"agentd/internal/model/fakellm"
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
// agentd serve on a data directory under dir, in the sandbox the exec
// figures measured last (bwrap where it is installed).
func runToolsServe(ctx context.Context, dir string, c toolsConfig, res *ToolsResult) error {
	script, err := fakellm.ParseScript("bench", []byte(toolsScript))
	if err != nil {
		return err
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return err
	}
	fctx, stop := context.WithCancel(ctx)
	defer stop()
	go fakellm.New(script, nil).Serve(fctx, ln)

	data := filepath.Join(dir, "serve")
	execP50 := res.ExecNoneP50ms // the exec call in process, in the turns' mode
	res.TurnMode = agent.SandboxNone
	if res.Bwrap != "" {
		res.TurnMode, execP50 = agent.SandboxBwrap, res.ExecBwrapP50ms
	}
	if err := writeToolsData(data, "http://"+ln.Addr().String()+"/v1", res.TurnMode); err != nil {
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
	if err := checkExecRan(ctx, data, toolsAgent+"/t-0"); err != nil {
		return err
	}
	res.TurnExecP50ms, res.TurnExecP99ms = pct(withExec, 50), pct(withExec, 99)
	res.TurnPlainP50ms, res.TurnPlainP99ms = pct(plain, 50), pct(plain, 99)
	res.TurnAddedP50ms = res.TurnExecP50ms - res.TurnPlainP50ms
	res.TurnOverExecP50ms = res.TurnExecP50ms - execP50
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

// checkExecRan checks that the session at addr has exec results and that
// each says the command ran and exited 0: a turn whose call failed would
// be as done, and faster.
func checkExecRan(ctx context.Context, dir, addr string) error {
	page, err := gateway.NewUnixClient(filepath.Join(dir, app.SocketFile)).Events(ctx, addr, 0, 10000, 0)
	if err != nil {
		return err
	}
	n := 0
	for _, ev := range page.Events {
		if ev.Kind != event.ToolResult {
			continue
		}
		var d event.ToolResultData
		if err := json.Unmarshal(ev.Data, &d); err != nil {
			return err
		}
		if d.IsError || !strings.HasPrefix(d.Output, "exit 0 ") {
			return fmt.Errorf("bench: exec through agentd serve: %q", d.Output)
		}
		n++
	}
	if n == 0 {
		return fmt.Errorf("bench: no exec result in %s", addr)
	}
	return nil
}
