package mcpdemo_test

import (
	"context"
	"fmt"
	"log"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"agentd/internal/mcpdemo"
)

// Example connects a client to the demo server in process and calls two of
// its tools.
func Example() {
	ctx := context.Background()
	st, ct := mcp.NewInMemoryTransports()
	ss, err := mcpdemo.New(nil).Connect(ctx, st, nil)
	if err != nil {
		log.Fatal(err)
	}
	defer ss.Wait()
	cs, err := mcp.NewClient(&mcp.Implementation{Name: "example", Version: "1.0.0"}, nil).Connect(ctx, ct, nil)
	if err != nil {
		log.Fatal(err)
	}
	defer cs.Close()

	for _, c := range []*mcp.CallToolParams{
		{Name: "add", Arguments: map[string]any{"a": 2, "b": 40}},
		{Name: "quote", Arguments: map[string]any{"message": "price?", "output": "one apple"}},
	} {
		res, err := cs.CallTool(ctx, c)
		if err != nil {
			log.Fatal(err)
		}
		fmt.Println(res.Content[0].(*mcp.TextContent).Text)
	}
	// Output:
	// 42
	// {"hooks":[{"daemonTool":"sign","daemonArgs":{"payload":"agentd-demo order q-fd275955c4e7 fd275955c4e73ee39235d832f82e711642038c532da72ab28697842aa188d595"},"hookTool":{"toolName":"submit","toolArgs":{"order":"q-fd275955c4e7"}}}]}
}
