package gateway

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"sync"
	"time"

	"agentd/internal/event"
	"agentd/internal/identity"
	"agentd/internal/job"
	"agentd/internal/permit"
	"agentd/internal/runtime"
	"agentd/internal/store"
)

// APIError is an error response from the API, or the error that ended a
// stream (with the status it has as a response).
type APIError struct {
	Status int
	Code   string
	Msg    string
	// RetryAfter, when not 0, is how long to wait before sending the
	// request again (agentd refused it for now).
	RetryAfter time.Duration
	// Errors are the problems of an invalid extension document,
	// "pointer: message" each (InvalidError).
	Errors []string
}

func (e *APIError) Error() string { return e.Msg }

// Client calls the API over any connection: the daemon's unix socket, or an
// in-process server (see Pipe).
type Client struct {
	hc    *http.Client
	base  string // scheme://host[/prefix] of requests; "" for http://agentd
	token string // sent as Authorization: Bearer (a remote gateway)
}

// NewRemoteClient returns a client for the API of agentd serve on another
// host, at baseURL (http:// or https://, optionally with a path prefix),
// sending token with every request.
func NewRemoteClient(baseURL, token string) (*Client, error) {
	u, err := url.Parse(baseURL)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return nil, fmt.Errorf("gateway client: %q: want an http:// or https:// URL such as http://127.0.0.1:7420", baseURL)
	}
	if u.User != nil || u.RawQuery != "" || u.Fragment != "" {
		return nil, fmt.Errorf("gateway client: %q: want no user name, query or fragment (the token goes in --token or %s)", baseURL, TokenEnv)
	}
	if token == "" {
		return nil, fmt.Errorf("gateway client: %s needs a token: --token or %s", baseURL, TokenEnv)
	}
	tr := http.DefaultTransport.(*http.Transport).Clone()
	tr.MaxIdleConnsPerHost = 64
	hc := &http.Client{Transport: tr,
		// Never carry the token to another place.
		CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	return &Client{hc: hc, base: strings.TrimSuffix(u.Scheme+"://"+u.Host+u.EscapedPath(), "/"), token: token}, nil
}

// NewUnixClient returns a client for the API on a unix socket.
func NewUnixClient(path string) *Client {
	tr := &http.Transport{
		DialContext: func(ctx context.Context, _, _ string) (net.Conn, error) {
			var d net.Dialer
			return d.DialContext(ctx, "unix", path)
		},
		MaxIdleConnsPerHost: 64,
	}
	return &Client{hc: &http.Client{Transport: tr}}
}

// Ping reports whether the API answers.
func (c *Client) Ping(ctx context.Context) error {
	ctx, cancel := context.WithTimeout(ctx, 2*time.Second)
	defer cancel()
	var v map[string]bool
	return c.do(ctx, "GET", "/healthz", nil, &v)
}

func (c *Client) do(ctx context.Context, method, path string, body, out any) error {
	return c.doWith(ctx, method, path, nil, body, out)
}

// doWith is do, sending the headers h as well.
func (c *Client) doWith(ctx context.Context, method, path string, h http.Header, body, out any) error {
	resp, err := c.sendWith(ctx, method, path, h, body)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	if out == nil {
		io.Copy(io.Discard, resp.Body)
		return nil
	}
	if err := json.NewDecoder(resp.Body).Decode(out); err != nil {
		return fmt.Errorf("gateway client: decode %s: %w", path, err)
	}
	return nil
}

func (c *Client) send(ctx context.Context, method, path string, body any) (*http.Response, error) {
	return c.sendWith(ctx, method, path, nil, body)
}

// sendWith is send, sending the headers h as well.
func (c *Client) sendWith(ctx context.Context, method, path string, h http.Header, body any) (*http.Response, error) {
	var rd io.Reader
	if body != nil {
		b, err := json.Marshal(body)
		if err != nil {
			return nil, err
		}
		rd = bytes.NewReader(b)
	}
	base := c.base
	if base == "" {
		base = "http://agentd"
	}
	req, err := http.NewRequestWithContext(ctx, method, base+path, rd)
	if err != nil {
		return nil, err
	}
	for k, v := range h {
		req.Header[k] = v
	}
	if c.token != "" {
		req.Header.Set("Authorization", "Bearer "+c.token)
	}
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	resp, err := c.hc.Do(req)
	if err != nil {
		return nil, err
	}
	if c.base != "" && resp.StatusCode >= 300 && resp.StatusCode < 400 {
		resp.Body.Close()
		return nil, &APIError{Status: resp.StatusCode, Code: "redirect",
			Msg: fmt.Sprintf("the gateway redirects to %s: use that URL", resp.Header.Get("Location"))}
	}
	if resp.StatusCode >= 400 {
		defer resp.Body.Close()
		var e InvalidError
		json.NewDecoder(io.LimitReader(resp.Body, 1<<20)).Decode(&e)
		if e.Error.Error == "" {
			e.Error.Error = resp.Status
		}
		secs, _ := strconv.Atoi(resp.Header.Get("Retry-After"))
		return nil, &APIError{Status: resp.StatusCode, Code: e.Code, Msg: e.Error.Error, RetryAfter: time.Duration(max(secs, 0)) * time.Second,
			Errors: e.Errors}
	}
	return resp, nil
}

func sessPath(addr string) (string, error) {
	a, k, err := runtime.ParseAddress(addr)
	if err != nil {
		return "", err
	}
	return "/v1/sessions/" + url.PathEscape(a) + "/" + url.PathEscape(k), nil
}

// Agents lists agents.
func (c *Client) Agents(ctx context.Context) ([]AgentInfo, error) {
	var out []AgentInfo
	return out, c.do(ctx, "GET", "/v1/agents", nil, &out)
}

// Sessions lists sessions.
func (c *Client) Sessions(ctx context.Context, f store.SessionFilter) ([]SessionInfo, error) {
	q := url.Values{}
	if f.Agent != "" {
		q.Set("agent", f.Agent)
	}
	if f.State != "" {
		q.Set("state", f.State)
	}
	if f.Limit > 0 {
		q.Set("limit", strconv.Itoa(f.Limit))
	}
	var out []SessionInfo
	return out, c.do(ctx, "GET", "/v1/sessions?"+q.Encode(), nil, &out)
}

// Events returns a page of a session's log after a sequence number; with
// wait > 0 it waits that long for a first event.
func (c *Client) Events(ctx context.Context, addr string, after int64, limit int, wait time.Duration) (EventsPage, error) {
	var out EventsPage
	p, err := sessPath(addr)
	if err != nil {
		return out, err
	}
	q := url.Values{"after": {strconv.FormatInt(after, 10)}}
	if limit > 0 {
		q.Set("limit", strconv.Itoa(limit))
	}
	if wait > 0 {
		q.Set("wait", wait.String())
	}
	return out, c.do(ctx, "GET", p+"/events?"+q.Encode(), nil, &out)
}

// Submit posts a message and returns at once.
func (c *Client) Submit(ctx context.Context, addr string, m MessageRequest) (runtime.Receipt, error) {
	var out MessageResponse
	p, err := sessPath(addr)
	if err != nil {
		return out.Receipt, err
	}
	return out.Receipt, c.do(ctx, "POST", p+"/messages", m, &out)
}

// Stream posts a message and calls fn with each event of its turn until it
// ends.
func (c *Client) Stream(ctx context.Context, addr string, m MessageRequest, fn func(event.Event) error) (runtime.Receipt, event.TurnEndData, error) {
	p, err := sessPath(addr)
	if err != nil {
		return runtime.Receipt{}, event.TurnEndData{}, err
	}
	return c.streamAt(ctx, p+"/messages?stream=true", m, fn)
}

// ContextStream sends a message to the instance of context type typ that
// req's args name, calling fn with each event of its turn as Stream does.
// The receipt names the instance's session.
func (c *Client) ContextStream(ctx context.Context, typ string, req ContextSendRequest, fn func(event.Event) error) (runtime.Receipt, event.TurnEndData, error) {
	t, err := seg(typ)
	if err != nil {
		return runtime.Receipt{}, event.TurnEndData{}, err
	}
	return c.streamAt(ctx, "/v1/contexts/"+t+"/send?stream=true", req, fn)
}

// Contexts lists the active context types.
func (c *Client) Contexts(ctx context.Context) (ContextList, error) {
	var out ContextList
	return out, c.do(ctx, "GET", "/v1/contexts", nil, &out)
}

// streamAt posts body to path, which streams a turn's events as NDJSON.
func (c *Client) streamAt(ctx context.Context, path string, body any, fn func(event.Event) error) (runtime.Receipt, event.TurnEndData, error) {
	resp, err := c.send(ctx, "POST", path, body)
	if err != nil {
		return runtime.Receipt{}, event.TurnEndData{}, err
	}
	defer resp.Body.Close()
	sc := bufio.NewScanner(resp.Body)
	sc.Buffer(make([]byte, 64<<10), 64<<20)
	for sc.Scan() {
		var l StreamLine
		if err := json.Unmarshal(sc.Bytes(), &l); err != nil {
			return runtime.Receipt{}, event.TurnEndData{}, fmt.Errorf("gateway client: stream: %w", err)
		}
		switch {
		case l.Error != nil:
			status := l.Status
			if status == 0 { // an agentd that did not say
				status = http.StatusInternalServerError
			}
			return runtime.Receipt{}, event.TurnEndData{}, &APIError{Status: status, Code: l.Error.Code, Msg: l.Error.Error,
				RetryAfter: time.Duration(max(l.RetryAfter, 0)) * time.Second}
		case l.Event != nil:
			if err := fn(*l.Event); err != nil {
				return runtime.Receipt{}, event.TurnEndData{}, err
			}
		case l.End != nil && l.Receipt != nil:
			return *l.Receipt, *l.End, nil
		}
	}
	if err := sc.Err(); err != nil {
		return runtime.Receipt{}, event.TurnEndData{}, err
	}
	return runtime.Receipt{}, event.TurnEndData{}, errors.New("gateway client: stream ended before the turn did")
}

// Reset appends a reset marker to a session.
func (c *Client) Reset(ctx context.Context, addr string) error {
	p, err := sessPath(addr)
	if err != nil {
		return err
	}
	return c.do(ctx, "POST", p+"/reset", nil, nil)
}

// Compact folds a session's older turns into a summary now, the summary
// keeping focus in particular, and waits for it.
func (c *Client) Compact(ctx context.Context, addr, focus string) (MessageResponse, error) {
	p, err := sessPath(addr)
	if err != nil {
		return MessageResponse{}, err
	}
	var out MessageResponse
	err = c.do(ctx, "POST", p+"/compact", CompactRequest{Focus: focus}, &out)
	return out, err
}

// Cancel cancels a session's running turn.
func (c *Client) Cancel(ctx context.Context, addr string) error {
	p, err := sessPath(addr)
	if err != nil {
		return err
	}
	return c.do(ctx, "POST", p+"/cancel", nil, nil)
}

// CloseSession closes a session: its log stays, new input is refused.
func (c *Client) CloseSession(ctx context.Context, addr string) error {
	p, err := sessPath(addr)
	if err != nil {
		return err
	}
	return c.do(ctx, "POST", p+"/close", nil, nil)
}

// Reopen reopens a closed session; it reports whether it was closed.
func (c *Client) Reopen(ctx context.Context, addr string) (bool, error) {
	p, err := sessPath(addr)
	if err != nil {
		return false, err
	}
	var out ReopenResponse
	err = c.do(ctx, "POST", p+"/reopen", nil, &out)
	return out.Reopened, err
}

// Pipe serves h in process and returns a client connected to it through
// in-memory connections, and a function that stops the server.
func Pipe(h http.Handler) (*Client, func()) {
	ln := &pipeListener{conns: make(chan net.Conn), done: make(chan struct{})}
	hs := &http.Server{Handler: h}
	go hs.Serve(ln)
	tr := &http.Transport{DialContext: ln.dial}
	return &Client{hc: &http.Client{Transport: tr}}, func() {
		tr.CloseIdleConnections()
		hs.Close()
	}
}

type pipeListener struct {
	conns chan net.Conn
	done  chan struct{}
	once  sync.Once
}

func (l *pipeListener) dial(ctx context.Context, _, _ string) (net.Conn, error) {
	a, b := net.Pipe()
	select {
	case l.conns <- b:
		return a, nil
	case <-l.done:
		return nil, net.ErrClosed
	case <-ctx.Done():
		return nil, ctx.Err()
	}
}

func (l *pipeListener) Accept() (net.Conn, error) {
	select {
	case c := <-l.conns:
		return c, nil
	case <-l.done:
		return nil, net.ErrClosed
	}
}

func (l *pipeListener) Close() error {
	l.once.Do(func() { close(l.done) })
	return nil
}

func (l *pipeListener) Addr() net.Addr { return pipeAddr{} }

type pipeAddr struct{}

func (pipeAddr) Network() string { return "pipe" }
func (pipeAddr) String() string  { return "in-process" }

// ErrEmptyName is returned, before any request, for an empty agent id,
// approval id, server name or skill name.
var ErrEmptyName = errors.New("gateway client: empty id or name")

// seg returns v escaped as one path segment.
func seg(v string) (string, error) {
	if v == "" {
		return "", ErrEmptyName
	}
	return url.PathEscape(v), nil
}

// Lifecycle runs the message lifecycle of one message to an agent and
// returns the receipt and the lifecycle object once the turn has ended.
func (c *Client) Lifecycle(ctx context.Context, agentID string, req LifecycleRequest) (LifecycleResponse, error) {
	var out LifecycleResponse
	id, err := seg(agentID)
	if err != nil {
		return out, err
	}
	return out, c.do(ctx, "POST", "/v1/agents/"+id+"/message", req, &out)
}

// Approvals lists the tool calls waiting for a person, oldest first.
func (c *Client) Approvals(ctx context.Context) ([]permit.Request, error) {
	var out []permit.Request
	return out, c.do(ctx, "GET", "/v1/approvals", nil, &out)
}

// Resolve grants or denies the waiting call id; reason tells the model why
// (for a denial). The decision is recorded as made by "cli".
func (c *Client) Resolve(ctx context.Context, id string, grant bool, reason string) (permit.Decision, error) {
	verb := "deny"
	if grant {
		verb = "grant"
	}
	return c.resolve(ctx, id, verb, ResolveRequest{Reason: reason, By: "cli"})
}

// Approve grants the waiting call id with a scope: "" this call,
// permit.ScopeSession or permit.ScopeAlways (kept as a grant). The
// decision is recorded as made by "cli".
func (c *Client) Approve(ctx context.Context, id, scope string) (permit.Decision, error) {
	return c.resolve(ctx, id, "grant", ResolveRequest{By: "cli", Scope: scope})
}

func (c *Client) resolve(ctx context.Context, id, verb string, req ResolveRequest) (permit.Decision, error) {
	var out permit.Decision
	p, err := seg(id)
	if err != nil {
		return out, err
	}
	return out, c.do(ctx, "POST", "/v1/approvals/"+p+"/"+verb, req, &out)
}

// Grants lists the standing grants, of one agent or ("") every agent's.
func (c *Client) Grants(ctx context.Context, agentID string) ([]GrantInfo, error) {
	var out []GrantInfo
	path := "/v1/grants"
	if agentID != "" {
		path += "?agent=" + url.QueryEscape(agentID)
	}
	return out, c.do(ctx, "GET", path, nil, &out)
}

// RevokeGrant revokes the grant id.
func (c *Client) RevokeGrant(ctx context.Context, id string) error {
	p, err := seg(id)
	if err != nil {
		return err
	}
	return c.do(ctx, "DELETE", "/v1/grants/"+p, nil, nil)
}

// MCPServers lists the MCP servers and their state.
func (c *Client) MCPServers(ctx context.Context) ([]ServerInfo, error) {
	var out []ServerInfo
	return out, c.do(ctx, "GET", "/v1/mcp/servers", nil, &out)
}

// AddMCPServer adds an MCP server at run time. It returns once the server
// is connected and its tools are listed, or with the reason it is not.
func (c *Client) AddMCPServer(ctx context.Context, req AddServerRequest) (ServerInfo, error) {
	var out ServerInfo
	return out, c.do(ctx, "POST", "/v1/mcp/servers", req, &out)
}

// RemoveMCPServer removes an MCP server added at run time.
func (c *Client) RemoveMCPServer(ctx context.Context, name string) error {
	p, err := seg(name)
	if err != nil {
		return err
	}
	return c.do(ctx, "DELETE", "/v1/mcp/servers/"+p, nil, nil)
}

// MCPTools lists the tools an MCP server has registered.
func (c *Client) MCPTools(ctx context.Context, name string) ([]ToolInfo, error) {
	var out []ToolInfo
	p, err := seg(name)
	if err != nil {
		return out, err
	}
	return out, c.do(ctx, "GET", "/v1/mcp/servers/"+p+"/tools", nil, &out)
}

// Key returns an agent's public key; Exists is false when it has none yet.
func (c *Client) Key(ctx context.Context, agentID string) (KeyInfo, error) {
	var out KeyInfo
	id, err := seg(agentID)
	if err != nil {
		return out, err
	}
	return out, c.do(ctx, "GET", "/v1/agents/"+id+"/key", nil, &out)
}

// GenerateKey makes a new key for an agent; force replaces an existing one.
func (c *Client) GenerateKey(ctx context.Context, agentID string, force bool) (KeyInfo, error) {
	var out KeyInfo
	id, err := seg(agentID)
	if err != nil {
		return out, err
	}
	return out, c.do(ctx, "POST", "/v1/agents/"+id+"/key", KeyRequest{Force: force}, &out)
}

// ImportKey gives an agent the key in keypair, the content of a Solana
// keypair file (a JSON array of 64 numbers); force replaces an existing key.
func (c *Client) ImportKey(ctx context.Context, agentID string, keypair []byte, force bool) (KeyInfo, error) {
	var out KeyInfo
	id, err := seg(agentID)
	if err != nil {
		return out, err
	}
	if !json.Valid(keypair) {
		return out, fmt.Errorf("gateway client: import key: %w: not JSON (want an array of 64 numbers)", identity.ErrKeyFile)
	}
	return out, c.do(ctx, "PUT", "/v1/agents/"+id+"/key", KeyRequest{Force: force, Keypair: keypair}, &out)
}

// Skills lists the skills, with their availability.
func (c *Client) Skills(ctx context.Context) ([]SkillInfo, error) {
	var out []SkillInfo
	return out, c.do(ctx, "GET", "/v1/skills", nil, &out)
}

// Skill returns one skill with its instructions.
func (c *Client) Skill(ctx context.Context, name string) (SkillDetail, error) {
	var out SkillDetail
	p, err := seg(name)
	if err != nil {
		return out, err
	}
	return out, c.do(ctx, "GET", "/v1/skills/"+p, nil, &out)
}

// Commands lists the active slash commands (`command` extensions), the
// chat prefixes that route and the agents' tags.
func (c *Client) Commands(ctx context.Context) (CommandList, error) {
	var out CommandList
	return out, c.do(ctx, "GET", "/v1/commands", nil, &out)
}

// RunJob runs a job now with vars as its payload: with wait, it returns
// the run as it ended (its output, or why it failed); without, once its
// input is accepted.
func (c *Client) RunJob(ctx context.Context, name string, vars map[string]string, wait bool) (job.Result, error) {
	var out job.Result
	n, err := seg(name)
	if err != nil {
		return out, err
	}
	p := "/v1/jobs/" + n + "/run"
	if wait {
		p += "?wait=true"
	}
	return out, c.do(ctx, "POST", p, JobRunRequest{Vars: vars}, &out)
}

// Jobs lists the jobs, with their next fire times and last runs.
func (c *Client) Jobs(ctx context.Context) ([]JobInfo, error) {
	var out JobList
	err := c.do(ctx, "GET", "/v1/jobs", nil, &out)
	return out.Jobs, err
}

// Job returns one job.
func (c *Client) Job(ctx context.Context, name string) (JobInfo, error) {
	var out JobInfo
	n, err := seg(name)
	if err != nil {
		return out, err
	}
	return out, c.do(ctx, "GET", "/v1/jobs/"+n, nil, &out)
}

// JobRuns returns a page of a job's runs, newest first, before the run
// before ("" from the newest), up to limit (0: the server's default).
func (c *Client) JobRuns(ctx context.Context, name, before string, limit int) (JobRunsPage, error) {
	var out JobRunsPage
	n, err := seg(name)
	if err != nil {
		return out, err
	}
	q := url.Values{}
	if before != "" {
		q.Set("before", before)
	}
	if limit > 0 {
		q.Set("limit", strconv.Itoa(limit))
	}
	p := "/v1/jobs/" + n + "/runs"
	if len(q) > 0 {
		p += "?" + q.Encode()
	}
	return out, c.do(ctx, "GET", p, nil, &out)
}

// PauseJob pauses (on false: resumes) a job: its row's enabled state.
func (c *Client) PauseJob(ctx context.Context, name string, pause bool) (JobInfo, error) {
	var out JobInfo
	n, err := seg(name)
	if err != nil {
		return out, err
	}
	verb := "resume"
	if pause {
		verb = "pause"
	}
	return out, c.do(ctx, "POST", "/v1/jobs/"+n+"/"+verb, nil, &out)
}
