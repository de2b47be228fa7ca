package gateway_test

import (
	"context"
	"fmt"
	"log"
	"os"

	"agentd/internal/event"
	"agentd/internal/gateway"
	"agentd/internal/testkit"
)

// ExamplePipe serves the API in process and talks to it with a Client, as
// the CLI does over the daemon's unix socket.
func ExamplePipe() {
	dir, err := os.MkdirTemp("", "agentd-example")
	if err != nil {
		log.Fatal(err)
	}
	defer os.RemoveAll(dir)
	ctx := context.Background()
	// A runtime over SQLite whose agent answers with the echo model.
	defs := testkit.Agents{"assistant": testkit.Agent("assistant")}
	k, err := testkit.Open(ctx, dir, &testkit.Options{Agents: defs})
	if err != nil {
		log.Fatal(err)
	}
	defer k.Close()

	c, stop := gateway.Pipe(gateway.New(&gateway.Options{Runtime: k.Runtime, Sessions: k.Store, Agents: defs, Version: "dev"}))
	defer stop()
	rc, end, err := c.Stream(ctx, "assistant/chat:alice", gateway.MessageRequest{Text: "hello there"}, func(e event.Event) error {
		if e.Kind == event.TextDelta {
			var d event.DeltaData
			e.Decode(&d)
			fmt.Printf("%q\n", d.Text)
		}
		return nil
	})
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println(rc.Session, end.Status, end.Reply)
	// Output:
	// "hello "
	// "there"
	// assistant/chat:alice done hello there
}
