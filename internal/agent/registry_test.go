package agent

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
)

// waitLimit only stops a broken test from hanging; nothing is asserted
// about how long a reload takes.
const waitLimit = 30 * time.Second

// watched is a registry running Run, with its OnChange calls.
type watched struct {
	*Registry
	changes chan string
}

func startRegistry(t *testing.T, dir string) *watched {
	t.Helper()
	w := &watched{changes: make(chan string, 1024)}
	r, err := NewRegistry(dir, nil, &RegistryOptions{
		Logger:   slog.New(slog.NewTextHandler(io.Discard, nil)),
		OnChange: func(id string) { w.changes <- id },
	})
	if err != nil {
		t.Fatal(err)
	}
	w.Registry = r
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- r.Run(ctx) }()
	t.Cleanup(func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("Run: %v", err)
		}
	})
	return w
}

// waitUntil waits for changes to id until cond holds.
func (w *watched) waitUntil(t *testing.T, id string, what string, cond func() bool) {
	t.Helper()
	timeout := time.After(waitLimit)
	for !cond() {
		select {
		case got := <-w.changes:
			_ = got // any change may be the one; cond decides
		case <-timeout:
			t.Fatalf("gave up waiting for %s (agent %s); errors: %v", what, id, w.Errors())
		}
	}
}

func (w *watched) name(id string) string {
	d, ok := w.Get(id)
	if !ok {
		return ""
	}
	return d.Name
}

func TestRegistryHotReload(t *testing.T) {
	dir := t.TempDir()
	writeTestFile(t, dir, "agents/a.yaml", "name: A1\n")
	writeTestFile(t, dir, "agents/b.yaml", "name: B\n")
	r := startRegistry(t, dir)
	if got := r.name("a"); got != "A1" {
		t.Fatalf("initial name = %q, want A1", got)
	}
	b, _ := r.Get("b")

	// An edit applies from the next Get.
	writeTestFile(t, dir, "agents/a.yaml", "name: A2\n")
	r.waitUntil(t, "a", "edit", func() bool { return r.name("a") == "A2" })
	if b2, _ := r.Get("b"); b2 != b {
		t.Error("editing a replaced b's definition")
	}

	// An invalid edit keeps the last good definition and shows in Errors.
	writeTestFile(t, dir, "agents/a.yaml", "name: A3\nmodel:\n  provider: gemini\n")
	r.waitUntil(t, "a", "error", func() bool { return r.Errors()["a"] != nil })
	if got := r.name("a"); got != "A2" {
		t.Errorf("after an invalid edit name = %q, want the last good A2", got)
	}
	if err := r.Errors()["a"]; !strings.Contains(err.Error(), `agents/a.yaml:3: model.provider: must be openai, anthropic or echo, got "gemini"`) {
		t.Errorf("Errors()[a] = %v", err)
	}

	// Fixing it clears the error.
	writeTestFile(t, dir, "agents/a.yaml", "name: A4\n")
	r.waitUntil(t, "a", "fix", func() bool { return r.name("a") == "A4" && r.Errors()["a"] == nil })

	// Editors that write a new file and rename it over the old one.
	tmp := filepath.Join(dir, "agents", "a.yaml.tmp")
	if err := os.WriteFile(tmp, []byte("name: A5\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Rename(tmp, filepath.Join(dir, "agents", "a.yaml")); err != nil {
		t.Fatal(err)
	}
	r.waitUntil(t, "a", "rename-write", func() bool { return r.name("a") == "A5" })

	// system.md added, then edited by rename.
	prompt := func() string {
		d, _ := r.Get("a")
		return d.SystemPrompt
	}
	writeTestFile(t, dir, "agents/a/system.md", "First prompt.\n")
	r.waitUntil(t, "a", "system.md", func() bool { return prompt() == "First prompt.\n" })
	tmp = filepath.Join(dir, "agents", "a", ".system.md.swp")
	if err := os.WriteFile(tmp, []byte("Second prompt.\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Rename(tmp, filepath.Join(dir, "agents", "a", "system.md")); err != nil {
		t.Fatal(err)
	}
	r.waitUntil(t, "a", "system.md edit", func() bool { return prompt() == "Second prompt.\n" })

	// A new file adds an agent.
	writeTestFile(t, dir, "agents/c.yaml", "name: C\n")
	r.waitUntil(t, "c", "new agent", func() bool { return r.name("c") == "C" })

	// A removed file removes the agent.
	if err := os.RemoveAll(filepath.Join(dir, "agents", "a")); err != nil {
		t.Fatal(err)
	}
	if err := os.Remove(filepath.Join(dir, "agents", "a.yaml")); err != nil {
		t.Fatal(err)
	}
	r.waitUntil(t, "a", "removal", func() bool {
		_, ok := r.Get("a")
		return !ok
	})
	var ids []string
	for _, d := range r.List() {
		ids = append(ids, d.ID)
	}
	if diff := cmp.Diff([]string{"b", "c"}, ids); diff != "" {
		t.Errorf("List (-want +got):\n%s", diff)
	}
}

func TestRegistryBuiltinAssistant(t *testing.T) {
	dir := t.TempDir()
	r := startRegistry(t, dir)
	if d, ok := r.Get(BuiltinAgentID); !ok || d.Model.Provider != ProviderEcho {
		t.Fatalf("built-in assistant = %+v, %v", d, ok)
	}
	// The first agent file replaces the built-in assistant.
	writeTestFile(t, dir, "agents/helper.yaml", "name: Helper\n")
	r.waitUntil(t, "helper", "first agent", func() bool {
		_, builtin := r.Get(BuiltinAgentID)
		return r.name("helper") == "Helper" && !builtin
	})
}

// Removing agents/ altogether removes its agents; recreating it is noticed.
func TestRegistryAgentsDirReplaced(t *testing.T) {
	dir := t.TempDir()
	writeTestFile(t, dir, "agents/a.yaml", "name: A\n")
	r := startRegistry(t, dir)
	if err := os.RemoveAll(filepath.Join(dir, "agents")); err != nil {
		t.Fatal(err)
	}
	r.waitUntil(t, "a", "directory removal", func() bool {
		_, ok := r.Get("a")
		return !ok
	})
	writeTestFile(t, dir, "agents/b.yaml", "name: B\n")
	r.waitUntil(t, "b", "directory recreated", func() bool { return r.name("b") == "B" })
}

// Reload works without Run, for callers that reload on a signal.
func TestRegistryReload(t *testing.T) {
	dir := t.TempDir()
	writeTestFile(t, dir, "agents/a.yaml", "name: A1\n")
	var changed []string
	r, err := NewRegistry(dir, nil, &RegistryOptions{OnChange: func(id string) { changed = append(changed, id) }})
	if err != nil {
		t.Fatal(err)
	}
	first, _ := r.Get("a")

	// Nothing changed: same pointer, no callback.
	if err := r.Reload(); err != nil {
		t.Fatal(err)
	}
	if again, _ := r.Get("a"); again != first || len(changed) != 0 {
		t.Errorf("reload without changes: pointer kept %v, changes %v", again == first, changed)
	}

	writeTestFile(t, dir, "agents/a.yaml", "name: A1\nbudgets:\n  max_steps: -1\n")
	err = r.Reload()
	var ce *ConfigError
	if !errors.As(err, &ce) || ce.Errors[0].Line != 3 || ce.Errors[0].Field != "budgets.max_steps" {
		t.Errorf("Reload() = %v, want the file's *ConfigError", err)
	}
	if got, _ := r.Get("a"); got != first {
		t.Error("invalid edit replaced the last good definition")
	}
	if diff := cmp.Diff([]string{"a"}, changed); diff != "" {
		t.Errorf("OnChange calls (-want +got):\n%s", diff)
	}

	if err := os.Remove(filepath.Join(dir, "agents", "a.yaml")); err != nil {
		t.Fatal(err)
	}
	writeTestFile(t, dir, "agents/z.yaml", "")
	if err := r.Reload(); err != nil {
		t.Fatal(err)
	}
	if _, ok := r.Get("a"); ok || len(r.Errors()) != 0 {
		t.Errorf("removed file: agent still there or errors left: %v", r.Errors())
	}
}

func TestRegistryPut(t *testing.T) {
	dir := t.TempDir()
	r, err := NewRegistry(dir, nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	temp := 0.0
	def := &Definition{
		ID:           "writer",
		Name:         "Writer",
		SystemPrompt: "You write.\nShort sentences.\n",
		Model: Model{
			Provider: ProviderOpenAI, Name: "gpt-4o-mini",
			Params:    ModelParams{Temperature: &temp, Extra: map[string]any{"seed": 7}},
			Fallbacks: []Model{{Provider: ProviderEcho}},
		},
		Tools: ToolPolicy{Allow: []string{"web.*"}},
	}
	if err := r.Put(def); err != nil {
		t.Fatal(err)
	}
	got, ok := r.Get("writer")
	if !ok {
		t.Fatal("Put agent not found")
	}
	if got.Name != "Writer" || *got.Model.Params.Temperature != 0 || got.Budgets.MaxSteps != DefaultMaxSteps ||
		got.SystemPrompt != def.SystemPrompt || got.Model.Fallbacks[0].Name != EchoModelName {
		t.Errorf("Put then Get = %+v", got)
	}

	// A loaded definition written back is unchanged.
	if err := r.Put(got.Clone()); err != nil {
		t.Fatal(err)
	}
	again, _ := r.Get("writer")
	if diff := cmp.Diff(got, again); diff != "" {
		t.Errorf("round trip (-first +second):\n%s", diff)
	}

	// With system.md present, the prompt goes there (which also resolves
	// a prompt set in both files).
	writeTestFile(t, dir, "agents/writer/system.md", "old\n")
	if err := r.Reload(); err == nil || !strings.Contains(err.Error(), "system_prompt: set in both") {
		t.Fatalf("Reload with the prompt in both files = %v", err)
	}
	d := again.Clone()
	d.SystemPrompt = "new\n"
	if err := r.Put(d); err != nil {
		t.Fatal(err)
	}
	if b, _ := os.ReadFile(filepath.Join(dir, "agents", "writer", "system.md")); string(b) != "new\n" {
		t.Errorf("system.md = %q", b)
	}
	if y, _ := os.ReadFile(filepath.Join(dir, "agents", "writer.yaml")); strings.Contains(string(y), "system_prompt") {
		t.Errorf("writer.yaml has a system_prompt next to system.md:\n%s", y)
	}
	if got, _ := r.Get("writer"); got.SystemPrompt != "new\n" || len(r.Errors()) != 0 {
		t.Errorf("after Put: prompt %q, errors %v", got.SystemPrompt, r.Errors())
	}

	// Invalid definitions are refused and write nothing.
	before, _ := os.ReadFile(filepath.Join(dir, "agents", "writer.yaml"))
	bad := again.Clone()
	bad.Model.Params.Temperature = new(9.0)
	err = r.Put(bad)
	var ce *ConfigError
	if !errors.As(err, &ce) || ce.Errors[0].Field != "model.params.temperature" {
		t.Errorf("Put(bad) = %v", err)
	}
	if after, _ := os.ReadFile(filepath.Join(dir, "agents", "writer.yaml")); string(after) != string(before) {
		t.Error("a refused Put changed the file")
	}
	if err := r.Put(&Definition{ID: "../x"}); !errors.Is(err, ErrInvalidID) {
		t.Errorf("Put with a bad id = %v", err)
	}
	entries, _ := os.ReadDir(filepath.Join(dir, "agents"))
	for _, e := range entries {
		if strings.HasSuffix(e.Name(), ".tmp") {
			t.Errorf("temporary file left behind: %s", e.Name())
		}
	}
}

func BenchmarkRegistryGet(b *testing.B) {
	dir := b.TempDir()
	for i := range 100 {
		writeTestFile(b, dir, fmt.Sprintf("agents/agent-%d.yaml", i), "name: x\n")
	}
	r, err := NewRegistry(dir, nil, nil)
	if err != nil {
		b.Fatal(err)
	}
	var found atomic.Int64
	b.ReportAllocs()
	b.ResetTimer()
	b.RunParallel(func(pb *testing.PB) {
		n := 0
		for pb.Next() {
			if _, ok := r.Get("agent-42"); ok {
				n++
			}
		}
		found.Add(int64(n))
	})
	if found.Load() == 0 {
		b.Fatal("agent not found")
	}
}

// NewRegistry reports files that do not load through FileError and Errors
// without logging them (its callers report them, once); a reload that
// breaks another file logs that.
func TestRegistryFileErrors(t *testing.T) {
	dir := t.TempDir()
	writeAgent := func(id, body string) {
		t.Helper()
		if err := os.MkdirAll(filepath.Join(dir, AgentsDir), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, AgentsDir, id+".yaml"), []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	writeAgent("good", "name: Good\n")
	writeAgent("bad", "name: Bad\nbudgets:\n  max_steps: -1\n")
	var log strings.Builder
	r, err := NewRegistry(dir, nil, &RegistryOptions{Logger: slog.New(slog.NewTextHandler(&log, nil))})
	if err != nil {
		t.Fatal(err)
	}
	if log.Len() != 0 {
		t.Errorf("NewRegistry logged:\n%s", log.String())
	}
	var ce *ConfigError
	if err := r.FileError("bad"); !errors.As(err, &ce) || len(ce.Errors) != 1 || ce.Errors[0].Line != 3 {
		t.Errorf("FileError(bad) = %v, want a ConfigError for line 3", err)
	}
	if err := r.FileError("good"); err != nil {
		t.Errorf("FileError(good) = %v", err)
	}
	writeAgent("good", "name: Good\nbudgets:\n  max_steps: -1\n")
	if err := r.Reload(); err == nil {
		t.Fatal("Reload found no problem")
	}
	if _, ok := r.Get("good"); !ok || r.FileError("good") == nil {
		t.Errorf("after a broken edit: Get(good) ok=%v, FileError %v; want the last good definition and the problem", ok, r.FileError("good"))
	}
	if got := log.String(); !strings.Contains(got, "agent=good") || strings.Contains(got, "agent=bad") {
		t.Errorf("Reload logged %q; want the newly broken file only", got)
	}
}
