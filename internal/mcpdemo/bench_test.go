package mcpdemo_test

import (
	"context"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"agentd/internal/mcpdemo"
)

// BenchmarkCallEcho measures one tool call round trip to the demo server
// over in-memory transports, for each protocol generation the SDK speaks:
// the floor for agentd's MCP tool calls.
func BenchmarkCallEcho(b *testing.B) {
	for _, version := range []string{"2025-11-25", "2026-07-28"} {
		b.Run(version, func(b *testing.B) {
			ctx := context.Background()
			st, ct := mcp.NewInMemoryTransports()
			ss, err := mcpdemo.New(nil).Connect(ctx, st, nil)
			if err != nil {
				b.Fatal(err)
			}
			defer ss.Wait()
			cs, err := mcp.NewClient(&mcp.Implementation{Name: "bench", Version: "1"}, nil).
				Connect(ctx, ct, &mcp.ClientSessionOptions{ProtocolVersion: version})
			if err != nil {
				b.Fatal(err)
			}
			defer cs.Close()
			params := &mcp.CallToolParams{Name: "echo", Arguments: map[string]any{"text": "hello"}}
			b.ReportAllocs()
			for b.Loop() {
				res, err := cs.CallTool(ctx, params)
				if err != nil || res.IsError {
					b.Fatal(err, res)
				}
			}
		})
	}
}
