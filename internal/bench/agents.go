package bench

import (
	"bytes"
	"context"
	_ "embed"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"text/tabwriter"
	"time"

	"agentd/internal/agent"
	"agentd/internal/app"
	"agentd/internal/extension"
	"agentd/internal/gateway"
)

// The agents figures (`agentd bench agents`): agentd serve over TCP with
// the fake model, as a user drives it. Many background agents started
// through the API at once (until all are accepted, until all are done, the
// daemon's memory after them); a message passed along a chain of
// permanent agents, each sending it on with send_agent_message (the time
// a hop takes); one agent's message to many at once (until every target
// has it, and has answered).

// AgentsOptions say how Agents measures.
type AgentsOptions struct {
	// Quick runs smaller counts, for CI. Default false: the full counts.
	Quick bool
	// Background is how many background agents are started (default
	// 1,000; quick 100), Chain how many permanent agents the message
	// passes through (default 100; quick 10), Fanout how many agents one
	// message goes to (default 100; quick 10).
	Background, Chain, Fanout int
	// Synchronous is the store's synchronous mode (default "full").
	Synchronous string
	// Executable is the agentd binary whose serve is measured. Default:
	// the running executable.
	Executable string
	// Version is agentd's version, as the result gives it. Default "".
	Version string
}

// AgentsResult is what Agents measured; `agentd bench agents --json`
// prints it.
type AgentsResult struct {
	// Background agents started with POST /v1/agents/bench/start over
	// TCP, 16 at once: from the first request to the last 202
	// (AcceptS), each request to its 202 (p50, p99); from the first
	// request until every one of them is done (DoneS: the last one's
	// ended_at); the daemon's memory before the first and after the last
	// (VmRSS and RssAnon).
	Background    int     `json:"background"`
	Starters      int     `json:"background_concurrency"`
	AcceptS       float64 `json:"background_accepted_s"`
	AcceptP50ms   float64 `json:"background_start_p50_ms"`
	AcceptP99ms   float64 `json:"background_start_p99_ms"`
	DoneS         float64 `json:"background_done_s"`
	RSSBeforeMB   float64 `json:"background_rss_before_mb"`
	AnonBeforeMB  float64 `json:"background_anon_before_mb"`
	RSSAfterMB    float64 `json:"background_rss_after_mb"`
	AnonAfterMB   float64 `json:"background_anon_after_mb"`
	StartsPerS    float64 `json:"background_starts_per_s"`
	BackgroundCPU float64 `json:"background_cpu_ms_per_agent"`
	// A message passed along Chain permanent agents: a hop is from one
	// agent's turn start to the next one's (server times of turn-start
	// on /v1/stream?all=1); ChainTotal is the whole chain in seconds,
	// first turn start to last.
	Chain      int     `json:"chain"`
	HopP50ms   float64 `json:"chain_hop_p50_ms"`
	HopP90ms   float64 `json:"chain_hop_p90_ms"`
	HopMaxms   float64 `json:"chain_hop_max_ms"`
	ChainTotal float64 `json:"chain_s"`
	// One agent's step calls send_agent_message Fanout times in
	// parallel: from that step's model_call event to the last target's
	// system_message (FanoutAcceptedMS) and to the last target's turn_end
	// (FanoutDoneMS).
	Fanout           int     `json:"fanout"`
	FanoutAcceptedMS float64 `json:"fanout_accepted_ms"`
	FanoutDoneMS     float64 `json:"fanout_done_ms"`

	RunInfo
}

// agentsConfig is one Agents run's counts.
type agentsConfig struct {
	background, chain, fanout int
	// starters is how many start requests are in flight at once.
	starters int
	settle   time.Duration
	sync     string
	exe, ver string
	quick    bool
}

func newAgentsConfig(o *AgentsOptions) (agentsConfig, error) {
	if o == nil {
		o = new(AgentsOptions)
	}
	c := agentsConfig{background: 1000, chain: 100, fanout: 100, starters: 16, settle: time.Second,
		sync: o.Synchronous, exe: o.Executable, ver: o.Version, quick: o.Quick}
	if o.Quick {
		c.background, c.chain, c.fanout, c.settle = 100, 10, 10, 250*time.Millisecond
	}
	for _, v := range []struct{ dst, v *int }{{&c.background, &o.Background}, {&c.chain, &o.Chain}, {&c.fanout, &o.Fanout}} {
		if *v.v > 0 {
			*v.dst = *v.v
		}
	}
	if c.chain < 2 || c.chain > 1000 || c.fanout > 1000 {
		return c, fmt.Errorf("bench: agents: a chain of 2 to 1000 agents and a fan-out to at most 1000, not %d and %d", c.chain, c.fanout)
	}
	err := daemonDefaults(&c.sync, &c.exe)
	return c, err
}

// The bench's agents: the template of the background agents (an agent
// file), the fan-out's sender (a file) and the names of the chain's and
// the fan-out's permanent agents (rows put through the API).
const (
	taskTemplate = "bench"
	fanAgent     = "fan"
)

func chainName(i int) string  { return fmt.Sprintf("c%03d", i) }
func targetName(i int) string { return fmt.Sprintf("f%03d", i) }

//go:embed testdata/agents/agents.fake
var agentsFake string

// agentsScript is the fake model's script: agents.fake, then the chain's
// rules (the first agent's input sends "hop 001" to the second, whose
// turn sends "hop 002" to the third, …; the last one answers) and the
// fan-out's (one step with a call to every target).
func agentsScript(chain, fanout int) string {
	var b strings.Builder
	b.WriteString(agentsFake)
	b.WriteString("\n# The chain.\n")
	for i := range chain {
		switch i {
		case 0:
			b.WriteString("match ^chain start$\n")
		default:
			fmt.Fprintf(&b, "match >hop %03d<\n", i)
		}
		if i == chain-1 {
			b.WriteString("say the chain ends here\n\n")
			continue
		}
		fmt.Fprintf(&b, "call send_agent_message {\"target\": %q, \"text\": \"hop %03d\"}\n---\nsay sent\n\n", chainName(i+1), i+1)
	}
	b.WriteString("# The fan-out.\nmatch ^fan out$\n")
	for i := range fanout {
		fmt.Fprintf(&b, "call send_agent_message {\"target\": %q, \"text\": \"fanned\"}\n", targetName(i))
	}
	b.WriteString("---\nsay sent\n")
	return b.String()
}

// Agents measures agentd serve's dynamic agents. It needs the agentd
// binary (AgentsOptions.Executable) and loopback; what it writes goes
// into a temporary folder it removes.
func Agents(ctx context.Context, o *AgentsOptions) (*AgentsResult, error) {
	c, err := newAgentsConfig(o)
	if err != nil {
		return nil, err
	}
	dir, err := os.MkdirTemp("", "agentd-bench-agents-")
	if err != nil {
		return nil, err
	}
	defer os.RemoveAll(dir)
	return runAgents(ctx, dir, c)
}

func runAgents(ctx context.Context, dir string, c agentsConfig) (*AgentsResult, error) {
	res := &AgentsResult{Background: c.background, Starters: c.starters, Chain: c.chain, Fanout: c.fanout,
		RunInfo: newRunInfo(c.quick, c.sync, c.ver)}
	base, stopFake, err := startFake(ctx, "agents.fake", agentsScript(c.chain, c.fanout))
	if err != nil {
		return nil, err
	}
	defer stopFake()
	if err := writeAgentsData(dir, base, c); err != nil {
		return nil, err
	}
	srv, err := startServe(ctx, c.exe, dir)
	if err != nil {
		return nil, err
	}
	defer srv.stop()
	tok, err := gatewayToken(dir)
	if err != nil {
		return nil, err
	}
	api := &agentsAPI{base: srv.base(), tok: tok, hc: &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: 64}}}
	// The rows go over the socket, as an operator's: they give their
	// agents reach (agents.targets), which only an admin may.
	cl := gateway.NewUnixClient(filepath.Join(dir, app.SocketFile))
	if err := waitPing(ctx, cl); err != nil {
		return nil, err
	}
	if err := putAgentRows(ctx, cl, c); err != nil {
		return nil, err
	}

	sleep(ctx, c.settle)
	res.RSSBeforeMB, res.AnonBeforeMB = rssMB(srv.pid()), statusMB(srv.pid(), "RssAnon")
	if err := measureBackground(ctx, srv, api, res, c); err != nil {
		return nil, err
	}
	sleep(ctx, c.settle)
	res.RSSAfterMB, res.AnonAfterMB = rssMB(srv.pid()), statusMB(srv.pid(), "RssAnon")

	w, err := watchStream(ctx, srv.base(), tok)
	if err != nil {
		return nil, err
	}
	defer w.close()
	if err := measureChain(ctx, cl, w, res, c); err != nil {
		return nil, err
	}
	return res, measureFanout(ctx, cl, w, res, c)
}

// writeAgentsData writes the data directory: agentd.yaml (the store's
// synchronous mode, the fake at base as the default model, a hop limit
// above the chain's length) and the agent files of the background agents'
// template and of the fan-out's sender.
func writeAgentsData(dir, base string, c agentsConfig) error {
	if err := os.MkdirAll(filepath.Join(dir, agent.AgentsDir), 0o700); err != nil {
		return err
	}
	files := map[string]string{
		agent.ConfigFile: fmt.Sprintf("store:\n  synchronous: %s\ndefault_model:\n  provider: openai\n  name: fake\n  base_url: %s\n"+
			"agents:\n  max_hops: %d\n", c.sync, base, c.chain+10),
		filepath.Join(agent.AgentsDir, taskTemplate+".yaml"): "name: Bench task\ntype: background\n" +
			"description: Does one task, in one model call.\ntools:\n  builtin: []\nmemory:\n  recall: -1\n",
		filepath.Join(agent.AgentsDir, fanAgent+".yaml"): "name: Fan\ntype: permanent\n" +
			"description: Sends one message to many agents.\ntools:\n  allow: [send_agent_message]\nmemory:\n  recall: -1\n" +
			"agents:\n  targets: [\"f*\"]\n",
	}
	for name, content := range files {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(content), 0o600); err != nil {
			return err
		}
	}
	return nil
}

// waitPing waits (at most 10 s) until the daemon answers on cl: its
// socket may open after its TCP port.
func waitPing(ctx context.Context, cl *gateway.Client) error {
	for t0 := time.Now(); ; sleep(ctx, 5*time.Millisecond) {
		err := cl.Ping(ctx)
		if err == nil {
			return nil
		}
		if time.Since(t0) > 10*time.Second || ctx.Err() != nil {
			return fmt.Errorf("bench: agents: the daemon's socket: %w", err)
		}
	}
}

// putAgentRows puts the chain's and the fan-out's permanent agents
// through the API, as agent rows, 8 at once.
func putAgentRows(ctx context.Context, cl *gateway.Client, c agentsConfig) error {
	if err := putJobs(ctx, cl, 0, c.chain, func(i int) extension.Doc {
		spec := fmt.Sprintf(`{"name": "Chain %03d", "type": "permanent", "description": "Passes a message on to the next agent of the chain.",
			"tools": {"allow": ["send_agent_message"]}, "memory": {"recall": -1}, "agents": {"targets": ["c*"]}}`, i)
		return extension.Doc{Type: "agent", Name: chainName(i), Spec: json.RawMessage(spec)}
	}); err != nil {
		return err
	}
	return putJobs(ctx, cl, 0, c.fanout, func(i int) extension.Doc {
		spec := fmt.Sprintf(`{"name": "Target %03d", "type": "permanent", "description": "Answers the fan-out's message.",
			"tools": {"builtin": []}, "memory": {"recall": -1}}`, i)
		return extension.Doc{Type: "agent", Name: targetName(i), Spec: json.RawMessage(spec)}
	})
}

// measureBackground starts c.background background agents through the
// API, c.starters at once, each request timed to its 202, then waits
// until every one is done.
func measureBackground(ctx context.Context, srv *serveChild, api *agentsAPI, res *AgentsResult, c agentsConfig) error {
	lat := make([]time.Duration, c.background)
	var next atomic.Int64
	var first atomic.Value
	var wg sync.WaitGroup
	cpu0, t0 := cpuTime(srv.pid()), time.Now()
	for range c.starters {
		wg.Go(func() {
			for i := next.Add(1) - 1; i < int64(c.background) && first.Load() == nil; i = next.Add(1) - 1 {
				s0 := time.Now()
				if err := api.start(ctx, taskTemplate, fmt.Sprintf("task %d", i)); err != nil {
					first.CompareAndSwap(nil, fmt.Errorf("bench: agents: start %d: %w", i, err))
					return
				}
				lat[i] = time.Since(s0)
			}
		})
	}
	wg.Wait()
	if err, _ := first.Load().(error); err != nil {
		return err
	}
	accepted := time.Since(t0)
	res.AcceptS, res.StartsPerS = accepted.Seconds(), float64(c.background)/accepted.Seconds()
	res.AcceptP50ms, res.AcceptP99ms = pct(lat, 50), pct(lat, 99)

	last, err := api.waitDone(ctx, c.background, 2*time.Minute+time.Duration(c.background)*100*time.Millisecond)
	if err != nil {
		return err
	}
	res.DoneS = last.Sub(t0).Seconds()
	res.BackgroundCPU = ms(cpuTime(srv.pid())-cpu0) / float64(c.background)
	return nil
}

// measureChain sends "chain start" to the chain's first agent and reads,
// from the stream, when each agent's turn started.
func measureChain(ctx context.Context, cl *gateway.Client, w *streamWatch, res *AgentsResult, c agentsConfig) error {
	since := time.Now()
	if _, err := cl.Submit(ctx, chainName(0)+"/main", gateway.MessageRequest{Text: "chain start"}); err != nil {
		return fmt.Errorf("bench: agents: the chain's first message: %w", err)
	}
	var starts map[string]time.Time
	if err := w.until(ctx, time.Minute+time.Duration(c.chain)*time.Second, "the chain's turns", func(evs []streamEvent) bool {
		starts = firstOf(evs, "turn-start", since)
		_, ended := firstOf(evs, "turn-end", since)[chainName(c.chain-1)]
		return ended && hasAll(starts, c.chain, chainName)
	}); err != nil {
		return err
	}
	hops := make([]time.Duration, 0, c.chain-1)
	for i := 1; i < c.chain; i++ {
		hops = append(hops, starts[chainName(i)].Sub(starts[chainName(i-1)]))
	}
	res.HopP50ms, res.HopP90ms, res.HopMaxms = pct(hops, 50), pct(hops, 90), pct(hops, 100)
	res.ChainTotal = starts[chainName(c.chain-1)].Sub(starts[chainName(0)]).Seconds()
	return nil
}

// measureFanout sends "fan out" to the fan agent, whose step sends a
// message to every target, and reads from the stream that step's model
// call and each target's message and turn end.
func measureFanout(ctx context.Context, cl *gateway.Client, w *streamWatch, res *AgentsResult, c agentsConfig) error {
	since := time.Now()
	if _, err := cl.Submit(ctx, fanAgent+"/main", gateway.MessageRequest{Text: "fan out"}); err != nil {
		return fmt.Errorf("bench: agents: the fan-out's message: %w", err)
	}
	var call time.Time
	var got, ends map[string]time.Time
	if err := w.until(ctx, 2*time.Minute, "the fan-out's turns", func(evs []streamEvent) bool {
		call = firstOf(evs, "model-call", since)[fanAgent]
		got, ends = firstOf(evs, "system-message", since), firstOf(evs, "turn-end", since)
		return !call.IsZero() && hasAll(got, c.fanout, targetName) && hasAll(ends, c.fanout, targetName)
	}); err != nil {
		return err
	}
	var lastGot, lastEnd time.Time
	for i := range c.fanout {
		lastGot, lastEnd = later(lastGot, got[targetName(i)]), later(lastEnd, ends[targetName(i)])
	}
	res.FanoutAcceptedMS, res.FanoutDoneMS = ms(lastGot.Sub(call)), ms(lastEnd.Sub(call))
	return nil
}

// hasAll reports whether m holds name(i) for every i below n.
func hasAll(m map[string]time.Time, n int, name func(int) string) bool {
	for i := range n {
		if _, ok := m[name(i)]; !ok {
			return false
		}
	}
	return true
}

func later(a, b time.Time) time.Time {
	if b.After(a) {
		return b
	}
	return a
}

// agentsAPI is the daemon's API over TCP, with its token.
type agentsAPI struct {
	base, tok string
	hc        *http.Client
}

// do sends a JSON request and decodes the answer into out, wanting the
// status want.
func (a *agentsAPI) do(ctx context.Context, method, path string, body any, want int, out any) error {
	var rd io.Reader
	if body != nil {
		b, err := json.Marshal(body)
		if err != nil {
			return err
		}
		rd = bytes.NewReader(b)
	}
	req, err := http.NewRequestWithContext(ctx, method, a.base+path, rd)
	if err != nil {
		return err
	}
	req.Header.Set("Authorization", "Bearer "+a.tok)
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	resp, err := a.hc.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(io.LimitReader(resp.Body, 64<<20))
	if err != nil {
		return err
	}
	if resp.StatusCode != want {
		return fmt.Errorf("%s %s: %s: %s", method, path, resp.Status, bytes.TrimSpace(b))
	}
	if out == nil {
		return nil
	}
	return json.Unmarshal(b, out)
}

// start starts a background agent of template with the prompt.
func (a *agentsAPI) start(ctx context.Context, template, prompt string) error {
	var out struct {
		ID string `json:"id"`
	}
	if err := a.do(ctx, "POST", "/v1/agents/"+url.PathEscape(template)+"/start", map[string]string{"prompt": prompt},
		http.StatusAccepted, &out); err != nil {
		return err
	}
	if out.ID == "" {
		return errors.New("the answer names no agent")
	}
	return nil
}

// agentRow is what the bench reads of GET /v1/agents.
type agentRow struct {
	ID      string    `json:"id"`
	State   string    `json:"state"`
	EndedAt time.Time `json:"ended_at"`
}

// background lists the background agents in state.
func (a *agentsAPI) background(ctx context.Context, state string, limit int) ([]agentRow, error) {
	var rows []agentRow
	q := url.Values{"type": {"background"}, "state": {state}, "limit": {fmt.Sprint(limit)}}
	err := a.do(ctx, "GET", "/v1/agents?"+q.Encode(), nil, http.StatusOK, &rows)
	return rows, err
}

// waitDone waits until no background agent is starting or running (one
// small request each every 100 ms), then wants n of them done, and
// returns the last one's end.
func (a *agentsAPI) waitDone(ctx context.Context, n int, timeout time.Duration) (time.Time, error) {
	deadline := time.Now().Add(timeout)
	for {
		open := 0
		for _, st := range []string{"starting", "running"} {
			rows, err := a.background(ctx, st, 1)
			if err != nil {
				return time.Time{}, fmt.Errorf("bench: agents: %w", err)
			}
			open += len(rows)
		}
		if open == 0 {
			break
		}
		if time.Now().After(deadline) {
			return time.Time{}, fmt.Errorf("bench: agents: background agents still running after %s", timeout)
		}
		sleep(ctx, 100*time.Millisecond)
	}
	polled := time.Now()
	rows, err := a.background(ctx, "done", max(n, 1))
	if err != nil {
		return time.Time{}, fmt.Errorf("bench: agents: %w", err)
	}
	if len(rows) != n {
		failed, _ := a.background(ctx, "failed", 5)
		return time.Time{}, fmt.Errorf("bench: agents: %d of %d background agents done; failed ones: %+v", len(rows), n, failed)
	}
	var last time.Time
	for _, r := range rows {
		last = later(last, r.EndedAt)
	}
	if last.IsZero() { // the list gives no end: the poll that found them done
		last = polled
	}
	return last, nil
}

// WriteTable writes the result for people.
func (r *AgentsResult) WriteTable(w io.Writer) error {
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintf(tw, "# agentd serve's dynamic agents, over TCP\nFIGURE\tVALUE\tWHAT\n")
	fmt.Fprintf(tw, "background: all accepted\t%.2f s (%.0f /s)\t%d POST /v1/agents/%s/start, %d at once: first request → last 202\n",
		r.AcceptS, r.StartsPerS, r.Background, taskTemplate, r.Starters)
	fmt.Fprintf(tw, "background: start p50 / p99\t%.2f / %.2f ms\teach request → its 202\n", r.AcceptP50ms, r.AcceptP99ms)
	fmt.Fprintf(tw, "background: all done\t%.2f s\tfirst request → the last agent's end (one model call each)\n", r.DoneS)
	fmt.Fprintf(tw, "background: CPU per agent\t%.2f ms\tthe daemon's CPU from the first request to all done, ÷ agents\n", r.BackgroundCPU)
	fmt.Fprintf(tw, "RSS / anon before\t%.1f / %.1f MB\tthe daemon with the chain's and fan-out's rows, no agent run yet\n", r.RSSBeforeMB, r.AnonBeforeMB)
	fmt.Fprintf(tw, "RSS / anon after\t%.1f / %.1f MB\tafter the %d background agents are done\n", r.RSSAfterMB, r.AnonAfterMB, r.Background)
	fmt.Fprintf(tw, "chain: hop p50 / p90 / max\t%.1f / %.1f / %.1f ms\t%d permanent agents, each send_agent_message to the next: turn start → the next one's\n",
		r.HopP50ms, r.HopP90ms, r.HopMaxms, r.Chain)
	fmt.Fprintf(tw, "chain: whole\t%.2f s\tfirst turn start → last\n", r.ChainTotal)
	fmt.Fprintf(tw, "fan-out: all delivered\t%.1f ms\tone step's %d parallel send_agent_message: its model_call → the last target's system_message\n",
		r.FanoutAcceptedMS, r.Fanout)
	fmt.Fprintf(tw, "fan-out: all answered\t%.1f ms\tits model_call → the last target's turn_end\n", r.FanoutDoneMS)
	if err := tw.Flush(); err != nil {
		return err
	}
	return r.writeFooter(w)
}
