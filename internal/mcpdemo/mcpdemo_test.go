package mcpdemo_test

import (
	"context"
	"crypto/ed25519"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/mr-tron/base58"

	"agentd/approval"
	"agentd/internal/mcpdemo"
)

// childEnv makes the test binary serve the demo (with crash) over stdio.
const childEnv = "AGENTD_MCPDEMO_CHILD"

func TestMain(m *testing.M) {
	if os.Getenv(childEnv) == "1" {
		err := mcpdemo.New(&mcpdemo.Options{AllowCrash: true}).Run(context.Background(), &mcp.StdioTransport{})
		if err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(1)
		}
		os.Exit(0)
	}
	os.Exit(m.Run())
}

func connect(t *testing.T, o *mcpdemo.Options, co *mcp.ClientOptions) *mcp.ClientSession {
	t.Helper()
	st, ct := mcp.NewInMemoryTransports()
	ss, err := mcpdemo.New(o).Connect(t.Context(), st, nil)
	if err != nil {
		t.Fatal(err)
	}
	cs, err := mcp.NewClient(&mcp.Implementation{Name: "test", Version: "1"}, co).Connect(t.Context(), ct, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		cs.Close()
		ss.Wait()
	})
	return cs
}

func callMeta(t *testing.T, cs *mcp.ClientSession, name string, args any, meta mcp.Meta) (string, bool) {
	t.Helper()
	res, err := cs.CallTool(t.Context(), &mcp.CallToolParams{Name: name, Arguments: args, Meta: meta})
	if err != nil {
		t.Fatalf("call %s: %v", name, err)
	}
	var b strings.Builder
	for _, c := range res.Content {
		if tc, ok := c.(*mcp.TextContent); ok {
			b.WriteString(tc.Text)
		}
	}
	return b.String(), res.IsError
}

func call(t *testing.T, cs *mcp.ClientSession, name string, args any) (string, bool) {
	t.Helper()
	return callMeta(t, cs, name, args, nil)
}

// mustCall calls a tool that must succeed and returns its text.
func mustCall(t *testing.T, cs *mcp.ClientSession, name string, args any) string {
	t.Helper()
	text, isErr := call(t, cs, name, args)
	if isErr {
		t.Fatalf("%s %v: tool error %q", name, args, text)
	}
	return text
}

func newKey(t *testing.T) (ed25519.PublicKey, ed25519.PrivateKey, string) {
	t.Helper()
	pub, priv, err := ed25519.GenerateKey(nil)
	if err != nil {
		t.Fatal(err)
	}
	return pub, priv, base58.Encode(pub)
}

func sign(priv ed25519.PrivateKey, payload string) string {
	return base58.Encode(ed25519.Sign(priv, approval.HookBytes(payload)))
}

func TestToolList(t *testing.T) {
	type info struct {
		Kind       string
		ReadOnly   bool
		Idempotent bool
		Annotated  bool
	}
	list := func(o *mcpdemo.Options) map[string]info {
		cs := connect(t, o, nil)
		res, err := cs.ListTools(t.Context(), nil)
		if err != nil {
			t.Fatal(err)
		}
		got := map[string]info{}
		for _, tool := range res.Tools {
			if tool.InputSchema == nil {
				t.Errorf("%s has no input schema", tool.Name)
			}
			kind, _ := tool.Meta[mcpdemo.KindMeta].(string)
			i := info{Kind: kind, Annotated: tool.Annotations != nil}
			if a := tool.Annotations; a != nil {
				i.ReadOnly, i.Idempotent = a.ReadOnlyHint, a.IdempotentHint
			}
			got[tool.Name] = i
		}
		return got
	}
	want := map[string]info{
		"echo":         {"model", true, false, true},
		"add":          {"model", true, true, true},
		"counter":      {"model", false, false, false},
		"notes":        {"context", true, false, true},
		"remember":     {"postprocess", false, false, false},
		"quote":        {"action", false, false, false},
		"submit":       {"server", false, false, false},
		"whoami":       {"model", true, false, true},
		"fill":         {"model", true, true, true},
		"change_tools": {"model", false, false, false},
	}
	if d := cmp.Diff(want, list(nil)); d != "" {
		t.Errorf("tools (-want +got):\n%s", d)
	}
	want["crash"] = info{"model", false, false, false}
	if d := cmp.Diff(want, list(&mcpdemo.Options{AllowCrash: true})); d != "" {
		t.Errorf("tools with AllowCrash (-want +got):\n%s", d)
	}
}

func TestModelTools(t *testing.T) {
	cs := connect(t, nil, nil)
	tests := []struct {
		tool    string
		args    map[string]any
		want    string
		isError bool
	}{
		{"echo", map[string]any{"text": "hello"}, "hello", false},
		{"echo", map[string]any{"text": ""}, "", false},
		{"echo", map[string]any{}, "text", true},
		{"echo", map[string]any{"text": 1}, "text", true},
		{"echo", map[string]any{"text": "x", "other": 1}, "other", true},
		{"add", map[string]any{"a": 1.5, "b": 2}, "3.5", false},
		{"add", map[string]any{"a": -1, "b": 1}, "0", false},
		{"add", map[string]any{"a": "1", "b": 2}, "a", true},
		{"add", map[string]any{"a": 1}, "b", true},
		{"add", map[string]any{"a": 1e308, "b": 1e308}, "out of range", true},
		{"counter", map[string]any{"by": 2}, "by", true},
		{"fill", map[string]any{"bytes": 0}, "", false},
		{"fill", map[string]any{"bytes": 10}, "0123456789", false},
		{"fill", map[string]any{"bytes": 70}, "0123456789012345678901234567890123456789012345678901234567890 0\n012345", false},
		{"fill", map[string]any{"bytes": mcpdemo.MaxFill + 1}, "bytes must be", true},
	}
	for _, tt := range tests {
		text, isErr := call(t, cs, tt.tool, tt.args)
		if isErr != tt.isError || (!isErr && text != tt.want) || (isErr && !strings.Contains(text, tt.want)) {
			t.Errorf("%s %v = %q (isError %v), want %q (isError %v)", tt.tool, tt.args, text, isErr, tt.want, tt.isError)
		}
	}
	for want := 1; want <= 3; want++ {
		if got := mustCall(t, cs, "counter", nil); got != fmt.Sprint(want) {
			t.Errorf("counter call %d = %q", want, got)
		}
	}
	// Another server has its own counter.
	if got := mustCall(t, connect(t, nil, nil), "counter", map[string]any{}); got != "1" {
		t.Errorf("counter of a new server = %q", got)
	}
}

func TestContextAndPostprocess(t *testing.T) {
	cs := connect(t, nil, nil)
	notes := func(args map[string]any) mcpdemo.ContextResult {
		t.Helper()
		var r mcpdemo.ContextResult
		if err := json.Unmarshal([]byte(mustCall(t, cs, "notes", args)), &r); err != nil {
			t.Fatal(err)
		}
		return r
	}
	quoteHint := []mcpdemo.ToolHint{{Name: "quote", Description: "Turns the reply into an order that agentd signs and submits."}}
	lifecycle := map[string]any{
		"message": "hi", "messageId": "m1", "channelId": "c1", "createdAt": "2025-03-01T12:00:00.000Z",
		"daemonPubkey": "11111111111111111111111111111111", "daemonName": "alpha",
		"approval": map[string]any{"version": 1}, "context": []any{}, "extra": 7,
	}
	if d := cmp.Diff(mcpdemo.ContextResult{Context: []string{mcpdemo.ConnectedLine}, Tools: quoteHint}, notes(lifecycle)); d != "" {
		t.Errorf("notes before remember (-want +got):\n%s", d)
	}

	for _, ex := range [][2]string{{"hi", "hello there"}, {"how are you?", "fine"}} {
		if got := mustCall(t, cs, "remember", map[string]any{"message": ex[0], "output": ex[1], "channelId": "c1", "messageId": "m", "approval": map[string]any{}}); got != "remembered" {
			t.Errorf("remember = %q", got)
		}
	}
	mustCall(t, cs, "remember", map[string]any{"message": "elsewhere", "output": "yes", "channelId": "c2"})

	want := mcpdemo.ContextResult{Context: []string{
		mcpdemo.ConnectedLine,
		"user said hi / agent answered hello there",
		"user said how are you? / agent answered fine",
	}, Tools: quoteHint}
	if d := cmp.Diff(want, notes(lifecycle)); d != "" {
		t.Errorf("notes after remember (-want +got):\n%s", d)
	}
	if d := cmp.Diff(want, notes(lifecycle)); d != "" {
		t.Errorf("notes again (-want +got):\n%s", d)
	}
	if got := notes(map[string]any{"channelId": "c2"}); len(got.Context) != 2 || got.Context[1] != "user said elsewhere / agent answered yes" {
		t.Errorf("notes of c2 = %+v", got)
	}

	for _, tt := range []struct {
		tool string
		args map[string]any
	}{
		{"notes", map[string]any{"channelId": 5}},
		{"remember", map[string]any{"message": "hi"}},
		{"remember", map[string]any{"output": "hi"}},
		{"remember", map[string]any{"message": "hi", "output": 3}},
	} {
		if text, isErr := call(t, cs, tt.tool, tt.args); !isErr {
			t.Errorf("%s %v = %q, want an error", tt.tool, tt.args, text)
		}
	}
}

// TestHookFlow plays agentd's part: quote asks for a signature, the hook
// calls submit with it.
func TestHookFlow(t *testing.T) {
	_, priv, pubkey := newKey(t)
	cs := connect(t, &mcpdemo.Options{Trusted: []string{pubkey}}, nil)

	quote := func(output string) mcpdemo.ActionResult {
		t.Helper()
		var r mcpdemo.ActionResult
		text := mustCall(t, cs, "quote", map[string]any{"message": "buy", "output": output, "channelId": "c", "approval": map[string]any{}})
		if err := json.Unmarshal([]byte(text), &r); err != nil {
			t.Fatalf("quote: %v: %s", err, text)
		}
		return r
	}
	r := quote("buy 2 apples")
	order, payload := mcpdemo.OrderFor("buy 2 apples")
	want := mcpdemo.ActionResult{Hooks: []mcpdemo.Hook{{
		DaemonTool: "sign",
		DaemonArgs: map[string]any{"payload": payload},
		HookTool:   mcpdemo.HookTool{ToolName: "submit", ToolArgs: map[string]any{"order": order}},
	}}}
	if d := cmp.Diff(want, r); d != "" {
		t.Fatalf("quote (-want +got):\n%s", d)
	}
	if d := cmp.Diff(r, quote("buy 2 apples")); d != "" {
		t.Errorf("quote is not deterministic:\n%s", d)
	}
	if other, _ := mcpdemo.OrderFor("buy 3 apples"); other == order {
		t.Errorf("two outputs give the same order %s", order)
	}

	// The hook: sign daemonArgs.payload, merge into toolArgs, call back.
	h := r.Hooks[0]
	args := map[string]any{}
	for k, v := range h.HookTool.ToolArgs {
		args[k] = v
	}
	p := h.DaemonArgs["payload"].(string)
	args["payload"], args["signature"], args["daemonPubkey"] = p, sign(priv, p), pubkey
	if got := mustCall(t, cs, h.HookTool.ToolName, args); got != "accepted "+order {
		t.Errorf("submit = %q", got)
	}

	if text, isErr := call(t, cs, "quote", map[string]any{"output": ""}); !isErr || !strings.Contains(text, "nothing to quote") {
		t.Errorf("quote of an empty output = %q (isError %v)", text, isErr)
	}
	if text, isErr := call(t, cs, "quote", map[string]any{"message": "m"}); !isErr || !strings.Contains(text, "output") {
		t.Errorf("quote without output = %q (isError %v)", text, isErr)
	}
}

func TestSubmit(t *testing.T) {
	_, priv, pubkey := newKey(t)
	_, otherPriv, otherPub := newKey(t)
	order, payload := mcpdemo.OrderFor("sell 1 pear")
	otherOrder, otherPayload := mcpdemo.OrderFor("sell 9 pears")

	valid := func() map[string]any {
		return map[string]any{"order": order, "payload": payload, "signature": sign(priv, payload), "daemonPubkey": pubkey}
	}
	with := func(k string, v any) map[string]any {
		m := valid()
		if v == nil {
			delete(m, k)
		} else {
			m[k] = v
		}
		return m
	}
	tests := []struct {
		name    string
		trusted []string
		args    map[string]any
		want    string
		isError bool
	}{
		{"valid", nil, valid(), "accepted " + order, false},
		{"valid trusted", []string{otherPub, pubkey}, valid(), "accepted " + order, false},
		{"extra hook args", nil, with("channelId", "c"), "accepted " + order, false},
		{"tampered payload", nil, with("payload", payload+"0"), "bad signature", true},
		{"other key's signature", nil, with("signature", sign(otherPriv, payload)), "bad signature", true},
		{"signature of another payload", nil, with("signature", sign(priv, otherPayload)), "bad signature", true},
		{"signature not base58", nil, with("signature", "0OIl"), "bad signature", true},
		{"short signature", nil, with("signature", base58.Encode([]byte("short"))), "bad signature", true},
		{"pubkey not base58", nil, with("daemonPubkey", "0OIl"), "daemonPubkey", true},
		{"pubkey wrong length", nil, with("daemonPubkey", base58.Encode([]byte("short"))), "daemonPubkey", true},
		{"untrusted key", []string{otherPub}, valid(), "untrusted key " + pubkey, true},
		{"only invalid trusted keys", []string{"not-a-key"}, valid(), "untrusted key", true},
		{"payload for another order", nil, map[string]any{"order": order, "payload": otherPayload, "signature": sign(priv, otherPayload), "daemonPubkey": pubkey}, "not for order " + order, true},
		{"order of another payload", nil, with("order", otherOrder), "not for order " + otherOrder, true},
		{"missing signature", nil, with("signature", nil), "signature", true},
		{"missing order", nil, with("order", nil), "order", true},
		{"number order", nil, with("order", 5), "order", true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			cs := connect(t, &mcpdemo.Options{Trusted: tt.trusted}, nil)
			text, isErr := call(t, cs, "submit", tt.args)
			if isErr != tt.isError || !strings.Contains(text, tt.want) {
				t.Errorf("submit = %q (isError %v), want %q (isError %v)", text, isErr, tt.want, tt.isError)
			}
		})
	}
}

func TestWhoami(t *testing.T) {
	_, priv, pubkey := newKey(t)
	_, _, otherPub := newKey(t)
	m := approval.Message{Text: "who am I?", CreatedAt: time.Now(), ID: "m-42", ChannelID: "c1"}
	sign := func(audience, tool string) *approval.Approval {
		a, err := approval.Sign(priv, m, time.Now(), audience, tool, map[string]any{})
		if err != nil {
			t.Fatal(err)
		}
		return a
	}
	signed := sign("demo", "whoami")
	tampered := *signed
	tampered.Message = "something else"

	tests := []struct {
		name     string
		trusted  []string
		audience []string
		meta     mcp.Meta
		want     string
		isError  bool
	}{
		{"valid", nil, nil, mcp.Meta{approval.MetaKey: signed}, pubkey + " m-42 verified", false},
		{"valid trusted", []string{pubkey}, nil, mcp.Meta{approval.MetaKey: signed}, pubkey + " m-42 verified", false},
		{"named otherwise", nil, []string{"tools", "https://demo.example/mcp"}, mcp.Meta{approval.MetaKey: sign("https://demo.example/mcp", "whoami")}, "verified", false},
		{"no meta", nil, nil, nil, "missing", true},
		{"other meta", nil, nil, mcp.Meta{"progressToken": "x"}, "missing", true},
		{"tampered", nil, nil, mcp.Meta{approval.MetaKey: &tampered}, "bad signature", true},
		{"not an object", nil, nil, mcp.Meta{approval.MetaKey: 42}, "malformed", true},
		{"untrusted", []string{otherPub}, nil, mcp.Meta{approval.MetaKey: signed}, "untrusted", true},
		{"for another server", nil, nil, mcp.Meta{approval.MetaKey: sign("evil", "whoami")}, "not for this call", true},
		{"for another tool", nil, nil, mcp.Meta{approval.MetaKey: sign("demo", "submit")}, "not for this call", true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			cs := connect(t, &mcpdemo.Options{Trusted: tt.trusted, Audience: tt.audience}, nil)
			text, isErr := callMeta(t, cs, "whoami", map[string]any{}, tt.meta)
			if isErr != tt.isError || !strings.Contains(text, tt.want) {
				t.Errorf("whoami = %q (isError %v), want %q (isError %v)", text, isErr, tt.want, tt.isError)
			}
		})
	}
}

func TestChangeTools(t *testing.T) {
	changed := make(chan struct{}, 4)
	cs := connect(t, nil, &mcp.ClientOptions{
		ToolListChangedHandler: func(context.Context, *mcp.ToolListChangedRequest) { changed <- struct{}{} },
	})
	if _, err := cs.CallTool(t.Context(), &mcp.CallToolParams{Name: "late", Arguments: map[string]any{"text": "x"}}); err == nil {
		t.Error("late answered before change_tools")
	}
	if got := mustCall(t, cs, "change_tools", nil); got != "added late" {
		t.Errorf("change_tools = %q", got)
	}
	select {
	case <-changed:
	case <-time.After(30 * time.Second):
		t.Fatal("no tools/list_changed")
	}
	res, err := cs.ListTools(t.Context(), nil)
	if err != nil {
		t.Fatal(err)
	}
	if !slices.ContainsFunc(res.Tools, func(tool *mcp.Tool) bool { return tool.Name == "late" && tool.Meta[mcpdemo.KindMeta] == "model" }) {
		t.Error("late is not listed after change_tools")
	}
	if got := mustCall(t, cs, "late", map[string]any{"text": "x"}); got != "x" {
		t.Errorf("late = %q", got)
	}
}

// TestCrash runs the demo in a child process and checks that crash ends it
// with CrashStatus.
func TestCrash(t *testing.T) {
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(exe)
	cmd.Env = append(os.Environ(), childEnv+"=1")
	cs, err := mcp.NewClient(&mcp.Implementation{Name: "test", Version: "1"}, nil).Connect(t.Context(), &mcp.CommandTransport{Command: cmd}, nil)
	if err != nil {
		t.Fatal(err)
	}
	if got := mustCall(t, cs, "echo", map[string]any{"text": "alive"}); got != "alive" {
		t.Errorf("echo = %q", got)
	}
	if _, err := cs.CallTool(t.Context(), &mcp.CallToolParams{Name: "crash", Arguments: map[string]any{}}); err == nil {
		t.Error("crash answered")
	}
	cs.Close() // waits for the process
	if cmd.ProcessState == nil {
		t.Fatal("the process was not waited for")
	}
	if code := cmd.ProcessState.ExitCode(); code != mcpdemo.CrashStatus {
		t.Errorf("exit status %d, want %d", code, mcpdemo.CrashStatus)
	}
}
