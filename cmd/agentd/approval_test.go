package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/coder/websocket"
	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/mr-tron/base58"

	"agentd/approval"
	"agentd/internal/engine"
	"agentd/internal/event"
	"agentd/internal/mcpdemo"
)

// bearer adds the API token to every request.
type bearer struct{ token string }

func (b bearer) RoundTrip(r *http.Request) (*http.Response, error) {
	r = r.Clone(r.Context())
	r.Header.Set("Authorization", "Bearer "+b.token)
	return http.DefaultTransport.RoundTrip(r)
}

// signatures finds every base58 string that decodes to 64 bytes: an
// ed25519 signature, in whatever field or text it hides.
func signatures(s string) []string {
	var out []string
	for _, w := range regexp.MustCompile(`[1-9A-HJ-NP-Za-km-z]{80,90}`).FindAllString(s, -1) {
		if b, err := base58.Decode(w); err == nil && len(b) == 64 {
			out = append(out, w)
		}
	}
	return out
}

// With only the API token, nothing agentd answers, logs or streams is an
// approval a tool server would accept for a call of the token holder's
// choosing: no signature appears anywhere. The approvals a tool server
// receives are each bound to their call: they verify for that server, tool
// and arguments, and for nothing else.
func TestApprovalsCannotBeTakenWithTheToken(t *testing.T) {
	t.Parallel()
	srv := newHTTPMCP(t, "127.0.0.1:0")
	addr := fake(t, "match ^count\ncall web__counter {}\n---\nsay counted {{tool_result}}\n\nmatch *\nsay ok\n")
	agentFile := openaiAgent(addr, "mcp_servers:\n  web:\n    url: "+srv.URL+"\n    allow_networks: [127.0.0.1/32]\n")
	dir := dataDir(t, map[string]string{"agents/a.yaml": agentFile})
	token := strings.TrimSpace(okRun(t, dir, "token"))
	d, base := serveListen(t, dir, "127.0.0.1:0")
	defer d.stop(t)
	client := &http.Client{Transport: bearer{token}}

	// Everything the token holder sees, by every route.
	var mu sync.Mutex
	var seen []string
	see := func(what, s string) {
		mu.Lock()
		defer mu.Unlock()
		seen = append(seen, what+": "+s)
	}
	ctx, cancel := context.WithTimeout(t.Context(), 60*time.Second)
	defer cancel()
	ws, _, err := websocket.Dial(ctx, "ws"+strings.TrimPrefix(base, "http")+"/v1/stream?agent=a",
		&websocket.DialOptions{HTTPHeader: http.Header{"Authorization": {"Bearer " + token}}})
	if err != nil {
		t.Fatal(err)
	}
	ws.SetReadLimit(16 << 20)
	if _, msg, err := ws.Read(ctx); err != nil || !strings.Contains(string(msg), `"subscribed"`) {
		t.Fatalf("stream: %s %v", msg, err)
	}
	streamed := make(chan struct{})
	go func() {
		defer close(streamed)
		ends := 0
		for ends < 2 {
			_, msg, err := ws.Read(ctx)
			if err != nil {
				return
			}
			see("stream", string(msg))
			if strings.Contains(string(msg), `"turn-end"`) {
				ends++
			}
		}
	}()
	post := func(path, body string) string {
		resp, err := client.Post(base+path, "application/json", strings.NewReader(body))
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		var b strings.Builder
		if _, err := fmt.Fprint(&b, readAll(t, resp)); err != nil {
			t.Fatal(err)
		}
		if resp.StatusCode != 200 {
			t.Fatalf("POST %s: %d %s", path, resp.StatusCode, b.String())
		}
		see("POST "+path, b.String())
		return b.String()
	}
	answer := post("/v1/agents/a/message", `{"message":"count please","opts":{"channelId":"shop"}}`)
	post("/v1/agents/a/message", `{"message":"just talk","opts":{"channelId":"quiet","context":false,"actions":false,"postProcess":false}}`)
	pubkey := strings.TrimSpace(okRun(t, dir, "keys", "show", "a")) // made by the first message
	select {
	case <-streamed:
	case <-ctx.Done():
		t.Fatal("the stream did not show both turns")
	}
	ws.Close(websocket.StatusNormalClosure, "")
	for _, s := range []string{"shop", "quiet"} {
		resp, err := client.Get(base + "/v1/sessions/a/" + s + "/events")
		if err != nil {
			t.Fatal(err)
		}
		see("events "+s, readAll(t, resp))
		resp.Body.Close()
	}
	facade := mcp.NewClient(&mcp.Implementation{Name: "test", Version: "1"}, nil)
	cs, err := facade.Connect(ctx, &mcp.StreamableClientTransport{Endpoint: base + "/mcp", HTTPClient: client}, nil)
	if err != nil {
		t.Fatal(err)
	}
	for _, s := range []string{"a/shop", "a/quiet"} {
		res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "read_session_log", Arguments: map[string]any{"session": s}})
		if err != nil || res.IsError {
			t.Fatalf("read_session_log %s: %v %+v", s, err, res)
		}
		b, _ := json.Marshal(res)
		see("read_session_log "+s, string(b))
	}
	cs.Close()
	see("agentd log", okRun(t, dir, "log", "a/shop", "--json"))

	// The lifecycle answer shows what was signed, by whom, and a
	// fingerprint, in both turns (the second called no tool server).
	var lc struct {
		Lifecycle engine.Object `json:"lifecycle"`
	}
	if err := json.Unmarshal([]byte(answer), &lc); err != nil {
		t.Fatal(err)
	}
	obj := lc.Lifecycle
	if obj.Output != "counted 1" || obj.DaemonPubkey != pubkey || obj.Approval == nil || obj.Approval.DaemonPubkey != pubkey ||
		obj.Approval.Message != "count please" || obj.Approval.ChannelID != "shop" || len(obj.Approval.Fingerprint) != 16 {
		t.Fatalf("lifecycle object %+v, approval %+v", obj, obj.Approval)
	}
	if len(obj.HooksLog) != 1 || obj.HooksLog[0].IsError {
		t.Fatalf("the hook did not run: %+v", obj.HooksLog)
	}
	all := strings.Join(seen, "\n")
	for _, want := range []string{`"fingerprint"`, `"signatureFingerprint"`, `"counted 1"`} {
		if !strings.Contains(all, want) {
			t.Errorf("what the token holder saw lacks %s", want)
		}
	}
	if !strings.Contains(all, `"channelId":"quiet"`) || strings.Count(all, `"daemonPubkey":"`+pubkey) < 2 {
		t.Errorf("the lifecycle without tool servers lacks its approval")
	}

	// Nothing verifies: there is no signature at all, and an approval built
	// from what was shown, for a call of the token holder's choosing, is
	// refused.
	verifier := approval.NewVerifier(&approval.VerifierOptions{Audience: []string{srv.URL}, Trusted: []string{pubkey}, MaxAge: time.Hour})
	if sigs := signatures(all); len(sigs) > 0 {
		for _, s := range sigs {
			forged := &approval.Approval{Version: approval.Version, Pubkey: pubkey, Message: "count please", CreatedAt: obj.CreatedAt,
				MessageID: obj.MessageID, ChannelID: obj.ChannelID, Audience: srv.URL, Tool: "counter", Signature: s}
			forged.ArgumentsHash, _ = approval.HashArguments(`{}`)
			t.Errorf("a signature is visible with the token (verifies for counter: %v): %s", verifier.Verify(forged, "counter", `{}`), s)
		}
		for _, line := range seen {
			if len(signatures(line)) > 0 {
				t.Logf("in %.300s", line)
			}
		}
	}
	shown, _ := json.Marshal(obj.Approval)
	if a, err := approval.Decode(shown); err == nil {
		if err := verifier.Verify(a, "counter", `{}`); !errors.Is(err, approval.ErrMalformed) {
			t.Errorf("the shown approval as an approval: %v", err)
		}
	}

	// What the tool server received: an approval per call, each for its
	// own call.
	calls := srv.received()
	if len(calls) < 5 { // notes, counter, quote, submit, remember
		t.Fatalf("the server received %d calls: %+v", len(calls), calls)
	}
	for _, c := range calls {
		a, err := approval.FromMeta(c.Meta)
		if err != nil {
			t.Fatalf("%s: %v", c.Name, err)
		}
		if err := verifier.Verify(a, c.Name, c.Arguments); err != nil {
			t.Errorf("the approval of %s does not verify at its server: %v", c.Name, err)
		}
		if a.MessageID != obj.MessageID || a.ChannelID != "shop" || a.Message != "count please" {
			t.Errorf("the approval of %s is about another message: %+v", c.Name, a)
		}
		if err := verifier.Verify(a, c.Name, c.Arguments); !errors.Is(err, approval.ErrReplayed) {
			t.Errorf("the approval of %s, again: %v", c.Name, err)
		}
	}
	var counter toolCall
	for _, c := range calls {
		if c.Name == "counter" {
			counter = c
		}
	}
	a, err := approval.FromMeta(counter.Meta)
	if err != nil {
		t.Fatal(err)
	}
	for _, other := range []struct {
		audience, tool, args string
	}{
		{srv.URL, "submit", string(counter.Arguments)},
		{srv.URL, "crash", string(counter.Arguments)},
		{srv.URL, "counter", `{"by":1000}`},
		{"https://bank.example/mcp", "counter", string(counter.Arguments)},
		{"web", "counter", string(counter.Arguments)},
	} {
		if err := a.Check(other.audience, other.tool, other.args); !errors.Is(err, approval.ErrMismatch) {
			t.Errorf("the counter approval for %s %s %s: %v, want ErrMismatch", other.audience, other.tool, other.args, err)
		}
		fresh := approval.NewVerifier(&approval.VerifierOptions{Audience: []string{other.audience}, Trusted: []string{pubkey}, MaxAge: time.Hour})
		if err := fresh.Verify(a, other.tool, other.args); !errors.Is(err, approval.ErrMismatch) {
			t.Errorf("a fresh verifier, the counter approval for %s %s %s: %v, want ErrMismatch", other.audience, other.tool, other.args, err)
		}
	}
	// Rewriting its fields to another call breaks the signature.
	moved := *a
	moved.Tool = "crash"
	if err := moved.Check(srv.URL, "crash", counter.Arguments); !errors.Is(err, approval.ErrSignature) {
		t.Errorf("the counter approval rewritten for crash: %v, want ErrSignature", err)
	}
	if _, err := os.Stat(filepath.Join(dir, "keys", "a.json")); err != nil {
		t.Errorf("the agent's key: %v", err)
	}
}

func readAll(t *testing.T, resp *http.Response) string {
	t.Helper()
	var b strings.Builder
	buf := make([]byte, 32<<10)
	for {
		n, err := resp.Body.Read(buf)
		b.Write(buf[:n])
		if err != nil {
			break
		}
	}
	return b.String()
}

// A call whose `ask` approval a person grants after the tool server's
// freshness window, counted from when the message came in, is accepted by
// a server that verifies approvals: the approval counts from when it was
// signed, as the call was made. The approval presented again is refused,
// and so is it an hour later. Through the daemon: an `ask` call waits for
// `agentd approve`, which reaches only a running daemon.
func TestApprovalGrantedLateVerifies(t *testing.T) {
	t.Parallel()
	const window = time.Second // the server's MaxAge: shorter than the wait for the person
	// The server's clock reads the moment the person granted the call: a
	// little behind agentd's, which signs just after (within MaxSkew).
	var serverNow atomic.Int64
	var verifier *approval.Verifier
	var mu sync.Mutex
	var received []*approval.Approval
	srv := mcpdemo.New(nil)
	srv.AddReceivingMiddleware(func(next mcp.MethodHandler) mcp.MethodHandler {
		return func(ctx context.Context, method string, req mcp.Request) (mcp.Result, error) {
			p, ok := req.GetParams().(*mcp.CallToolParamsRaw)
			if !ok || method != "tools/call" || p.Name != "counter" { // the demo's lifecycle tools pass
				return next(ctx, method, req)
			}
			a, err := approval.FromMeta(p.Meta)
			if err == nil {
				mu.Lock()
				received = append(received, a)
				mu.Unlock()
				err = verifier.Verify(a, p.Name, p.Arguments)
			}
			if err != nil {
				return &mcp.CallToolResult{IsError: true, Content: []mcp.Content{&mcp.TextContent{Text: "refused: " + err.Error()}}}, nil
			}
			return next(ctx, method, req)
		}
	})
	hs := httptest.NewServer(mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return srv }, nil))
	t.Cleanup(hs.Close)
	url := hs.URL + "/mcp"
	clock := func() time.Time { return time.UnixMilli(serverNow.Load()) }
	verifier = approval.NewVerifier(&approval.VerifierOptions{Audience: []string{url}, MaxAge: window, Now: clock})

	addr := fake(t, "match ^count\ncall web__counter {}\n---\nsay counted {{tool_result}}\n")
	agentFile := openaiAgent(addr, "mcp_servers:\n  web:\n    url: "+url+"\n    allow_networks: [127.0.0.1/32]\ntools:\n  ask: [web__counter]\n")
	dir := dataDir(t, map[string]string{"agents/a.yaml": agentFile})
	serve(t, dir)
	deadline := time.Now().Add(20 * time.Second)
	for serverInfo(t, dir, "web").State != "connected" {
		if time.Now().After(deadline) {
			t.Fatalf("the server did not connect: %+v", serverInfo(t, dir, "web"))
		}
		time.Sleep(20 * time.Millisecond)
	}

	sent := background(t, dir, "send", "a", "count please", "--session", "s1", "--json")
	req := waitApproval(t, dir, "a/s1")
	// The message came in before the call asked; the person answers after
	// the server's window has passed since.
	time.Sleep(time.Until(req.CreatedAt.Add(window + 10*time.Millisecond)))
	granted := time.Now()
	serverNow.Store(granted.UnixMilli())
	okRun(t, dir, "approve", req.ID)
	evs, end := turnResult(t, sent)
	if tr := toolResults(evs); len(tr) != 1 || tr[0].IsError || tr[0].Output != "1" {
		t.Errorf("the call granted late, at the server: %+v", tr)
	}
	if end.Status != event.StatusDone || end.Reply != "counted 1" {
		t.Errorf("end %+v", end)
	}

	mu.Lock()
	defer mu.Unlock()
	if len(received) != 1 {
		t.Fatalf("the server received %d approvals", len(received))
	}
	a := received[0]
	if age := granted.Sub(a.CreatedAt); age <= window {
		t.Fatalf("the message came in %s before the grant, not more than the window %s", age, window)
	}
	if err := verifier.Verify(a, "counter", `{}`); !errors.Is(err, approval.ErrReplayed) {
		t.Errorf("the approval again: %v, want ErrReplayed", err)
	}
	later := approval.NewVerifier(&approval.VerifierOptions{Audience: []string{url}, MaxAge: window,
		Now: func() time.Time { return granted.Add(time.Hour) }})
	if err := later.Verify(a, "counter", `{}`); !errors.Is(err, approval.ErrExpired) {
		t.Errorf("the approval an hour later: %v, want ErrExpired", err)
	}
}
