package agent

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

func TestDataDir(t *testing.T) {
	tests := []struct {
		name, flag, env, want string
	}{
		{"default", "", "", DefaultDataDir},
		{"env", "", "/srv/agentd", "/srv/agentd"},
		{"flag wins", "/tmp/data", "/srv/agentd", "/tmp/data"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Setenv("AGENTD_HOME", tt.env)
			if got := DataDir(tt.flag); got != tt.want {
				t.Errorf("DataDir(%q) with AGENTD_HOME=%q = %q, want %q", tt.flag, tt.env, got, tt.want)
			}
		})
	}
}

func TestLoadConfigMissing(t *testing.T) {
	cfg, err := LoadConfig(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	maxContacts := DefaultMaxContacts
	want := &Config{
		MaxConcurrentTurns: DefaultMaxConcurrentTurns,
		Log:                Log{Level: "info", Format: "text"},
		Store:              StoreConfig{URL: StoreSQLite, Synchronous: "full", PoolSize: DefaultStorePoolSize, StatementTimeout: Duration(DefaultStatementTimeout), LeaseTTL: Duration(DefaultLeaseTTL)},
		Embeddings:         Embeddings{Provider: EmbedHashed, Dim: DefaultEmbedDim},
		Gateway:            Gateway{Listen: DefaultGatewayListen, MaxBody: MaxGatewayBody},
		Tools: NodeTools{WebSearch: WebSearchConfig{Results: DefaultSearchResults, Timeout: Duration(DefaultSearchTimeout)},
			WebFetch: WebFetchConfig{Timeout: Duration(DefaultWebFetchTimeout), MaxBytes: DefaultWebFetchBytes}},
		Jobs: JobsConfig{KeepRuns: DefaultKeepRuns},
		Agents: AgentsConfig{MaxHops: DefaultMaxHops, MaxDepth: DefaultMaxDepth, MaxChildren: DefaultMaxChildren,
			MaxLive: DefaultMaxLive, MaxContacts: &maxContacts, AskTimeout: Duration(DefaultAskTimeout), ReportBytes: DefaultReportBytes},
	}
	if diff := cmp.Diff(want, cfg); diff != "" {
		t.Errorf("defaults (-want +got):\n%s", diff)
	}
}

func TestLoadDefinitionErrors(t *testing.T) {
	empty := t.TempDir()
	withAgent := t.TempDir()
	writeTestFile(t, withAgent, "agents/other.yaml", "name: Other\n")

	if d, err := LoadDefinition(empty, BuiltinAgentID, nil); err != nil || d.SystemPrompt != builtinPrompt {
		t.Errorf("built-in assistant on an empty data directory: %v, %v", d, err)
	}
	if _, err := LoadDefinition(withAgent, BuiltinAgentID, nil); !errors.Is(err, ErrNotFound) {
		t.Errorf("assistant with other agents defined: got %v, want ErrNotFound", err)
	}
	if _, err := LoadDefinition(empty, "nobody", nil); !errors.Is(err, ErrNotFound) {
		t.Errorf("missing agent: got %v, want ErrNotFound", err)
	}
	for _, id := range []string{"", "../etc/passwd", "a/b", "has space", ".hidden", strings.Repeat("x", 65)} {
		if _, err := LoadDefinition(empty, id, nil); !errors.Is(err, ErrInvalidID) {
			t.Errorf("LoadDefinition(%q): got %v, want ErrInvalidID", id, err)
		}
	}
}

func TestFileTooLarge(t *testing.T) {
	dir := t.TempDir()
	writeTestFile(t, dir, "agents/big.yaml", "description: "+strings.Repeat("x", maxFileSize)+"\n")
	_, err := LoadDefinition(dir, "big", nil)
	var ce *ConfigError
	if !errors.As(err, &ce) || !strings.HasPrefix(err.Error(), "agents/big.yaml: file is larger than") {
		t.Errorf("got %v, want a file-too-large *ConfigError", err)
	}
}

func TestSystemPromptNotUTF8(t *testing.T) {
	dir := t.TempDir()
	writeTestFile(t, dir, "agents/a.yaml", "")
	writeTestFile(t, dir, "agents/a/system.md", "\xff\xfe")
	_, err := LoadDefinition(dir, "a", nil)
	if err == nil || err.Error() != "agents/a/system.md: must be UTF-8 text" {
		t.Errorf("got %v", err)
	}
}

func TestUnreadableAgentsDir(t *testing.T) {
	dir := t.TempDir()
	writeTestFile(t, dir, "agents", "a file, not a directory")
	defs, errs := LoadAll(dir, nil)
	if len(defs) != 0 || len(errs) != 1 {
		t.Fatalf("got %v, %v; want one error", defs, errs)
	}
	if _, err := NewRegistry(dir, nil, nil); err == nil {
		t.Error("NewRegistry succeeded on an unreadable agents directory")
	}
}

// An API key pasted where the variable's name belongs is never repeated
// in the error, which ends up in logs.
func TestKeyNotEchoed(t *testing.T) {
	keys := []string{
		"sk-proj-0123456789abcdefghijklmnopqrstuv",
		"sk-ant-api03-abcdefghijklmnopqrstuvwxyz",
		"Zx9Qw8Er7Ty6Ui5Op4As3Df2Gh1Jk0LzXcVbNm",
		"key with spaces 123",
		"$(cat /secret)",
	}
	for _, key := range keys {
		data := "model:\n  provider: openai\n  name: gpt-4o\n  api_key_env: \"" + key + "\"\n"
		_, err := parseDefinition("agents/a.yaml", []byte(data), "a", nil, nil)
		if err == nil {
			t.Errorf("api_key_env %q accepted", key)
			continue
		}
		if strings.Contains(err.Error(), key) {
			t.Errorf("error repeats the value: %v", err)
		}
	}
	for _, name := range []string{"OPENAI_API_KEY", "my_key", "_K", "GROQ_API_KEY"} {
		data := "model:\n  provider: openai\n  name: gpt-4o\n  api_key_env: " + name + "\n"
		if _, err := parseDefinition("agents/a.yaml", []byte(data), "a", nil, nil); err != nil {
			t.Errorf("api_key_env %q: %v", name, err)
		}
	}
}

func TestFieldErrorFormat(t *testing.T) {
	err := &ConfigError{Errors: []FieldError{
		{File: "agents/a.yaml", Line: 7, Field: "budgets.max_stepz", Msg: "unknown field"},
		{File: "agents/a.yaml", Line: 3, Msg: "mapping values are not allowed in this context"},
		{File: "agents/a.yaml", Msg: "file is larger than 1024 KiB"},
	}}
	want := "agents/a.yaml:7: budgets.max_stepz: unknown field\n" +
		"agents/a.yaml:3: mapping values are not allowed in this context\n" +
		"agents/a.yaml: file is larger than 1024 KiB"
	if got := err.Error(); got != want {
		t.Errorf("got\n%s\nwant\n%s", got, want)
	}
}

func TestClone(t *testing.T) {
	temp, topP := 0.5, 0.9
	d := &Definition{
		ID: "a",
		Model: Model{
			Provider: ProviderOpenAI,
			Name:     "gpt-4o",
			Params: ModelParams{
				Temperature: &temp,
				TopP:        &topP,
				Stop:        []string{"END"},
				Extra:       map[string]any{"nested": map[string]any{"k": []any{1, "two"}}},
			},
			Fallbacks: []Model{{Provider: ProviderEcho, Params: ModelParams{Stop: []string{"x"}}}},
		},
		Tools: ToolPolicy{Allow: []string{"a"}, Deny: []string{"b"}, Ask: []string{"c"}},
	}
	want := &Definition{}
	*want = *d
	c := d.Clone()
	if diff := cmp.Diff(d, c); diff != "" {
		t.Fatalf("clone differs (-orig +clone):\n%s", diff)
	}
	// Change everything reachable from the clone; the original must not move.
	*c.Model.Params.Temperature = 2
	*c.Model.Params.TopP = 0
	c.Model.Params.Stop[0] = "changed"
	c.Model.Params.Extra["nested"].(map[string]any)["k"].([]any)[0] = 99
	c.Model.Fallbacks[0].Params.Stop[0] = "changed"
	c.Tools.Allow[0], c.Tools.Deny[0], c.Tools.Ask[0] = "x", "x", "x"
	if temp != 0.5 || topP != 0.9 || d.Model.Params.Stop[0] != "END" ||
		d.Model.Params.Extra["nested"].(map[string]any)["k"].([]any)[0] != 1 ||
		d.Model.Fallbacks[0].Params.Stop[0] != "x" ||
		d.Tools.Allow[0] != "a" || d.Tools.Deny[0] != "b" || d.Tools.Ask[0] != "c" {
		t.Errorf("changing the clone changed the original: %+v", d)
	}
	if (*Definition)(nil).Clone() != nil {
		t.Error("nil.Clone() != nil")
	}
}

func TestModelChain(t *testing.T) {
	d := &Definition{Model: Model{
		Provider: ProviderOpenAI, Name: "a",
		Fallbacks: []Model{{Provider: ProviderAnthropic, Name: "b"}, {Provider: ProviderEcho, Name: "c"}},
	}}
	var names []string
	for _, m := range d.ModelChain() {
		if len(m.Fallbacks) != 0 {
			t.Errorf("model %s in the chain has fallbacks", m.Name)
		}
		names = append(names, m.Provider+"/"+m.Name)
	}
	if diff := cmp.Diff([]string{"openai/a", "anthropic/b", "echo/c"}, names); diff != "" {
		t.Errorf("chain (-want +got):\n%s", diff)
	}
	if len(d.Model.Fallbacks) != 2 {
		t.Error("ModelChain changed the definition")
	}
}

func TestValidPatterns(t *testing.T) {
	for _, p := range []string{"*", "fs.*", "web_?etch", "[a-z]*", "mcp.github.*", `a\*`} {
		data := "tools:\n  allow: ['" + p + "']\n"
		if _, err := parseDefinition("agents/a.yaml", []byte(data), "a", nil, nil); err != nil {
			t.Errorf("pattern %q: %v", p, err)
		}
	}
}

func TestRetriesBounds(t *testing.T) {
	for _, n := range []int{0, 1, 10} {
		data := "model:\n  provider: echo\n  retries: " + strconv.Itoa(n) + "\n"
		d, err := parseDefinition("agents/a.yaml", []byte(data), "a", nil, nil)
		if err != nil {
			t.Fatalf("retries %d: %v", n, err)
		}
		want := n
		if n == 0 {
			want = DefaultRetries
		}
		if d.Model.Retries != want {
			t.Errorf("retries %d: got %d, want %d", n, d.Model.Retries, want)
		}
	}
}

func TestFloatFieldsRejectNonFinite(t *testing.T) {
	for _, v := range []string{".nan", ".inf", "-.inf"} {
		data := "budgets:\n  max_usd_per_day: " + v + "\n"
		_, err := parseDefinition("agents/a.yaml", []byte(data), "a", nil, nil)
		if err == nil || !strings.Contains(err.Error(), "finite") {
			t.Errorf("max_usd_per_day %s: got %v", v, err)
		}
	}
	if _, err := parseDefinition("agents/a.yaml", []byte("budgets:\n  max_usd_per_day: 1e3\n"), "a", nil, nil); err != nil {
		t.Error(err)
	}
}

func TestLoadAllErrorsIdentifyFiles(t *testing.T) {
	dir := t.TempDir()
	writeTestFile(t, dir, "agents/b.yaml", "bogus: 1\n")
	writeTestFile(t, dir, "agents/a.yaml", "type: nope\n")
	// A dangling symlink: listed, but it cannot be read.
	if err := os.Symlink("missing", filepath.Join(dir, "agents", "c.yaml")); err != nil {
		t.Fatal(err)
	}
	_, errs := LoadAll(dir, nil)
	var got []string
	for _, err := range errs {
		got = append(got, strings.SplitN(err.Error(), ":", 2)[0])
	}
	want := []string{"agents/a.yaml", "agents/b.yaml", "agent"}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Fatalf("error order/prefix (-want +got):\n%s", diff)
	}
	if !strings.Contains(errs[2].Error(), "agents/c.yaml") || !errors.Is(errs[2], fs.ErrNotExist) {
		t.Errorf("I/O error does not name the file or lost its cause: %v", errs[2])
	}
}

func TestEmptyDocuments(t *testing.T) {
	for _, data := range []string{"", "\n", "# only a comment\n", "---\n", "~\n", "null\n", "---\n...\n", "{}\n", "name: x\n---\n"} {
		if _, err := parseDefinition("agents/a.yaml", []byte(data), "a", nil, nil); err != nil {
			t.Errorf("%q: %v", data, err)
		}
	}
}

// Small files that expand enormously through aliases or merge keys are
// refused rather than expanded.
func TestAliasBombs(t *testing.T) {
	var merge strings.Builder
	merge.WriteString("x0: &a0 {")
	for i := range 2000 {
		fmt.Fprintf(&merge, "k%d: 1, ", i)
	}
	merge.WriteString("}\n")
	for i := 1; i < 40; i++ {
		fmt.Fprintf(&merge, "x%d: &a%d {<<: [*a%d, *a%d]}\n", i, i, i-1, i-1)
	}
	merge.WriteString("model: {params: {extra: {<<: *a39}}}\n")

	laughs := "a: &a [x,x,x,x,x,x,x,x,x]\n"
	for c := 'b'; c <= 'j'; c++ {
		prev := string(c - 1)
		laughs += fmt.Sprintf("%c: &%c [*%s,*%s,*%s,*%s,*%s,*%s,*%s,*%s,*%s]\n", c, c, prev, prev, prev, prev, prev, prev, prev, prev, prev)
	}
	// The same, but only in known fields, so that only the size is wrong.
	var inFields strings.Builder
	inFields.WriteString("model: {provider: echo, params: {extra: {a: &a [x,x,x,x,x,x,x,x,x]")
	for c := 'b'; c <= 'j'; c++ {
		prev := string(c - 1)
		fmt.Fprintf(&inFields, ", %c: &%c [*%s,*%s,*%s,*%s,*%s,*%s,*%s,*%s,*%s]", c, c, prev, prev, prev, prev, prev, prev, prev, prev, prev)
	}
	inFields.WriteString("}}}\ntools: {allow: *j}\n")

	for _, tt := range []struct {
		name, data string
		tooLarge   bool // else: refused for its unknown fields, never expanded
	}{
		{"merge", merge.String(), true},
		{"laughs in known fields", inFields.String(), true},
		{"laughs in unknown fields", laughs, false},
	} {
		_, err := parseDefinition("agents/a.yaml", []byte(tt.data), "a", nil, nil)
		if err == nil {
			t.Errorf("%s: accepted", tt.name)
			continue
		}
		if got := strings.Contains(err.Error(), "too large or uses too many aliases"); got != tt.tooLarge {
			t.Errorf("%s: %v", tt.name, err)
		}
	}
}

func TestErrorsCapped(t *testing.T) {
	var b strings.Builder
	for i := range 200 {
		fmt.Fprintf(&b, "unknown%d: 1\n", i)
	}
	_, err := parseDefinition("agents/a.yaml", []byte(b.String()), "a", nil, nil)
	var ce *ConfigError
	if !errors.As(err, &ce) || len(ce.Errors) != maxErrors+1 {
		t.Fatalf("got %v", err)
	}
	if last := ce.Errors[maxErrors].Error(); last != "agents/a.yaml: and 150 more problems" {
		t.Errorf("last error = %q", last)
	}
}

// Tags are lowercase words joined by single hyphens, each once; a bad one
// names its file, line and field.
func TestTags(t *testing.T) {
	d, err := parseDefinition("agents/a.yaml", []byte("tags: [memory-keeper, notes2]\n"), "a", nil, nil)
	if err != nil || !slices.Equal(d.Tags, []string{"memory-keeper", "notes2"}) {
		t.Fatalf("tags %q: %v", d.Tags, err)
	}
	for _, tt := range []struct{ yaml, want string }{
		{"tags: [Memory]\n", `agents/a.yaml:1: tags[0]: invalid tag "Memory"`},
		{"tags:\n  - ok\n  - -x\n", `agents/a.yaml:3: tags[1]: invalid tag "-x"`},
		{"tags: [a--b]\n", `tags[0]: invalid tag "a--b"`},
		{"tags: [x-]\n", `tags[0]: invalid tag "x-"`},
		{"tags: [1st]\n", `tags[0]: invalid tag "1st"`},
		{"tags: [\"has space\"]\n", `tags[0]: invalid tag "has space"`},
		{"tags: [" + strings.Repeat("a", 65) + "]\n", `tags[0]: invalid tag`},
		{"tags: [x, x]\n", `tags[1]: "x" is tagged twice`},
	} {
		if _, err := parseDefinition("agents/a.yaml", []byte(tt.yaml), "a", nil, nil); err == nil || !strings.Contains(err.Error(), tt.want) {
			t.Errorf("%q: %v, want %q", tt.yaml, err, tt.want)
		}
	}
}

// agents.max_contacts left out is the default; 0 is no limit (kept, not
// the default); a negative one is an error naming it.
func TestMaxContacts(t *testing.T) {
	for _, c := range []struct {
		yaml string
		want int
		err  bool
	}{
		{"agents: {max_live: 5}\n", DefaultMaxContacts, false},
		{"agents: {max_contacts: 0}\n", 0, false},
		{"agents: {max_contacts: 3}\n", 3, false},
		{"agents: {max_contacts: -1}\n", 0, true},
	} {
		dir := t.TempDir()
		if err := os.WriteFile(filepath.Join(dir, ConfigFile), []byte(c.yaml), 0o600); err != nil {
			t.Fatal(err)
		}
		cfg, err := LoadConfig(dir)
		switch {
		case c.err:
			if err == nil || !strings.Contains(err.Error(), "agents.max_contacts") {
				t.Errorf("%q: %v, want an error naming agents.max_contacts", c.yaml, err)
			}
		case err != nil:
			t.Errorf("%q: %v", c.yaml, err)
		case cfg.Agents.MaxContacts == nil || *cfg.Agents.MaxContacts != c.want:
			t.Errorf("%q: max_contacts %v, want %d", c.yaml, cfg.Agents.MaxContacts, c.want)
		}
	}
}
