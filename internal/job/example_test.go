package job_test

import (
	"context"
	"encoding/json"
	"fmt"
	"os"

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
