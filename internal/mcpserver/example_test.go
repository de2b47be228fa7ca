package mcpserver_test

import (
	"context"
	"fmt"
	"io"
	"log"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"agentd/internal/event"
	"agentd/internal/mcpserver"
)

// echoBackend has one agent, which answers by repeating the message.
type echoBackend struct{}

func (echoBackend) Agents(context.Context) ([]mcpserver.Agent, error) {
	return []mcpserver.Agent{{ID: "assistant", Name: "Assistant", Description: "A helpful assistant."}}, nil
}

func (echoBackend) Ask(_ context.Context, agentID, key, text string) (string, string, error) {
	return fmt.Sprintf("%s/%s: %s", agentID, key, text), event.StatusDone, nil
}

func (echoBackend) Sessions(context.Context, string, int) ([]mcpserver.Session, error) {
	return nil, nil
}

func (echoBackend) Events(context.Context, string, int64, int) ([]event.Event, error) {
	return nil, nil
}

// Example serves agentd's agents to an MCP client over a pair of pipes, as
// `agentd mcp` does over its stdin and stdout, and asks the assistant.
func Example() {
	ctx := context.Background()
	srv := mcpserver.New(echoBackend{}, &mcpserver.Options{Version: "1.0.0"})
	defer srv.Close()
	if err := srv.Sync(ctx); err != nil {
		log.Fatal(err)
	}

	clientIn, serverOut := io.Pipe()
	serverIn, clientOut := io.Pipe()
	served := make(chan error, 1)
	go func() { served <- srv.ServeStdio(ctx, serverIn, serverOut) }()

	client := mcp.NewClient(&mcp.Implementation{Name: "editor", Version: "1.0.0"}, nil)
	cs, err := client.Connect(ctx, &mcp.IOTransport{Reader: clientIn, Writer: clientOut}, nil)
	if err != nil {
		log.Fatal(err)
	}
	for tool, err := range cs.Tools(ctx, nil) {
		if err != nil {
			log.Fatal(err)
		}
		fmt.Println(tool.Name)
	}
	res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "ask_assistant", Arguments: map[string]any{"message": "hello"}})
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println(res.Content[0].(*mcp.TextContent).Text)

	cs.Close()
	if err := <-served; err != nil {
		log.Fatal(err)
	}
	// Output:
	// ask_assistant
	// list_agents
	// list_sessions
	// read_session_log
	// assistant/mcp: hello
}
