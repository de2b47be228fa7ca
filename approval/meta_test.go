package approval

import (
	"encoding/json"
	"errors"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

func TestFromMeta(t *testing.T) {
	want := sign(t, testKey(1), "deploy ✓", time.Date(2025, 1, 2, 3, 4, 5, 678000000, time.UTC), "m1", "chat:1", "t", `{"a":1}`)
	wire, err := json.Marshal(want)
	if err != nil {
		t.Fatal(err)
	}
	var decoded map[string]any
	if err := json.Unmarshal(wire, &decoded); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name  string
		value any
	}{
		{"decoded object", decoded},
		{"JSON string", string(wire)},
		{"JSON bytes", wire},
		{"raw message", json.RawMessage(wire)},
		{"approval", *want},
		{"approval pointer", want},
		{"map of strings", map[string]any{
			"version": 3, "daemonPubkey": want.Pubkey, "message": want.Message,
			"createdAt": "2025-01-02T03:04:05.678Z", "messageId": "m1", "channelId": "chat:1",
			"audience": "srv", "tool": "t", "argumentsHash": want.ArgumentsHash,
			"signedAt": "2025-01-02T03:04:05.678Z", "signature": want.Signature, "extra": []int{1, 2},
		}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got, err := FromMeta(map[string]any{MetaKey: tc.value, "other": "x"})
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(want, got); diff != "" {
				t.Errorf("FromMeta (-want +got):\n%s", diff)
			}
			if err := got.Check("srv", "t", `{"a":1}`); err != nil {
				t.Errorf("Check: %v", err)
			}
		})
	}
	// The pointer form is copied, not shared.
	got, _ := FromMeta(map[string]any{MetaKey: want})
	got.Message = "changed"
	if want.Message == "changed" {
		t.Error("FromMeta returned the caller's *Approval")
	}
}

func TestFromMetaErrors(t *testing.T) {
	var nilApproval *Approval
	tests := []struct {
		name    string
		meta    map[string]any
		wantErr error
	}{
		{"nil meta", nil, ErrMissing},
		{"no key", map[string]any{"progressToken": 1}, ErrMissing},
		{"null value", map[string]any{MetaKey: nil}, ErrMissing},
		{"nil approval", map[string]any{MetaKey: nilApproval}, ErrMissing},
		{"number", map[string]any{MetaKey: 42.0}, ErrMalformed},
		{"array", map[string]any{MetaKey: []any{1.0, 2.0}}, ErrMalformed},
		{"not JSON", map[string]any{MetaKey: "approved!"}, ErrMalformed},
		{"JSON null text", map[string]any{MetaKey: "null"}, ErrMalformed},
		{"empty string", map[string]any{MetaKey: ""}, ErrMalformed},
		{"truncated JSON", map[string]any{MetaKey: `{"version":1,`}, ErrMalformed},
		{"bad createdAt", map[string]any{MetaKey: map[string]any{"createdAt": "yesterday"}}, ErrMalformed},
		{"numeric createdAt", map[string]any{MetaKey: map[string]any{"createdAt": 1700000000000.0}}, ErrMalformed},
		{"string version", map[string]any{MetaKey: map[string]any{"version": "1"}}, ErrMalformed},
		{"unencodable", map[string]any{MetaKey: func() {}}, ErrMalformed},
		{"channel", map[string]any{MetaKey: make(chan int)}, ErrMalformed},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			a, err := FromMeta(tc.meta)
			if !errors.Is(err, tc.wantErr) {
				t.Errorf("FromMeta = %+v, %v; want %v", a, err, tc.wantErr)
			}
		})
	}
}

// TestFromMetaMCP reads the approval from a tools/call request's params as
// the MCP Go SDK decodes them.
func TestFromMetaMCP(t *testing.T) {
	c := newClock()
	a, err := Sign(testKey(5), Message{Text: "what is the weather?", CreatedAt: c.Now(), ID: "msg-9", ChannelID: "web:1"}, c.Now(),
		"https://weather.example/mcp", "weather", map[string]any{"city": "Lisbon"})
	if err != nil {
		t.Fatal(err)
	}
	wire, err := json.Marshal(map[string]any{
		"name":      "weather",
		"arguments": map[string]any{"city": "Lisbon"},
		"_meta":     map[string]any{MetaKey: a, "progressToken": "p1"},
	})
	if err != nil {
		t.Fatal(err)
	}
	var params mcp.CallToolParamsRaw
	if err := json.Unmarshal(wire, &params); err != nil {
		t.Fatal(err)
	}
	got, err := FromMeta(params.GetMeta())
	if err != nil {
		t.Fatal(err)
	}
	v := NewVerifier(&VerifierOptions{Now: c.Now, Trusted: []string{a.Pubkey}, Audience: []string{"https://weather.example/mcp"}})
	if err := v.Verify(got, params.Name, params.Arguments); err != nil {
		t.Errorf("Verify = %v", err)
	}
}
