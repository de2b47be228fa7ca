package approval_test

import (
	"bytes"
	"crypto/ed25519"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"agentd/approval"
)

// A tool server checks the approval that comes with a tools/call request.
func Example() {
	// The agent's side: agentd signs the message it acts on.
	agentKey := ed25519.NewKeyFromSeed(bytes.Repeat([]byte{1}, ed25519.SeedSize))
	sent := time.Date(2025, 6, 1, 12, 0, 0, 0, time.UTC)
	a := approval.Sign(agentKey, "book a table for two", sent, "msg-17", "telegram:4242")
	params, _ := json.Marshal(map[string]any{
		"name":  "reserve",
		"_meta": map[string]any{approval.MetaKey: a},
	})

	// The server's side: one Verifier per tool, trusting the agent's key.
	verifier := approval.NewVerifier(&approval.VerifierOptions{
		Trusted: []string{a.Pubkey},
		Now:     func() time.Time { return sent.Add(2 * time.Second) },
	})
	var req struct {
		Meta map[string]any `json:"_meta"`
	}
	if err := json.Unmarshal(params, &req); err != nil {
		fmt.Println(err)
		return
	}
	got, err := approval.FromMeta(req.Meta)
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println("first:", verifier.Verify(got))
	fmt.Println("message:", got.Message)
	err = verifier.Verify(got)
	fmt.Println("again:", err, errors.Is(err, approval.ErrReplayed))
	// Output:
	// first: <nil>
	// message: book a table for two
	// again: approval: replayed: message "msg-17" in channel "telegram:4242" true
}

func ExampleApproval_Payload() {
	a := &approval.Approval{
		Message:   "hi",
		CreatedAt: time.UnixMilli(1700000000123),
		MessageID: "m1",
		ChannelID: "",
	}
	fmt.Printf("%q\n", a.Payload())
	// Output:
	// "agentd-approval-v1\x00\x00\x00\x02hi\x00\x00\x00\r1700000000123\x00\x00\x00\x02m1\x00\x00\x00\x00"
}

func ExampleApproval_Check() {
	key := ed25519.NewKeyFromSeed(bytes.Repeat([]byte{2}, ed25519.SeedSize))
	a := approval.Sign(key, "delete the draft", time.Now(), "m2", "")
	fmt.Println(a.Check())
	a.Message = "delete everything"
	fmt.Println(a.Check())
	// Output:
	// <nil>
	// approval: bad signature
}
