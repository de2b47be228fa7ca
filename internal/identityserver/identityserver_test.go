package identityserver_test

import (
	"context"
	"crypto/ed25519"
	"encoding/json"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"agentd/approval"
	"agentd/internal/identityserver"
	"agentd/internal/store/sqlite"
)

const audience = "http://127.0.0.1:7070/mcp"

// agentKey is one agent's key pair.
type agentKey struct {
	priv ed25519.PrivateKey
	pub  string
}

func newKey(t *testing.T, seed byte) agentKey {
	t.Helper()
	priv := ed25519.NewKeyFromSeed([]byte(strings.Repeat(string(rune('a'+seed)), 32)))
	return agentKey{priv: priv, pub: approval.EncodePublicKey(priv.Public().(ed25519.PublicKey))}
}

// harness is a server on a fresh store with one client session.
type harness struct {
	t  *testing.T
	cs *mcp.ClientSession
}

func newHarness(t *testing.T) *harness {
	t.Helper()
	ctx := t.Context()
	st, err := sqlite.Open(ctx, filepath.Join(t.TempDir(), "id.db"), nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = st.Close() })
	srv, err := identityserver.New(st, &identityserver.Options{Audience: []string{audience}})
	if err != nil {
		t.Fatal(err)
	}
	ct, stt := mcp.NewInMemoryTransports()
	ss, err := srv.MCP().Connect(ctx, stt, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = ss.Close() })
	cs, err := mcp.NewClient(&mcp.Implementation{Name: "test"}, nil).Connect(ctx, ct, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = cs.Close() })
	return &harness{t: t, cs: cs}
}

// call calls tool with args, signed by k for aud (no approval when k is
// nil), and returns the answer's text and whether it is a tool error.
func (h *harness) call(k *agentKey, aud, tool, args string) (string, bool) {
	h.t.Helper()
	p := &mcp.CallToolParams{Name: tool, Arguments: json.RawMessage(args)}
	if k != nil {
		now := time.Now()
		a, err := approval.Sign(k.priv, approval.Message{Text: "t", CreatedAt: now, ID: "m-" + tool + now.String()}, now, aud, tool, json.RawMessage(args))
		if err != nil {
			h.t.Fatal(err)
		}
		p.Meta = mcp.Meta{approval.MetaKey: a}
	}
	res, err := h.cs.CallTool(context.Background(), p)
	if err != nil {
		h.t.Fatalf("CallTool(%s): %v", tool, err)
	}
	return res.Content[0].(*mcp.TextContent).Text, res.IsError
}

func (h *harness) ok(k *agentKey, tool, args string) string {
	h.t.Helper()
	out, isErr := h.call(k, audience, tool, args)
	if isErr {
		h.t.Fatalf("%s(%s) refused: %s", tool, args, out)
	}
	return out
}

func character(k agentKey, name string) string {
	return `{"character":{"name":"` + name + `","pubkey":"` + k.pub + `","identity_prompt":"I help.","model":{"provider":"openai","name":"gpt","base_url":"https://api.example.com/v1"}}}`
}

// TestRegisterAndGet: a signed registration is stored and read back by
// pubkey and by name; a second one by the same key replaces it.
func TestRegisterAndGet(t *testing.T) {
	h := newHarness(t)
	a, b := newKey(t, 0), newKey(t, 1)
	h.ok(&a, identityserver.ToolRegister, character(a, "assistant"))
	h.ok(&b, identityserver.ToolRegister, character(b, "assistant"))
	h.ok(&a, identityserver.ToolRegister, character(a, "helper"))
	var got struct {
		Characters []struct {
			Character identityserver.Character `json:"character"`
		} `json:"characters"`
	}
	names := func(out string) []string {
		t.Helper()
		got.Characters = nil
		if err := json.Unmarshal([]byte(out), &got); err != nil {
			t.Fatalf("answer %s: %v", out, err)
		}
		var ns []string
		for _, c := range got.Characters {
			ns = append(ns, c.Character.Name+"/"+c.Character.Pubkey[:4])
		}
		return ns
	}
	if d := cmp.Diff([]string{"helper/" + a.pub[:4]}, names(h.ok(nil, identityserver.ToolGetCharacter, `{"pubkey":"`+a.pub+`"}`))); d != "" {
		t.Errorf("get_character(pubkey a) (-want +got):\n%s", d)
	}
	if got.Characters[0].Character.Model.BaseURL != "https://api.example.com/v1" || got.Characters[0].Character.IdentityPrompt != "I help." {
		t.Errorf("character = %+v; want the file as registered", got.Characters[0].Character)
	}
	if d := cmp.Diff([]string{"assistant/" + b.pub[:4]}, names(h.ok(nil, identityserver.ToolGetCharacter, `{"name":"assistant"}`))); d != "" {
		t.Errorf("get_character(name) (-want +got):\n%s", d)
	}
	if n := names(h.ok(nil, identityserver.ToolGetCharacter, `{"pubkey":"nobody"}`)); len(n) != 0 {
		t.Errorf("get_character(unknown) = %v; want none", n)
	}
}

// TestRefusals: a call without an approval, with one by another key, for
// another server, for another tool, with a secret in the file or a
// credential in the base URL, is a tool error and changes nothing.
func TestRefusals(t *testing.T) {
	h := newHarness(t)
	a, b := newKey(t, 0), newKey(t, 1)
	h.ok(&a, identityserver.ToolRegister, character(a, "assistant"))
	signedAs := func(k *agentKey, aud, tool, args string) func() (string, bool) {
		return func() (string, bool) { return h.call(k, aud, tool, args) }
	}
	lifecycle := `{"lifecycle":{"messageId":"1","daemonPubkey":"` + a.pub + `"}}`
	for name, try := range map[string]func() (string, bool){
		"register unsigned":             signedAs(nil, audience, identityserver.ToolRegister, character(a, "evil")),
		"register by another key":       signedAs(&b, audience, identityserver.ToolRegister, character(a, "evil")),
		"register for another server":   signedAs(&a, "http://elsewhere/mcp", identityserver.ToolRegister, character(a, "evil")),
		"register with an api key":      signedAs(&a, audience, identityserver.ToolRegister, `{"character":{"name":"evil","pubkey":"`+a.pub+`","api_key":"sk-1"}}`),
		"register with base_url creds":  signedAs(&a, audience, identityserver.ToolRegister, `{"character":{"name":"evil","pubkey":"`+a.pub+`","model":{"base_url":"https://u:p@x/v1"}}}`),
		"log unsigned":                  signedAs(nil, audience, identityserver.ToolLog, lifecycle),
		"log another key's lifecycle":   signedAs(&b, audience, identityserver.ToolLog, lifecycle),
		"log signed for another tool":   func() (string, bool) { return h.callWrongTool(&a, lifecycle) },
		"log a lifecycle with a sig":    signedAs(&a, audience, identityserver.ToolLog, `{"lifecycle":{"messageId":"2","approval":{"signature":"x"}}}`),
		"log without a messageId":       signedAs(&a, audience, identityserver.ToolLog, `{"lifecycle":{"message":"hi"}}`),
		"logs of another key":           signedAs(&b, audience, identityserver.ToolLogs, `{"pubkey":"`+a.pub+`"}`),
		"logs unsigned":                 signedAs(nil, audience, identityserver.ToolLogs, `{"pubkey":"`+a.pub+`"}`),
		"get_character with both":       signedAs(nil, audience, identityserver.ToolGetCharacter, `{"pubkey":"x","name":"y"}`),
		"get_character with an unknown": signedAs(nil, audience, identityserver.ToolGetCharacter, `{"pubkey":"x","extra":1}`),
	} {
		if out, isErr := try(); !isErr {
			t.Errorf("%s: accepted: %s", name, out)
		}
	}
	out := h.ok(nil, identityserver.ToolGetCharacter, `{"pubkey":"`+a.pub+`"}`)
	if !strings.Contains(out, `"name":"assistant"`) || strings.Contains(out, "evil") {
		t.Errorf("character after the refusals = %s; want it unchanged", out)
	}
	if out := h.ok(&a, identityserver.ToolLogs, `{"pubkey":"`+a.pub+`"}`); !strings.Contains(out, `"logs":[]`) {
		t.Errorf("logs after the refusals = %s; want none", out)
	}
}

// callWrongTool sends a log call whose approval was signed for logs.
func (h *harness) callWrongTool(k *agentKey, args string) (string, bool) {
	now := time.Now()
	a, err := approval.Sign(k.priv, approval.Message{Text: "t", CreatedAt: now, ID: "w"}, now, audience, identityserver.ToolLogs, json.RawMessage(args))
	if err != nil {
		h.t.Fatal(err)
	}
	res, err := h.cs.CallTool(context.Background(), &mcp.CallToolParams{Name: identityserver.ToolLog, Arguments: json.RawMessage(args), Meta: mcp.Meta{approval.MetaKey: a}})
	if err != nil {
		h.t.Fatal(err)
	}
	return res.Content[0].(*mcp.TextContent).Text, res.IsError
}

// TestLogIdempotentInOrder: logs are numbered in arrival order per key; a
// resend of a message id (even the very same signed call) stores nothing
// new and answers with its first seq; logs pages with after and limit.
func TestLogIdempotentInOrder(t *testing.T) {
	h := newHarness(t)
	a, b := newKey(t, 0), newKey(t, 1)
	logOf := func(k agentKey, id string) string {
		return `{"lifecycle":{"messageId":"` + id + `","daemonPubkey":"` + k.pub + `","message":"m` + id + `"}}`
	}
	for _, id := range []string{"10", "11", "12"} {
		h.ok(&a, identityserver.ToolLog, logOf(a, id))
	}
	h.ok(&b, identityserver.ToolLog, logOf(b, "10"))
	if out := h.ok(&a, identityserver.ToolLog, logOf(a, "11")); out != `{"seq":2,"messageId":"11","created":false}` {
		t.Errorf("resent log = %s; want seq 2, not created", out)
	}
	// The very same signed call again: a replay of an idempotent call.
	now := time.Now()
	args := logOf(a, "12")
	ap, _ := approval.Sign(a.priv, approval.Message{Text: "t", CreatedAt: now, ID: "same"}, now, audience, identityserver.ToolLog, json.RawMessage(args))
	for range 2 {
		res, err := h.cs.CallTool(t.Context(), &mcp.CallToolParams{Name: identityserver.ToolLog, Arguments: json.RawMessage(args), Meta: mcp.Meta{approval.MetaKey: ap}})
		if err != nil || res.IsError {
			t.Fatalf("replayed log: %v %+v", err, res)
		}
	}
	var got struct {
		Logs []struct {
			Seq       int64           `json:"seq"`
			MessageID string          `json:"messageId"`
			Lifecycle json.RawMessage `json:"lifecycle"`
		} `json:"logs"`
		Next int64 `json:"next"`
	}
	if err := json.Unmarshal([]byte(h.ok(&a, identityserver.ToolLogs, `{"pubkey":"`+a.pub+`","after":1,"limit":5}`)), &got); err != nil {
		t.Fatal(err)
	}
	var ids []string
	for _, l := range got.Logs {
		ids = append(ids, l.MessageID)
	}
	if !cmp.Equal(ids, []string{"11", "12"}) || got.Next != 3 || got.Logs[0].Seq != 2 || !strings.Contains(string(got.Logs[0].Lifecycle), `"message":"m11"`) {
		t.Errorf("logs after 1 = %+v; want 11 (seq 2), 12, next 3", got)
	}
}
