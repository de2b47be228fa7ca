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

// A tool server checks the approval that comes with a tools/call request,
// against the tool and the arguments it received.
func Example() {
	// The agent's side: agentd signs the message it acts on, bound to this
	// call of this server, as it makes the call: here an hour after the
	// message came in, when a person approved the booking.
	agentKey := ed25519.NewKeyFromSeed(bytes.Repeat([]byte{1}, ed25519.SeedSize))
	sent := time.Date(2025, 6, 1, 12, 0, 0, 0, time.UTC)
	called := sent.Add(time.Hour)
	msg := approval.Message{Text: "book a table for two", CreatedAt: sent, ID: "msg-17", ChannelID: "telegram:4242"}
	args := map[string]any{"people": 2, "time": "19:30"}
	a, err := approval.Sign(agentKey, msg, called, "https://tables.example/mcp", "reserve", args)
	if err != nil {
		fmt.Println(err)
		return
	}
	params, _ := json.Marshal(map[string]any{
		"name":      "reserve",
		"arguments": args,
		"_meta":     map[string]any{approval.MetaKey: a},
	})

	// The server's side: it knows its own URL and trusts the agent's key.
	verifier := approval.NewVerifier(&approval.VerifierOptions{
		Audience: []string{"https://tables.example/mcp"},
		Trusted:  []string{a.Pubkey},
		Now:      func() time.Time { return called.Add(2 * time.Second) },
	})
	var req struct {
		Name      string          `json:"name"`
		Arguments json.RawMessage `json:"arguments"`
		Meta      map[string]any  `json:"_meta"`
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
	fmt.Println("first:", verifier.Verify(got, req.Name, req.Arguments))
	fmt.Println("message:", got.Message)
	err = verifier.Verify(got, req.Name, req.Arguments)
	fmt.Println("again:", errors.Is(err, approval.ErrReplayed))
	err = verifier.Verify(got, "cancel_all", req.Arguments)
	fmt.Println("another tool:", err)
	err = verifier.Verify(got, req.Name, `{"people":20,"time":"19:30"}`)
	fmt.Println("other arguments:", err)
	// Output:
	// first: <nil>
	// message: book a table for two
	// again: true
	// another tool: approval: not for this call: it is for the tool "reserve", not "cancel_all"
	// other arguments: approval: not for this call: it is for other arguments
}

func ExampleApproval_Payload() {
	a := &approval.Approval{
		Message:       "hi",
		CreatedAt:     time.UnixMilli(1700000000123),
		MessageID:     "m1",
		ChannelID:     "",
		Audience:      "files",
		Tool:          "read",
		ArgumentsHash: "44136fa3",
		SignedAt:      time.UnixMilli(1700000060456),
	}
	fmt.Printf("%q\n", a.Payload())
	// Output:
	// "agentd-approval-v3\x00\x00\x00\x02hi\x00\x00\x00\r1700000000123\x00\x00\x00\x02m1\x00\x00\x00\x00\x00\x00\x00\x05files\x00\x00\x00\x04read\x00\x00\x00\b44136fa3\x00\x00\x00\r1700000060456"
}

func ExampleApproval_Check() {
	key := ed25519.NewKeyFromSeed(bytes.Repeat([]byte{2}, ed25519.SeedSize))
	m := approval.Message{Text: "delete the draft", CreatedAt: time.Now(), ID: "m2"}
	a, _ := approval.Sign(key, m, time.Now(), "files", "delete", `{"path":"draft.txt"}`)
	fmt.Println(a.Check("files", "delete", `{"path": "draft.txt"}`))
	fmt.Println(a.Check("files", "delete", `{"path": "/"}`))
	a.Tool = "wipe"
	fmt.Println(a.Check("files", "wipe", `{"path": "draft.txt"}`))
	// Output:
	// <nil>
	// approval: not for this call: it is for other arguments
	// approval: bad signature
}

func ExampleHashArguments() {
	// The same arguments, written two ways, hash alike.
	h1, _ := approval.HashArguments(`{"b": [1.0, "x"], "a": null}`)
	h2, _ := approval.HashArguments(map[string]any{"a": nil, "b": []any{1, "x"}})
	c, _ := approval.CanonicalJSON([]byte(`{"b": [1.0, "x"], "a": null}`))
	fmt.Println(h1 == h2, string(c))
	// Output:
	// true {"a":null,"b":[1,"x"]}
}
