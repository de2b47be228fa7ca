package runtime_test

import (
	"context"
	"errors"
	"fmt"
	"log"
	"os"
	"path/filepath"

	"agentd/internal/agent"
	"agentd/internal/engine"
	"agentd/internal/event"
	"agentd/internal/model"
	"agentd/internal/model/echo"
	"agentd/internal/runtime"
	"agentd/internal/store"
	"agentd/internal/store/sqlite"
	"agentd/internal/testkit"
	"agentd/internal/tool"
)

// echoModels gives every agent the offline echo model.
type echoModels struct{}

func (echoModels) Provider(agent.Model) (model.Provider, error) { return echo.New(), nil }

// Example wires a runtime from a store, an engine and agent definitions,
// resumes unfinished work, and sends one message.
func Example() {
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

	bus := event.NewBus()
	eng := engine.New(&engine.Options{Live: bus, Models: echoModels{}, Tools: tool.NewRegistry(nil)})
	defs := testkit.Agents{"assistant": {ID: "assistant", Model: agent.Model{Provider: agent.ProviderEcho, Name: "echo"}}}
	rt := runtime.New(&runtime.Options{Store: st, Agents: defs, Engine: eng, Bus: bus})
	defer rt.Close(ctx)
	if _, err := rt.Start(ctx); err != nil {
		log.Fatal(err)
	}

	rc, end, err := rt.Send(ctx, runtime.Input{Session: "assistant/chat:alice", Text: "hello", Source: "example"})
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println(rc.Session, end.Status, end.Reply)
	// Output: assistant/chat:alice done hello
}

// ExampleRuntime_Stop stops an agent's session for good: its running turn
// is cancelled, its queued inputs refused, and the session closed, while
// the Ended hook hears of every turn's end.
func ExampleRuntime_Stop() {
	dir, err := os.MkdirTemp("", "agentd-example")
	if err != nil {
		log.Fatal(err)
	}
	defer os.RemoveAll(dir)
	ctx := context.Background()
	k, err := testkit.Open(ctx, dir, &testkit.Options{Runtime: func(o *runtime.Options) {
		o.Ended = func(s store.Session, it store.InboxItem, end event.TurnEndData) {
			fmt.Println("ended:", s.Address(), end.Status)
		}
	}})
	if err != nil {
		log.Fatal(err)
	}
	defer k.Close()

	if _, _, err := k.Runtime.Send(ctx, runtime.Input{Session: "assistant/task", Text: "work", Source: "example"}); err != nil {
		log.Fatal(err)
	}
	if err := k.Runtime.Stop(ctx, "assistant/task", "its parent was stopped"); err != nil {
		log.Fatal(err)
	}
	_, err = k.Runtime.Submit(ctx, runtime.Input{Session: "assistant/task", Text: "more", Source: "example"})
	fmt.Println(errors.Is(err, runtime.ErrSessionClosed))
	// Output:
	// ended: assistant/task done
	// true
}
