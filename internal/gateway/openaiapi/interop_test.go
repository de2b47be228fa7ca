package openaiapi_test

// Interoperability with the official `openai` npm client. .ci/run installs
// it (npm ci --prefix test/npm) and sets AGENTD_INTEROP=1, which turns a
// missing node or package from a skip into a failure.

import (
	"bytes"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"agentd/internal/store"
)

// nodeDeps returns node and the node_modules folder holding openai. The
// test is skipped only when the packages are not installed and
// AGENTD_INTEROP is not set; once they are, a missing node fails it.
func nodeDeps(t *testing.T) (node, modules string) {
	t.Helper()
	modules, err := filepath.Abs(filepath.Join("..", "..", "..", "test", "npm", "node_modules"))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(modules, "openai", "package.json")); err != nil {
		if os.Getenv("AGENTD_INTEROP") == "1" {
			t.Fatalf("interop test needs the openai npm package (run .ci/run, or npm ci --prefix test/npm): %v", err)
		}
		t.Skip("skipping: the openai npm package is not installed (npm ci --prefix test/npm)")
	}
	if node, err = exec.LookPath("node"); err != nil {
		t.Fatalf("test/npm/node_modules is installed but node is not found: %v", err)
	}
	return node, modules
}

// clientResult is what testdata/client.mjs prints.
type clientResult struct {
	Models []struct {
		ID      string `json:"id"`
		Object  string `json:"object"`
		OwnedBy string `json:"owned_by"`
		Created int64  `json:"created"`
	} `json:"models"`
	Model string `json:"model"`
	First struct {
		ID      string `json:"id"`
		Object  string `json:"object"`
		Content string `json:"content"`
		Finish  string `json:"finish"`
		Usage   struct {
			PromptTokens     int `json:"prompt_tokens"`
			CompletionTokens int `json:"completion_tokens"`
			TotalTokens      int `json:"total_tokens"`
		} `json:"usage"`
		Session string `json:"session"`
	} `json:"first"`
	Second struct {
		ID      string `json:"id"`
		Content string `json:"content"`
	} `json:"second"`
	Stream struct {
		Chunks  int      `json:"chunks"`
		Roles   []string `json:"roles"`
		Content string   `json:"content"`
		Finish  []string `json:"finish"`
		Usage   *struct {
			TotalTokens int `json:"total_tokens"`
		} `json:"usage"`
		IDs []string `json:"ids"`
	} `json:"stream"`
	Helper struct {
		Content string `json:"content"`
		Finish  string `json:"finish"`
		Role    string `json:"role"`
		Deltas  string `json:"deltas"`
	} `json:"helper"`
	Image struct {
		Content string `json:"content"`
		Finish  string `json:"finish"`
	} `json:"image"`
	UnknownModel clientFailure `json:"unknownModel"`
	Tools        clientFailure `json:"tools"`
	ImageURL     clientFailure `json:"imageURL"`
	FailedTurn   clientFailure `json:"failedTurn"`
	FailedStream clientFailure `json:"failedStream"`
}

type clientFailure struct {
	Failed  bool   `json:"failed"`
	Class   string `json:"class"`
	Status  *int   `json:"status"`
	Type    string `json:"type"`
	Code    string `json:"code"`
	Param   string `json:"param"`
	Message string `json:"message"`
}

// TestOfficialClient runs testdata/client.mjs, the official openai npm
// client, against the API.
func TestOfficialClient(t *testing.T) {
	node, modules := nodeDeps(t)
	e := newEnv(t)
	// ESM imports resolve from the script's directory up (NODE_PATH does
	// not apply to them): run a copy next to a link to the packages.
	dir := t.TempDir()
	src, err := os.ReadFile(filepath.Join("testdata", "client.mjs"))
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "client.mjs"), src, 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(modules, filepath.Join(dir, "node_modules")); err != nil {
		t.Fatal(err)
	}
	cmd := exec.CommandContext(t.Context(), node, "client.mjs", e.http.URL+"/v1", token, "assistant")
	cmd.Dir = dir
	cmd.WaitDelay = 10 * time.Second
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		t.Fatalf("node client.mjs: %v\nstdout:\n%s\nstderr:\n%s", err, &stdout, &stderr)
	}
	t.Logf("client: %s", &stdout)
	var got clientResult
	if err := json.Unmarshal(stdout.Bytes(), &got); err != nil {
		t.Fatalf("client output %s: %v\nstderr:\n%s", &stdout, err, &stderr)
	}

	var ids []string
	for _, m := range got.Models {
		ids = append(ids, m.ID)
		if m.Object != "model" || m.OwnedBy != "agentd" || m.Created != 1700000000 {
			t.Errorf("model %+v", m)
		}
	}
	if !cmp.Equal(ids, []string{"assistant", "helper"}) || got.Model != "assistant" {
		t.Errorf("models %v, retrieved %q", ids, got.Model)
	}

	f := got.First
	if !idPattern.MatchString(f.ID) || f.Object != "chat.completion" || f.Finish != "stop" || f.Session == "" ||
		f.Usage.TotalTokens == 0 || f.Usage.TotalTokens != f.Usage.PromptTokens+f.Usage.CompletionTokens {
		t.Errorf("first completion %+v", f)
	}
	if !strings.HasSuffix(f.Content, "history from node") {
		t.Errorf("first reply %q", f.Content)
	}
	n1, n2 := 0, 0
	if m := nMessages.FindStringSubmatch(f.Content); m != nil {
		n1, _ = strconv.Atoi(m[1])
	}
	if m := nMessages.FindStringSubmatch(got.Second.Content); m == nil || m[2] != "history again" {
		t.Errorf("second reply %q", got.Second.Content)
	} else {
		n2, _ = strconv.Atoi(m[1])
	}
	if n2 != n1+2 || got.Second.ID == f.ID {
		t.Errorf("the continued conversation saw %d messages after %d (ids %s, %s)", n2, n1, f.ID, got.Second.ID)
	}
	if got := e.inputs(t, "assistant/openai:"+f.Session); len(got) != 2 || got[1] != "history again" {
		t.Errorf("session %s inputs %q", f.Session, got)
	}

	s := got.Stream
	if s.Content != "one two three four five six seven eight nine ten" || !cmp.Equal(s.Roles, []string{"assistant"}) ||
		!cmp.Equal(s.Finish, []string{"stop"}) || s.Usage == nil || s.Usage.TotalTokens == 0 || len(s.IDs) != 1 || s.Chunks < 8 {
		t.Errorf("stream %+v", s)
	}
	if got := e.inputs(t, "assistant/openai:node-user"); !cmp.Equal(got, []string{"long story"}) {
		t.Errorf("the user field's session has inputs %q", got)
	}
	h := got.Helper
	if h.Content != "Let me look.\n\nFound: 42" || h.Deltas != h.Content || h.Finish != "stop" || h.Role != "assistant" {
		t.Errorf("stream helper %+v", h)
	}

	if got.Image.Content != "I see 1 image(s)." || got.Image.Finish != "stop" {
		t.Errorf("image %+v, want the model to see 1 image", got.Image)
	}

	status := func(c clientFailure) int {
		if c.Status == nil {
			return 0
		}
		return *c.Status
	}
	for _, c := range []struct {
		name  string
		got   clientFailure
		class string
		code  string
		param string
	}{
		{"unknown model", got.UnknownModel, "NotFoundError", "model_not_found", "model"},
		{"tools", got.Tools, "BadRequestError", "unsupported_parameter", "tools"},
		{"image URL", got.ImageURL, "BadRequestError", "unsupported_parameter", "messages[0].content[1]"},
		{"failed turn", got.FailedTurn, "InternalServerError", "turn_failed", ""},
		{"failed stream", got.FailedStream, "APIError", "turn_failed", ""},
	} {
		if !c.got.Failed || c.got.Class != c.class || c.got.Code != c.code || c.got.Param != c.param {
			t.Errorf("%s: %+v, want %s %s", c.name, c.got, c.class, c.code)
		}
	}
	if status(got.UnknownModel) != 404 || status(got.Tools) != 400 || status(got.ImageURL) != 400 || status(got.FailedTurn) != 502 {
		t.Errorf("statuses %d %d %d %d", status(got.UnknownModel), status(got.Tools), status(got.ImageURL), status(got.FailedTurn))
	}
	if !strings.Contains(got.ImageURL.Message, "image URLs are not fetched") {
		t.Errorf("image URL refused with %q", got.ImageURL.Message)
	}

	// The client retries 5xx answers unless told not to: the failed turn
	// ran once.
	sessions, err := e.st.Sessions(t.Context(), store.SessionFilter{})
	if err != nil {
		t.Fatal(err)
	}
	fails := 0
	for _, ss := range sessions {
		for _, in := range e.inputs(t, ss.Address()) {
			if in == "fail from node" {
				fails++
			}
		}
	}
	if fails != 1 {
		t.Errorf("the failing message reached agentd %d times, want 1", fails)
	}
}
