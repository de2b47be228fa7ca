package bench

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"agentd/internal/agent"
	"agentd/internal/app"
)

// What a client sees: agentd serve in a process of its own, with the agent
// agentd init writes (its model pointed at the fake) and a minimal one,
// measured through the HTTP API over TCP with the token and over the local
// socket; turns a second at 1, 16 and 100 sessions, the daemon's CPU per
// turn, its memory after them, the fan-out, and a one-shot `agentd send`
// without a daemon.

// writeAPIData writes the data directory of the API figures: agentd init's
// configuration and agent (assistant) with the store's synchronous mode
// sync and the agent's model the fake at base; a minimal agent (no tools,
// no recall); the fan agent, whose replies stream in pieces.
func writeAPIData(dir, base, sync string) error {
	if _, err := agent.Init(dir); err != nil {
		return err
	}
	edit := func(rel string, from, to string) error {
		name := filepath.Join(dir, rel)
		b, err := os.ReadFile(name)
		if err != nil {
			return err
		}
		if !strings.Contains(string(b), from) {
			return fmt.Errorf("bench: %s written by agentd init has no %q to change", rel, from)
		}
		return os.WriteFile(name, []byte(strings.Replace(string(b), from, to, 1)), 0o600)
	}
	assistant := filepath.Join(agent.AgentsDir, agent.BuiltinAgentID+".yaml")
	for _, e := range [][3]string{
		{agent.ConfigFile, "synchronous: full", "synchronous: " + sync},
		{assistant, "provider: echo", "provider: openai"},
		{assistant, "name: echo", "name: fake"},
		{assistant, `base_url: ""`, "base_url: " + base},
	} {
		if err := edit(e[0], e[1], e[2]); err != nil {
			return err
		}
	}
	model := "model:\n  provider: openai\n  name: fake\n  base_url: " + base + "\n"
	for name, def := range map[string]string{
		"minimal": "name: Minimal\n" + model + "tools:\n  builtin: []\nmemory:\n  recall: -1\n",
		"fan":     "name: Fan\n" + model,
	} {
		if err := os.WriteFile(filepath.Join(dir, agent.AgentsDir, name+".yaml"), []byte(def), 0o600); err != nil {
			return err
		}
	}
	return nil
}

// serveChild is agentd serve started by the bench.
type serveChild struct {
	cmd    *exec.Cmd
	listen string // host:port of its API on TCP
}

func (s *serveChild) pid() int     { return s.cmd.Process.Pid }
func (s *serveChild) base() string { return "http://" + s.listen }
func (s *serveChild) stop()        { stopChild(s.cmd) }

// startServe starts agentd serve on dir, with its API on a free loopback
// port, and returns once that port accepts connections.
func startServe(ctx context.Context, exe, dir string, args ...string) (*serveChild, error) {
	port, err := freeTCPPort()
	if err != nil {
		return nil, err
	}
	listen := "127.0.0.1:" + strconv.Itoa(port)
	cmd := exec.CommandContext(ctx, exe, append([]string{"serve", "--data", dir, "--log-level", "error", "--listen", listen}, args...)...)
	cmd.Stderr = os.Stderr
	if err := cmd.Start(); err != nil {
		return nil, err
	}
	// Both listeners: the TCP one may be up before the unix socket is.
	for t0, sock := time.Now(), filepath.Join(dir, app.SocketFile); ; time.Sleep(time.Millisecond) {
		if dialed("tcp", listen) && dialed("unix", sock) {
			break
		}
		if time.Since(t0) > 10*time.Second {
			stopChild(cmd)
			return nil, errors.New("bench: agentd serve did not listen on TCP and its socket within 10s")
		}
	}
	return &serveChild{cmd: cmd, listen: listen}, nil
}

// dialed reports whether addr accepts a connection.
func dialed(network, addr string) bool {
	conn, err := net.Dial(network, addr)
	if err == nil {
		conn.Close()
	}
	return err == nil
}

// unixHTTP is an HTTP client of the API on the unix socket in dir.
func unixHTTP(dir string) *http.Client {
	sock := filepath.Join(dir, app.SocketFile)
	return &http.Client{Transport: &http.Transport{
		DialContext: func(ctx context.Context, _, _ string) (net.Conn, error) {
			var d net.Dialer
			return d.DialContext(ctx, "unix", sock)
		},
		MaxIdleConnsPerHost: 512,
	}}
}

// runAPI measures the API figures against agentd serve on dir, with the
// fake model at base and the floor server fs for the fan-out's floor.
func runAPI(ctx context.Context, dir, base string, fs *floorServer, res *Result, c config) error {
	if err := writeAPIData(dir, base, c.sync); err != nil {
		return err
	}
	srv, err := startServe(ctx, c.exe, dir)
	if err != nil {
		return err
	}
	defer srv.stop()
	tok, err := gatewayToken(dir)
	if err != nil {
		return err
	}
	tcp := newPoster(srv.base(), http.Header{"Authorization": {"Bearer " + tok}},
		&http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: 512}})
	unix := newPoster("http://agentd", nil, unixHTTP(dir))
	turns := 0
	// A few turns of each agent first: what loading an agent costs is not
	// a turn's.
	for _, a := range []string{agent.BuiltinAgentID, "minimal"} {
		if _, err := timeEach(ctx, c.apiWarm, func(ctx context.Context, i int) error {
			return tcp(ctx, fmt.Sprintf("%s/warm-%d", a, i), "hello")
		}); err != nil {
			return fmt.Errorf("bench: API: %w", err)
		}
		turns += c.apiWarm
	}
	// Latency: one-step turns one after the other, a fresh session every
	// 20 turns.
	for _, v := range []struct {
		name    string
		post    postFunc
		agent   string
		p50, p9 *float64
	}{
		{"tcp", tcp, agent.BuiltinAgentID, &res.APITurnP50ms, &res.APITurnP99ms},
		{"tcp", tcp, "minimal", &res.APIMinimalP50ms, &res.APIMinimalP99ms},
		{"unix", unix, agent.BuiltinAgentID, &res.APIUnixP50ms, &res.APIUnixP99ms},
		{"unix", unix, "minimal", &res.APIUnixMinimalP50ms, &res.APIUnixMinimalP99ms},
	} {
		lat, err := timeEach(ctx, c.apiTurns, func(ctx context.Context, i int) error {
			return v.post(ctx, fmt.Sprintf("%s/lat-%s-%d", v.agent, v.name, i/20), "hello")
		})
		if err != nil {
			return fmt.Errorf("bench: API over %s, agent %s: %w", v.name, v.agent, err)
		}
		*v.p50, *v.p9 = pct(lat, 50), pct(lat, 99)
		turns += c.apiTurns
	}
	res.APIOverheadP50ms = res.APITurnP50ms - res.FloorRTTms
	res.APIOverheadP99ms = res.APITurnP99ms - res.FloorRTTms

	// Throughput over TCP with the default agent, each worker moving to a
	// fresh session every 20 turns; the daemon's CPU over the 100-session run.
	rate := func(n, workers int) (float64, error) {
		turns += n
		return perSecond(ctx, n, workers, func(ctx context.Context, w, k int) error {
			return tcp(ctx, fmt.Sprintf("%s/tp%d-%d-%d", agent.BuiltinAgentID, workers, w, k/20), "hello")
		})
	}
	if res.APITurnsPerS1, err = rate(c.api1, 1); err == nil {
		if res.APITurnsPerS16, err = rate(c.api16, 16); err == nil {
			cpu0 := cpuTime(srv.pid())
			res.APITurnsPerS, err = rate(c.api100, c.concurrency)
			res.CPUmsPerTurn = ms(cpuTime(srv.pid())-cpu0) / float64(c.api100)
		}
	}
	if err != nil {
		return fmt.Errorf("bench: API throughput: %w", err)
	}
	time.Sleep(c.settle)
	res.RSS10kTurnsMB, res.Anon10kTurnsMB, res.APITurns = rssMB(srv.pid()), statusMB(srv.pid(), "RssAnon"), turns

	if err := runFanoutApart(ctx, c, srv.pid(), srv.base(), tok, tcp, fs, res); err != nil {
		return err
	}
	return runOneShot(ctx, filepath.Join(filepath.Dir(dir), "oneshot"), base, res, c)
}

// runOneShot times `agentd send` without a daemon: the process starts,
// opens the data directory, runs one turn of the default agent and exits.
func runOneShot(ctx context.Context, dir, base string, res *Result, c config) error {
	if err := writeAPIData(dir, base, c.sync); err != nil {
		return err
	}
	// The first run creates the databases and keys: not a turn's cost.
	lat, err := timeEach(ctx, c.oneshots+1, func(ctx context.Context, i int) error {
		out, err := exec.CommandContext(ctx, c.exe, "send", "--data", dir, "--session", fmt.Sprintf("one-%d", i),
			agent.BuiltinAgentID, "hello").CombinedOutput()
		if err != nil {
			return fmt.Errorf("bench: agentd send: %w: %s", err, out)
		}
		return nil
	})
	if err != nil {
		return err
	}
	res.OneShotMS = pct(lat[1:], 50)
	return nil
}
