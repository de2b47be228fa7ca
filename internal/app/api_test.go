package app

import (
	"context"
	"net/http"
	"net/http/httptest"
	"os"
	"strings"
	"testing"
	"time"
)

// agentd's MCP server is made when /mcp is first asked, not with the API:
// a node nobody asks as an MCP server, and every command run in process,
// never makes it.
func TestMCPFacadeMadeOnFirstRequest(t *testing.T) {
	ctx := context.Background()
	a := startedApp(t)
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

// A command run in process gets the API without the parts only a daemon's
// clients use: /metrics answers 501 and /v1/stream is not served.
func TestCommandAPI(t *testing.T) {
	ctx := context.Background()
	a := startedApp(t)
	gw, err := a.CommandAPI(ctx)
	if err != nil {
		t.Fatal(err)
	}
	for _, path := range []string{"/metrics", "/v1/stream", "/v1/version"} {
		rec := httptest.NewRecorder()
		gw.ServeHTTP(rec, httptest.NewRequest(http.MethodGet, "http://agentd"+path, nil))
		want := map[string]int{"/metrics": http.StatusNotImplemented, "/v1/stream": http.StatusNotFound, "/v1/version": http.StatusOK}[path]
		if rec.Code != want {
			t.Errorf("GET %s: %d %s, want %d", path, rec.Code, rec.Body, want)
		}
	}
}

// A short command run in process reads agent and skill files once
// (Options.ReadOnce): Start watches nothing; a node that serves does.
func TestReadOnceWatchesNothing(t *testing.T) {
	ctx := context.Background()
	for _, readOnce := range []bool{true, false} {
		before := inotifyFDs(t)
		a, err := Open(ctx, t.TempDir(), &Options{ReadOnce: readOnce})
		if err != nil {
			t.Fatal(err)
		}
		if err := a.Start(ctx); err != nil {
			t.Fatal(err)
		}
		if readOnce {
			if n := inotifyFDs(t); n != before {
				t.Errorf("ReadOnce: %d file watchers after Start, %d before", n, before)
			}
		} else {
			deadline := time.Now().Add(10 * time.Second)
			for inotifyFDs(t) == before && time.Now().Before(deadline) {
				time.Sleep(time.Millisecond)
			}
			if n := inotifyFDs(t); n == before {
				t.Error("no file watcher after Start")
			}
		}
		a.Close(ctx)
	}
}

// inotifyFDs counts this process's inotify instances (file watchers).
func inotifyFDs(t *testing.T) int {
	t.Helper()
	ents, err := os.ReadDir("/proc/self/fd")
	if err != nil {
		t.Skip("no /proc")
	}
	n := 0
	for _, e := range ents {
		if l, err := os.Readlink("/proc/self/fd/" + e.Name()); err == nil && strings.Contains(l, "inotify") {
			n++
		}
	}
	return n
}

// startedApp opens and starts an App on a new data directory, closed when
// t ends.
func startedApp(t *testing.T) *App {
	t.Helper()
	ctx := context.Background()
	a, err := Open(ctx, t.TempDir(), nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { a.Close(ctx) })
	if err := a.Start(ctx); err != nil {
		t.Fatal(err)
	}
	return a
}
