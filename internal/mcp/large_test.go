//go:build unix

package mcp

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"testing"

	"agentd/internal/agent"
	"agentd/internal/tool"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"
)

// A result larger than the SDK's 16 MiB frame limit reaches the model cut,
// with a note of how much was cut, and the server's connection serves the
// next call: over stdio, streamable HTTP (event stream and JSON answers)
// and the legacy SSE transport.
func TestLargeResults(t *testing.T) {
	const size = 20 << 20
	defs := map[string]func(t *testing.T) Def{
		"stdio": func(t *testing.T) Def { return stdioDef(t, "big", "stdio") },
		"http": func(t *testing.T) Def {
			return Def{Name: "big", Config: agent.MCPServer{Transport: agent.TransportHTTP, URL: newHTTPServer(t, newTestServer(false), false).URL, AllowNetworks: local}}
		},
		"http-json": func(t *testing.T) Def {
			srv := newTestServer(false)
			h := sdk.NewStreamableHTTPHandler(func(*http.Request) *sdk.Server { return srv }, &sdk.StreamableHTTPOptions{JSONResponse: true})
			return Def{Name: "big", Config: agent.MCPServer{Transport: agent.TransportHTTP, URL: serveHTTP(t, h).URL, AllowNetworks: local}}
		},
		"sse": func(t *testing.T) Def {
			return Def{Name: "big", Config: agent.MCPServer{Transport: agent.TransportSSE, URL: newHTTPServer(t, newTestServer(false), true).URL, AllowNetworks: local}}
		},
	}
	for name, def := range defs {
		t.Run(name, func(t *testing.T) {
			d := def(t) // the server stops after the manager
			reg := newRecorder()
			m := newTestManager(t, &Options{Tools: reg})
			if errs := m.Set(context.Background(), []Def{d}); errs != nil {
				t.Fatal(errs)
			}
			m.WaitReady(context.Background())
			before, _ := m.Status("big")
			if before.State != StateConnected {
				t.Fatalf("status %+v", before)
			}
			out := reg.Run(context.Background(), &tool.Call{Name: "big__big", Args: json.RawMessage(fmt.Sprintf(`{"bytes":%d}`, size))}, nil)
			note := fmt.Sprintf("\n[output truncated: %d of %d bytes cut]", size-tool.DefaultMaxOutputBytes, size)
			if out.Result.IsError || !out.Truncated || out.Result.Output != strings.Repeat("x", tool.DefaultMaxOutputBytes)+note {
				t.Fatalf("big result: truncated %v, error %v, output ends %q", out.Truncated, out.Result.IsError, tail(out.Result.Output, 80))
			}
			// The server's answer was cut as it was read: only the budget
			// of it was ever held.
			raw, err := m.CallTool(context.Background(), "big", "big", json.RawMessage(fmt.Sprintf(`{"bytes":%d}`, size)), nil)
			if err != nil || len(raw.Output) != DefaultMaxResultBytes || raw.Omitted != size-DefaultMaxResultBytes {
				t.Errorf("the answer as read: %d bytes, %d omitted (%v)", len(raw.Output), raw.Omitted, err)
			}
			// The same connection answers the next call.
			res := run(t, reg, &tool.Call{Name: "big__echo", Args: json.RawMessage(`{"text":"still here"}`)})
			after, _ := m.Status("big")
			if res.Output != "still here" || after.Restarts != 0 || after.PID != before.PID || after.State != StateConnected {
				t.Errorf("after the big result: echo %+v, status %+v", res, after)
			}
		})
	}
}

func tail(s string, n int) string { return s[max(len(s)-n, 0):] }
