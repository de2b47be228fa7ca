package mcpserver_test

import (
	"context"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"agentd/internal/mcpserver"
)

// BenchmarkAsk measures the facade's overhead for one ask over in-memory
// transports, with a backend that answers at once.
func BenchmarkAsk(b *testing.B) {
	ctx := context.Background()
	srv := mcpserver.New(echoBackend{}, nil)
	defer srv.Close()
	if err := srv.Sync(ctx); err != nil {
		b.Fatal(err)
	}
	st, ct := mcp.NewInMemoryTransports()
	served := make(chan error, 1)
	go func() { served <- srv.Serve(ctx, st) }()
	cs, err := mcp.NewClient(&mcp.Implementation{Name: "bench", Version: "1"}, nil).Connect(ctx, ct, nil)
	if err != nil {
		b.Fatal(err)
	}
	params := &mcp.CallToolParams{Name: "ask_assistant", Arguments: map[string]any{"message": "hello"}}
	b.ReportAllocs()
	for b.Loop() {
		res, err := cs.CallTool(ctx, params)
		if err != nil || res.IsError {
			b.Fatal(err, res)
		}
	}
	b.StopTimer()
	cs.Close()
	if err := <-served; err != nil {
		b.Fatal(err)
	}
}
