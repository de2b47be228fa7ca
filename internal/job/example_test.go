package job_test

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"time"

	"agentd/internal/job"
	"agentd/internal/store"
	"agentd/internal/testkit"
)

func ExampleRunner_Run() {
	ctx := context.Background()
	dir, _ := os.MkdirTemp("", "job-example")
	defer os.RemoveAll(dir)
	k, err := testkit.Open(ctx, dir, nil) // the agent "assistant", echoing its input
	if err != nil {
		fmt.Println(err)
		return
	}
	defer k.Close()
	r := job.New(k.Runtime, k.Store, testkit.Agents{"assistant": testkit.Agent("assistant")}, nil)
	defer r.Close()
	r.Activate(ctx, &store.Extension{Type: "job", Name: "brief",
		Spec: json.RawMessage(`{"agent":"assistant","prompt":"Brief me on {{payload.topic}}."}`)})

	res, err := r.Run(ctx, "brief", job.Fire{Payload: map[string]string{"topic": "Go"}}, true)
	fmt.Println(res.Status, res.Output, err)
	// Output: done Brief me on Go. <nil>
}

// A webhook request's signature: what a sender puts in
// X-Agentd-Signature, and how agentd checks it.
func ExampleSign() {
	body := []byte(`{"ref":"refs/heads/main"}`)
	sig := job.Sign([]byte("s3cret"), "1700000000", body)
	fmt.Println(sig)
	h := job.Hook{Timestamp: "1700000000", Signature: sig, Body: body, Now: time.Unix(1700000060, 0)}
	fmt.Println(h.Verify([]byte("s3cret")))
	fmt.Println(h.Verify([]byte("guess")))
	// Output:
	// sha256=e13b6e4e28007a6a1779f08756dbbac35d1df756e7a82493951aa85127969ed0
	// <nil>
	// bad webhook signature: the signature does not match
}
