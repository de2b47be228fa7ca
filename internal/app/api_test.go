package app

import (
	"context"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
)

// agentd's MCP server is made when /mcp is first asked, not with the API:
// a node nobody asks as an MCP server, and every command run in process,
// never makes it.
func TestMCPFacadeMadeOnFirstRequest(t *testing.T) {
	ctx := context.Background()
	a, err := Open(ctx, t.TempDir(), nil)
	if err != nil {
		t.Fatal(err)
	}
	defer a.Close(ctx)
	if err := a.Start(ctx); err != nil {
		t.Fatal(err)
	}
	gw, err := a.API(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if a.facade.Load() != nil {
		t.Fatal("the MCP server was made with the API")
	}
	body := `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"t","version":"1"}}}`
	req := httptest.NewRequest(http.MethodPost, "http://agentd/mcp", strings.NewReader(body))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	rec := httptest.NewRecorder()
	gw.ServeHTTP(rec, req)
	if rec.Code != http.StatusOK || !strings.Contains(rec.Body.String(), `"serverInfo"`) {
		t.Fatalf("initialize: %d %s", rec.Code, rec.Body)
	}
	if a.facade.Load() == nil {
		t.Error("no MCP server after a request to /mcp")
	}
}
