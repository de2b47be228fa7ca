package gateway_test

import (
	"context"
	"fmt"
	"log"
	"os"
	"path/filepath"

	"agentd/internal/agent"
	"agentd/internal/engine"
	"agentd/internal/event"
	"agentd/internal/gateway"
	"agentd/internal/model"
	"agentd/internal/model/echo"
	"agentd/internal/runtime"
	"agentd/internal/store/sqlite"
	"agentd/internal/tool"
)

type echoModels struct{}

func (echoModels) Provider(agent.Model) (model.Provider, error) { return echo.New(), nil }

// ExamplePipe serves the API in process and talks to it with a Client, as
// the CLI does over the daemon's unix socket.
func ExamplePipe() {
	dir, err := os.MkdirTemp("", "agentd-example")
	if err != nil {
		log.Fatal(err)
	}
	defer os.RemoveAll(dir)
	ctx := context.Background()
	st, err := sqlite.Open(ctx, filepath.Join(dir, "agentd.db"), nil)
	if err != nil {
		log.Fatal(err)
	}
	defer st.Close()
	defs := agents{"assistant": {ID: "assistant", Name: "Assistant", Model: agent.Model{Provider: agent.ProviderEcho, Name: "echo"}}}
	bus := event.NewBus()
	rt := runtime.New(&runtime.Options{Store: st, Agents: defs, Bus: bus,
		Engine: engine.New(&engine.Options{Live: bus, Models: echoModels{}, Tools: tool.NewRegistry(nil)})})
	defer rt.Close(ctx)

	c, stop := gateway.Pipe(gateway.New(&gateway.Options{Runtime: rt, Sessions: st, Agents: defs, Version: "dev"}))
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
