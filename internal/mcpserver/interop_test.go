package mcpserver_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"agentd/internal/mcpserver"
)

// childEnv makes the test binary serve the facade over stdio (with the fake
// backend) instead of running tests: the TypeScript client spawns it.
const childEnv = "AGENTD_MCPSERVER_STDIO_CHILD"

func TestMain(m *testing.M) {
	if os.Getenv(childEnv) == "1" {
		os.Exit(serveChild())
	}
	os.Exit(m.Run())
}

func serveChild() int {
	ctx := context.Background()
	srv := mcpserver.New(newFake(alpha, beta), &mcpserver.Options{Name: "agentd-test", Version: "1.2.3"})
	if err := srv.Sync(ctx); err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	if err := srv.ServeStdio(ctx, os.Stdin, os.Stdout); err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	return 0
}

// interopDeps finds node and the TypeScript SDK; without them the test is
// skipped, unless AGENTD_INTEROP=1 says they must be there.
func interopDeps(t *testing.T) (node, nodeModules string) {
	t.Helper()
	missing := func(what string, err error) {
		if os.Getenv("AGENTD_INTEROP") == "1" {
			t.Fatalf("%s: %v (AGENTD_INTEROP=1)", what, err)
		}
		t.Skipf("%s: %v", what, err)
	}
	node, err := exec.LookPath("node")
	if err != nil {
		missing("node not found", err)
	}
	nodeModules, err = filepath.Abs(filepath.Join("..", "..", "test", "npm", "node_modules"))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(nodeModules, "@modelcontextprotocol", "sdk", "package.json")); err != nil {
		missing("the TypeScript MCP SDK is not installed in test/npm", err)
	}
	return node, nodeModules
}

type tsTool struct {
	Name     string `json:"name"`
	ReadOnly bool   `json:"readOnly"`
}

type tsAsk struct {
	Tool    string `json:"tool"`
	IsError bool   `json:"isError"`
	Text    string `json:"text"`
}

type tsPage struct {
	Session               string   `json:"session"`
	Seqs                  []int64  `json:"seqs"`
	Kinds                 []string `json:"kinds"`
	Next                  int64    `json:"next"`
	More                  bool     `json:"more"`
	StructuredMatchesText bool     `json:"structuredMatchesText"`
	Error                 string   `json:"error"`
}

// tsResult is what testdata/ts-client.mjs prints.
type tsResult struct {
	Server struct{ Name, Version string } `json:"server"`
	Tools  []tsTool                       `json:"tools"`
	Ask    tsAsk                          `json:"ask"`
	Pages  []tsPage                       `json:"pages"`
	BadLog struct {
		IsError bool   `json:"isError"`
		Text    string `json:"text"`
	} `json:"badLog"`
}

// TestTypeScriptClient runs the official TypeScript SDK client
// (testdata/ts-client.mjs) against the facade over stdio and streamable
// HTTP.
func TestTypeScriptClient(t *testing.T) {
	node, nodeModules := interopDeps(t)
	script, err := filepath.Abs(filepath.Join("testdata", "ts-client.mjs"))
	if err != nil {
		t.Fatal(err)
	}
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}

	for _, mode := range []string{"stdio", "http"} {
		t.Run(mode, func(t *testing.T) {
			args := []string{script, mode}
			env := append(os.Environ(), "NODE_PATH="+nodeModules)
			if mode == "stdio" {
				args = append(args, exe)
				env = append(env, childEnv+"=1")
			} else {
				srv := newServer(t, newFake(alpha, beta))
				hs := httptest.NewServer(srv.Handler(nil))
				t.Cleanup(hs.Close)
				t.Cleanup(func() { srv.Close() })
				args = append(args, hs.URL)
			}
			cmd := exec.CommandContext(t.Context(), node, args...)
			cmd.Env = env
			cmd.WaitDelay = 10 * time.Second
			var stdout, stderr bytes.Buffer
			cmd.Stdout, cmd.Stderr = &stdout, &stderr
			if err := cmd.Run(); err != nil {
				t.Fatalf("node %s: %v\nstdout:\n%s\nstderr:\n%s", mode, err, &stdout, &stderr)
			}
			var got tsResult
			if err := json.Unmarshal(stdout.Bytes(), &got); err != nil {
				t.Fatalf("output is not JSON: %v\n%s\nstderr:\n%s", err, &stdout, &stderr)
			}

			if got.Server.Name != "agentd-test" || got.Server.Version != "1.2.3" {
				t.Errorf("server = %+v", got.Server)
			}
			wantTools := []tsTool{{"ask_alpha", false}, {"ask_beta", false}, {"list_agents", true}, {"list_sessions", true}, {"read_session_log", true}}
			if d := cmp.Diff(wantTools, got.Tools); d != "" {
				t.Errorf("tools (-want +got):\n%s", d)
			}
			if d := cmp.Diff(tsAsk{"ask_alpha", false, "alpha heard: hello from typescript"}, got.Ask); d != "" {
				t.Errorf("ask (-want +got):\n%s", d)
			}
			wantPages := []tsPage{
				{"alpha/ts", []int64{1, 2}, []string{"input", "text"}, 2, true, true, ""},
				{"alpha/ts", []int64{3}, []string{"turn_end"}, 3, false, true, ""},
			}
			if d := cmp.Diff(wantPages, got.Pages); d != "" {
				t.Errorf("read_session_log pages (-want +got):\n%s", d)
			}
			if !got.BadLog.IsError || !strings.Contains(got.BadLog.Text, "must be an address <agent>/<key>") {
				t.Errorf("read_session_log with a bad address = %+v", got.BadLog)
			}
		})
	}
}
