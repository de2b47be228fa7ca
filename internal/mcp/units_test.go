package mcp

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"
	"unicode/utf8"

	"agentd/internal/agent"
	"agentd/internal/model"
	"agentd/internal/tool"

	"github.com/google/go-cmp/cmp"
	sdk "github.com/modelcontextprotocol/go-sdk/mcp"
)

var toolNameRE = regexp.MustCompile(`^[a-zA-Z0-9_-]{1,64}$`)

func TestToolNames(t *testing.T) {
	long := strings.Repeat("x", 70)
	tests := []struct {
		server string
		names  []string
		want   map[string]string
	}{
		{"s", []string{"read", "write-file"}, map[string]string{"read": "s__read", "write-file": "s__write-file"}},
		{"s", []string{"a.b", "c d/é"}, map[string]string{"a.b": "s__a_b", "c d/é": "s__c_d___"}},
		// "a.b" would take "a_b"'s name: the clean name keeps it, the
		// replaced one gets a hash.
		{"s", []string{"a.b", "a_b"}, map[string]string{"a.b": "s__a_b_" + hash8("s__a.b"), "a_b": "s__a_b"}},
		{"s", []string{"a.b", "a:b"}, map[string]string{"a.b": "s__a_b_" + hash8("s__a.b"), "a:b": "s__a_b_" + hash8("s__a:b")}},
		{"srv", []string{long}, map[string]string{long: "srv__" + strings.Repeat("x", 64-5-9) + "_" + hash8("srv__"+long)}},
	}
	for _, tt := range tests {
		got := toolNames(tt.server, tt.names)
		if diff := cmp.Diff(tt.want, got); diff != "" {
			t.Errorf("toolNames(%q, %q) (-want +got):\n%s", tt.server, tt.names, diff)
		}
	}
}

func hash8(s string) string { return hashedName("", s)[1:] }

func FuzzToolNames(f *testing.F) {
	f.Add("srv", "read", "re.ad")
	f.Add("a-b_c", strings.Repeat("long", 20), strings.Repeat("long", 20)+"!")
	f.Add("s", "", "é")
	f.Fuzz(func(t *testing.T, server, a, b string) {
		if !agent.ValidServerName(server) || a == b {
			return
		}
		got := toolNames(server, []string{a, b})
		if got[a] == got[b] {
			t.Errorf("%q and %q share the name %q", a, b, got[a])
		}
		for _, n := range []string{a, b} {
			if !toolNameRE.MatchString(got[n]) || !strings.HasPrefix(got[n], server+"__") {
				t.Errorf("%q -> invalid name %q", n, got[n])
			}
		}
	})
}

func TestConvertResult(t *testing.T) {
	tests := []struct {
		name string
		in   *sdk.CallToolResult
		want tool.Result
	}{
		{"empty", &sdk.CallToolResult{}, tool.Result{}},
		{"texts", &sdk.CallToolResult{Content: []sdk.Content{&sdk.TextContent{Text: "a"}, &sdk.TextContent{Text: "b"}}}, tool.Result{Output: "a\nb"}},
		{"error", &sdk.CallToolResult{Content: []sdk.Content{&sdk.TextContent{Text: "bad"}}, IsError: true}, tool.Result{Output: "bad", IsError: true}},
		{"structured beside text is left out", &sdk.CallToolResult{Content: []sdk.Content{&sdk.TextContent{Text: "t"}}, StructuredContent: map[string]any{"a": 1}}, tool.Result{Output: "t"}},
		{"cut as it was read", &sdk.CallToolResult{Meta: sdk.Meta{MetaOmitted: float64(1234)}, Content: []sdk.Content{&sdk.TextContent{Text: "t"}}},
			tool.Result{Output: "t", Omitted: 1234}},
		{"structured beside an image", &sdk.CallToolResult{Content: []sdk.Content{&sdk.ImageContent{Data: []byte{1}}}, StructuredContent: []int{1, 2}},
			tool.Result{Output: "[1,2]\n[image application/octet-stream, 1 bytes]"}},
		{"images of a type models take are passed on", &sdk.CallToolResult{Content: []sdk.Content{
			&sdk.TextContent{Text: "two shots"},
			&sdk.ImageContent{MIMEType: "image/jpeg", Data: []byte{0xff, 0xd8, 0xff}},
			&sdk.ImageContent{MIMEType: "image/svg+xml", Data: []byte("<svg/>")},
		}}, tool.Result{Output: "two shots\n[image image/jpeg, 3 bytes]\n[image image/svg+xml, 6 bytes]",
			Images: []model.Image{{MIMEType: "image/jpeg", Data: []byte{0xff, 0xd8, 0xff}}}}},
		{"empty embedded resource", &sdk.CallToolResult{Content: []sdk.Content{&sdk.EmbeddedResource{}}}, tool.Result{}},
		// The SDK deprecates sampling, and a server may still send its content.
		//lint:ignore SA1019 what agentd shows for content it does not take is what is tested
		{"sampling content", &sdk.CallToolResult{Content: []sdk.Content{&sdk.ToolUseContent{Name: "x"}}}, tool.Result{Output: "[unsupported content]"}},
	}
	for _, tt := range tests {
		if diff := cmp.Diff(tt.want, convertResult(tt.in)); diff != "" {
			t.Errorf("%s (-want +got):\n%s", tt.name, diff)
		}
	}
}

// approverFunc is a tool.Approver made of a function.
type approverFunc func(audience, tool string, args json.RawMessage) (json.RawMessage, error)

func (f approverFunc) Approve(audience, tool string, args json.RawMessage) (json.RawMessage, error) {
	return f(audience, tool, args)
}

// returns is an approver that returns a fixed approval.
func returns(a string) tool.Approver {
	return approverFunc(func(string, string, json.RawMessage) (json.RawMessage, error) { return json.RawMessage(a), nil })
}

func TestCallMeta(t *testing.T) {
	tests := []struct {
		name    string
		call    tool.Call
		want    string
		wantErr bool
	}{
		{"nothing", tool.Call{}, `{}`, false},
		{"all", tool.Call{ID: "c", Agent: "a", Session: "s", Approval: returns(` {"k":1} `)},
			`{"agentd/agent":"a","agentd/approval":{"k":1},"agentd/call_id":"c","agentd/session":"s"}`, false},
		{"null approval", tool.Call{Approval: returns(`null`)}, `{}`, false},
		{"string approval", tool.Call{Approval: returns(`"{\"k\":2}"`)}, `{"agentd/approval":{"k":2}}`, false},
		{"array approval", tool.Call{Approval: returns(`[]`)}, ``, true},
		{"broken approval", tool.Call{Approval: returns(`{"k":`)}, ``, true},
		{"string of junk", tool.Call{Approval: returns(`"nope"`)}, ``, true},
		{"approver fails", tool.Call{Approval: approverFunc(func(string, string, json.RawMessage) (json.RawMessage, error) {
			return nil, errors.New("no key")
		})}, ``, true},
	}
	for _, tt := range tests {
		meta, err := callMeta(&tt.call, "srv", "t", json.RawMessage(`{}`))
		if (err != nil) != tt.wantErr {
			t.Errorf("%s: error %v", tt.name, err)
			continue
		}
		if err != nil {
			continue
		}
		b, _ := json.Marshal(meta)
		if string(b) != tt.want {
			t.Errorf("%s: %s, want %s", tt.name, b, tt.want)
		}
	}
}

// The audience of approvals is a server's URL without its query and
// credentials, or a stdio server's name.
func TestAudience(t *testing.T) {
	for _, tc := range []struct {
		cfg  agent.MCPServer
		want string
	}{
		{agent.MCPServer{Command: "srv"}, "files"},
		{agent.MCPServer{URL: "https://mcp.example.com/mcp"}, "https://mcp.example.com/mcp"},
		{agent.MCPServer{URL: "https://u:p@mcp.example.com:8443/mcp?key=secret#x"}, "https://mcp.example.com:8443/mcp"},
		{agent.MCPServer{Transport: "sse", URL: "http://127.0.0.1:8931/sse?"}, "http://127.0.0.1:8931/sse"},
	} {
		if got := audience("files", tc.cfg); got != tc.want {
			t.Errorf("audience(%+v) = %q, want %q", tc.cfg, got, tc.want)
		}
	}
}

func TestBackoff(t *testing.T) {
	m := &Manager{opts: Options{MinBackoff: 100 * time.Millisecond, MaxBackoff: time.Second}}
	for n := 1; n < 70; n++ {
		limit := min(100*time.Millisecond<<min(n-1, 20), time.Second)
		for range 20 {
			if d := m.backoff(n); d <= 0 || d > limit {
				t.Fatalf("backoff(%d) = %v, want in (0, %v]", n, d, limit)
			}
		}
	}
}

func TestSameConfig(t *testing.T) {
	a := agent.MCPServer{Command: "x", Env: map[string]string{}}
	b := agent.MCPServer{Command: "x"}
	if !sameConfig(a, b) {
		t.Error("an empty map and nil differ")
	}
	b.Args = []string{"-v"}
	if sameConfig(a, b) {
		t.Error("different args are the same")
	}
}

func TestStateRoundTrip(t *testing.T) {
	path := filepath.Join(t.TempDir(), "state.json")
	defs := []Def{
		{Name: "a", Config: agent.MCPServer{Command: "srv", Args: []string{"--x"}, Env: map[string]string{"K": "v"}, Timeout: agent.Duration(5 * time.Second)}, Agents: nil, Source: "runtime"},
		{Name: "b", Config: agent.MCPServer{URL: "https://example.com/mcp", HeadersEnv: map[string]string{"Authorization": "TOKEN"}}, Agents: []string{}, Source: "runtime"},
		{Name: "c", Config: agent.MCPServer{URL: "https://example.com/mcp"}, Agents: []string{"x", "y"}, Source: "agent:x"},
	}
	if err := saveState(path, defs); err != nil {
		t.Fatal(err)
	}
	got, err := loadState(path)
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(defs, got); diff != "" {
		t.Errorf("round trip (-want +got):\n%s", diff)
	}
	// nil (node-wide) and empty (no agent) stay distinct.
	if got[0].Agents != nil || got[1].Agents == nil {
		t.Errorf("agents: %#v %#v", got[0].Agents, got[1].Agents)
	}
	entries, _ := os.ReadDir(filepath.Dir(path))
	if len(entries) != 1 {
		t.Errorf("left-over files: %v", entries)
	}
	if defs, err := loadState(filepath.Join(t.TempDir(), "missing.json")); err != nil || defs != nil {
		t.Errorf("missing file: %v %v", defs, err)
	}
}

func TestParseStateErrors(t *testing.T) {
	for _, in := range []string{
		`{`,
		`[]`,
		`{"version":2,"servers":[]}`,
		`{"version":1,"servers":[{"name":"x","config":{"nope":1}}]}`,
		`{"version":1,"servers":[]} {}`,
	} {
		if _, err := parseState([]byte(in)); err == nil {
			t.Errorf("parseState(%s): no error", in)
		}
	}
	if defs, err := parseState([]byte("  \n")); err != nil || defs != nil {
		t.Errorf("empty file: %v %v", defs, err)
	}
}

func FuzzParseState(f *testing.F) {
	f.Add([]byte(`{"version":1,"servers":[{"name":"a","config":{"command":"x","timeout":"5s"},"agents":null,"source":"runtime"}]}`))
	f.Add([]byte(`{"version":1,"servers":[{"name":"b","config":{"url":"http://x","headers":{"A":"b"}},"agents":["x"]}]}`))
	f.Add([]byte(`{"version":1,"servers":null}`))
	f.Fuzz(func(t *testing.T, b []byte) {
		defs, err := parseState(b)
		if err != nil {
			return
		}
		path := filepath.Join(t.TempDir(), "s.json")
		if err := saveState(path, defs); err != nil {
			t.Fatal(err)
		}
		again, err := loadState(path)
		if err != nil {
			t.Fatalf("saved state does not load: %v", err)
		}
		if len(again) != len(defs) {
			t.Fatalf("%d servers, then %d", len(defs), len(again))
		}
		for _, d := range defs {
			_ = validateDef(&d) // must not panic
		}
	})
}

func TestReadStderr(t *testing.T) {
	r, w, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	p := &process{stderr: r, stderrDone: make(chan struct{})}
	logs := &logBuffer{}
	go p.readStderr(logs.logger())
	long := strings.Repeat("é", maxStderrLine) // twice the buffer
	fmt.Fprintf(w, "starting\n%s\nError: no config\r\n\nlast words", long)
	w.Close()
	<-p.stderrDone
	r.Close()

	var lines []string
	for _, l := range strings.Split(strings.TrimSpace(logs.String()), "\n") {
		_, after, _ := strings.Cut(l, "level=")
		lines = append(lines, after)
	}
	if len(lines) != 4 ||
		lines[0] != `DEBUG msg="mcp: server stderr" line=starting` ||
		!strings.HasPrefix(lines[1], `DEBUG msg="mcp: server stderr" line="éé`) || !strings.HasSuffix(lines[1], ` [line cut]"`) ||
		lines[2] != `WARN msg="mcp: server stderr" line="Error: no config"` ||
		lines[3] != `DEBUG msg="mcp: server stderr" line="last words"` {
		t.Errorf("logged:\n%s", strings.Join(lines, "\n"))
	}
	if len(lines[1]) > maxStderrLine+100 {
		t.Errorf("a long line was logged whole (%d bytes)", len(lines[1]))
	}
	tail := p.lastLines()
	if !strings.HasPrefix(tail, "starting | éé") || !strings.HasSuffix(tail, "| Error: no config | last words") || !utf8.ValidString(tail) {
		t.Errorf("tail %q", tail)
	}
}
