package mcp_test

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"

	"agentd/internal/agent"
	"agentd/internal/mcp"
	"agentd/internal/tool"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"
)

func Example() {
	// An MCP server with one tool, served over streamable HTTP.
	weather := sdk.NewServer(&sdk.Implementation{Name: "weather", Version: "1.0"}, nil)
	type args struct {
		City string `json:"city"`
	}
	sdk.AddTool(weather, &sdk.Tool{
		Name:        "forecast",
		Description: "Tomorrow's weather in a city.",
		Annotations: &sdk.ToolAnnotations{ReadOnlyHint: true},
	}, func(_ context.Context, _ *sdk.CallToolRequest, in args) (*sdk.CallToolResult, any, error) {
		return &sdk.CallToolResult{Content: []sdk.Content{&sdk.TextContent{Text: "Sunny in " + in.City}}}, nil, nil
	})
	hs := httptest.NewServer(sdk.NewStreamableHTTPHandler(func(*http.Request) *sdk.Server { return weather }, nil))
	defer hs.Close()

	// The Manager registers the server's tools with agentd's registry.
	ctx := context.Background()
	reg := tool.NewRegistry(nil)
	m, err := mcp.New(&mcp.Options{Tools: reg})
	if err != nil {
		panic(err)
	}
	defer m.Close()
	if errs := m.Set(ctx, []mcp.Def{{Name: "weather", Config: agent.MCPServer{URL: hs.URL,
		// The test server is on this machine, which the SSRF guard blocks
		// unless the server's entry allows it.
		AllowNetworks: []string{"127.0.0.1/32"}}}}); errs != nil {
		panic(errs)
	}
	m.WaitReady(ctx)

	for _, st := range m.List() {
		fmt.Println(st.Name, st.Transport, st.State, st.Tools, "tool")
	}
	for _, s := range reg.Specs() {
		fmt.Println(s.Name, "read-only:", s.ReadOnly)
	}
	out := reg.Run(ctx, &tool.Call{Name: "weather__forecast", Args: json.RawMessage(`{"city":"Paris"}`)}, nil)
	fmt.Println(out.Result.Output)
	// Output:
	// weather http connected 1 tool
	// weather__forecast read-only: true
	// Sunny in Paris
}
