package agent

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"unicode/utf8"
)

// Names inside the data directory.
const (
	ConfigFile = "agentd.yaml"
	AgentsDir  = "agents"
	SystemFile = "system.md"
)

// builtinPrompt is the system prompt of the built-in assistant.
const builtinPrompt = "You are a helpful, friendly assistant. Answer clearly and concisely, " +
	"ask when a request is ambiguous, and say so when you do not know something."

// DataDir returns the data directory: flag if set, else $AGENTD_HOME if
// set, else DefaultDataDir.
func DataDir(flag string) string {
	if flag != "" {
		return flag
	}
	if env := os.Getenv("AGENTD_HOME"); env != "" {
		return env
	}
	return DefaultDataDir
}

// LoadConfig loads dataDir/agentd.yaml. A missing file gives the defaults.
// A file with problems gives a *ConfigError listing all of them.
func LoadConfig(dataDir string) (*Config, error) {
	data, err := readFile(dataDir, ConfigFile)
	if errors.Is(err, fs.ErrNotExist) {
		return DefaultConfig(), nil
	}
	if err != nil {
		return nil, err
	}
	cfg, err := parseConfig(ConfigFile, data)
	if err != nil {
		return nil, err
	}
	cfg.File = filepath.Join(dataDir, ConfigFile)
	return cfg, nil
}

func parseConfig(rel string, data []byte) (*Config, error) {
	var cfg Config
	c := &checker{doc: decodeDocument(rel, data, &cfg)}
	c.config(&cfg)
	if err := c.err(); err != nil {
		return nil, err
	}
	if cfg.Gateway.Listen == "" && c.has("gateway.listen") {
		cfg.Gateway.Listen = GatewayOff // written empty: no TCP
	}
	applyConfigDefaults(&cfg)
	return &cfg, nil
}

// LoadDefinition loads agent id from dataDir/agents/<id>.yaml (and
// agents/<id>/system.md if present), with defaults applied; cfg supplies
// the default model (nil means DefaultConfig). A file with problems gives a
// *ConfigError listing all of them; a missing file gives ErrNotFound,
// except for the built-in assistant when agents/ holds no agent files.
func LoadDefinition(dataDir, id string, cfg *Config) (*Definition, error) {
	if !ValidID(id) {
		return nil, fmt.Errorf("agent: load %q: %w", id, ErrInvalidID)
	}
	if cfg == nil {
		cfg = DefaultConfig()
	}
	def, err := loadFile(dataDir, id, cfg)
	if errors.Is(err, fs.ErrNotExist) {
		if id == BuiltinAgentID {
			if files, lerr := listAgents(dataDir); lerr == nil && files.count == 0 {
				return builtin(dataDir, cfg)
			}
		}
		return nil, fmt.Errorf("agent: load %q: %w", id, ErrNotFound)
	}
	return def, err
}

// LoadAll loads every agent under dataDir/agents. It returns the agents
// that loaded and one error per file that did not (a *ConfigError, or an
// I/O error naming the file), in file order. With no agent files at all,
// the result is the built-in assistant.
func LoadAll(dataDir string, cfg *Config) (map[string]*Definition, []error) {
	res, err := loadAgents(dataDir, cfg)
	if err != nil {
		return nil, []error{err}
	}
	ids := make([]string, 0, len(res.errs))
	for id := range res.errs {
		ids = append(ids, id)
	}
	sort.Strings(ids)
	errs := make([]error, len(ids))
	for i, id := range ids {
		errs[i] = res.errs[id]
	}
	return res.defs, errs
}

// loaded is the state of the agents directory.
type loaded struct {
	defs map[string]*Definition
	errs map[string]error // by agent id (the file name without extension)
}

func (l *loaded) fail(id string, err error) {
	l.errs[id] = errors.Join(l.errs[id], err)
}

// agentFiles is what agents/ holds.
type agentFiles struct {
	count int      // agent files, valid or not
	yaml  []string // ids with a .yaml file
	other []string // other agent files (.yml, bad names), relative to the data directory
	dirs  []string // subdirectories
}

func listAgents(dataDir string) (agentFiles, error) {
	var f agentFiles
	entries, err := os.ReadDir(filepath.Join(dataDir, AgentsDir))
	if errors.Is(err, fs.ErrNotExist) {
		return f, nil
	}
	if err != nil {
		return f, fmt.Errorf("agent: read %s: %w", AgentsDir, err)
	}
	for _, e := range entries {
		name := e.Name()
		switch {
		case strings.HasPrefix(name, "."):
		case e.IsDir():
			f.dirs = append(f.dirs, name)
		case strings.HasSuffix(name, ".yaml"):
			f.count++
			f.yaml = append(f.yaml, strings.TrimSuffix(name, ".yaml"))
		case strings.HasSuffix(name, ".yml"):
			f.count++
			f.other = append(f.other, name)
		}
	}
	return f, nil
}

func loadAgents(dataDir string, cfg *Config) (loaded, error) {
	if cfg == nil {
		cfg = DefaultConfig()
	}
	files, err := listAgents(dataDir)
	if err != nil {
		return loaded{}, err
	}
	res := loaded{defs: map[string]*Definition{}, errs: map[string]error{}}
	for _, name := range files.other {
		id := strings.TrimSuffix(name, ".yml")
		res.fail(id, fileError(path.Join(AgentsDir, name), "agent files must end in .yaml: rename it to %s.yaml", id))
	}
	for _, id := range files.yaml {
		if !ValidID(id) {
			res.fail(id, fileError(path.Join(AgentsDir, id+".yaml"),
				"%q is not a valid agent id: use up to 64 letters, digits, - and _, starting with a letter or digit", id))
			continue
		}
		def, err := loadFile(dataDir, id, cfg)
		if err != nil {
			res.fail(id, err)
			continue
		}
		res.defs[id] = def
	}
	if files.count == 0 {
		def, err := builtin(dataDir, cfg)
		if err != nil {
			res.fail(BuiltinAgentID, err)
		} else {
			res.defs[BuiltinAgentID] = def
		}
	}
	for _, id := range files.dirs {
		if _, ok := res.defs[id]; ok || res.errs[id] != nil || !ValidID(id) {
			continue
		}
		rel := path.Join(AgentsDir, id, SystemFile)
		if _, err := os.Stat(filepath.Join(dataDir, filepath.FromSlash(rel))); err == nil {
			res.fail(id, fileError(rel, "no %s/%s.yaml defines this agent", AgentsDir, id))
		}
	}
	return res, nil
}

// loadFile loads agents/<id>.yaml; the error wraps fs.ErrNotExist if the
// file is missing.
func loadFile(dataDir, id string, cfg *Config) (*Definition, error) {
	rel := path.Join(AgentsDir, id+".yaml")
	data, err := readFile(dataDir, rel)
	if err != nil {
		return nil, err
	}
	sys, err := readSystemPrompt(dataDir, id)
	if err != nil {
		return nil, err
	}
	def, err := parseDefinition(rel, data, id, cfg, sys)
	if err != nil {
		return nil, err
	}
	def.File = filepath.Join(dataDir, filepath.FromSlash(rel))
	return def, nil
}

// systemPrompt is the content of agents/<id>/system.md.
type systemPrompt struct {
	rel  string
	text string
}

func readSystemPrompt(dataDir, id string) (*systemPrompt, error) {
	rel := path.Join(AgentsDir, id, SystemFile)
	data, err := readFile(dataDir, rel)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	if !utf8.Valid(data) {
		return nil, fileError(rel, "must be UTF-8 text")
	}
	return &systemPrompt{rel: rel, text: string(data)}, nil
}

// parseDefinition checks and decodes the agent file rel (the agent id) and
// applies defaults. sys is the agent's system.md, if any.
func parseDefinition(rel string, data []byte, id string, cfg *Config, sys *systemPrompt) (*Definition, error) {
	var def Definition
	c := &checker{doc: decodeDocument(rel, data, &def)}
	if sys != nil {
		if c.has("system_prompt") {
			c.add("system_prompt", "set in both %s and %s; keep one", rel, sys.rel)
		}
		def.SystemPrompt = sys.text
	}
	c.definition(&def, id)
	if err := c.err(); err != nil {
		return nil, err
	}
	applyDefinitionDefaults(&def, id, cfg)
	return &def, nil
}

// builtin returns the built-in assistant, which uses
// agents/assistant/system.md as its prompt if that file exists.
func builtin(dataDir string, cfg *Config) (*Definition, error) {
	def := &Definition{
		Name:         "Assistant",
		Type:         TypePermanent,
		Description:  "Built-in assistant, present until agents/ holds an agent file.",
		SystemPrompt: builtinPrompt,
		Tools:        ToolPolicy{Builtin: DefaultBuiltin()},
	}
	sys, err := readSystemPrompt(dataDir, BuiltinAgentID)
	if err != nil {
		return nil, err
	}
	if sys != nil {
		def.SystemPrompt = sys.text
	}
	applyDefinitionDefaults(def, BuiltinAgentID, cfg)
	return def, nil
}

// readFile reads the file rel (slash-separated, relative to dataDir),
// refusing files larger than maxFileSize. A missing file gives an error
// wrapping fs.ErrNotExist.
func readFile(dataDir, rel string) ([]byte, error) {
	f, err := os.Open(filepath.Join(dataDir, filepath.FromSlash(rel)))
	if err != nil {
		return nil, fmt.Errorf("agent: read %s: %w", rel, err)
	}
	defer f.Close()
	data, err := io.ReadAll(io.LimitReader(f, maxFileSize+1))
	if err != nil {
		return nil, fmt.Errorf("agent: read %s: %w", rel, err)
	}
	if len(data) > maxFileSize {
		return nil, fileError(rel, "file is larger than %d KiB", maxFileSize>>10)
	}
	return data, nil
}

// fileError is a problem with a file as a whole.
func fileError(rel, format string, args ...any) *ConfigError {
	return &ConfigError{Errors: []FieldError{{File: rel, Msg: fmt.Sprintf(format, args...)}}}
}

// Clone returns a deep copy of d.
func (d *Definition) Clone() *Definition {
	if d == nil {
		return nil
	}
	c := *d
	c.Model = d.Model.clone()
	c.Tools.Allow = slices.Clone(d.Tools.Allow)
	c.Tools.Deny = slices.Clone(d.Tools.Deny)
	c.Tools.Ask = slices.Clone(d.Tools.Ask)
	return &c
}

// ModelChain returns the model followed by its fallbacks, in the order they
// are tried. The models share their parameters with d: do not modify them.
func (d *Definition) ModelChain() []Model {
	chain := make([]Model, 0, 1+len(d.Model.Fallbacks))
	first := d.Model
	first.Fallbacks = nil
	return append(append(chain, first), d.Model.Fallbacks...)
}

func (m Model) clone() Model {
	c := m
	if m.Params.Temperature != nil {
		t := *m.Params.Temperature
		c.Params.Temperature = &t
	}
	if m.Params.TopP != nil {
		t := *m.Params.TopP
		c.Params.TopP = &t
	}
	c.Params.Stop = slices.Clone(m.Params.Stop)
	if m.Stream != nil {
		s := *m.Stream
		c.Stream = &s
	}
	if m.Params.Extra != nil {
		c.Params.Extra = cloneValue(m.Params.Extra).(map[string]any)
	}
	if m.Fallbacks != nil {
		c.Fallbacks = make([]Model, len(m.Fallbacks))
		for i, f := range m.Fallbacks {
			c.Fallbacks[i] = f.clone()
		}
	}
	return c
}

// cloneValue deep-copies a free-form YAML value.
func cloneValue(v any) any {
	switch x := v.(type) {
	case map[string]any:
		c := make(map[string]any, len(x))
		for k, e := range x {
			c[k] = cloneValue(e)
		}
		return c
	case map[any]any:
		c := make(map[any]any, len(x))
		for k, e := range x {
			c[k] = cloneValue(e)
		}
		return c
	case []any:
		c := make([]any, len(x))
		for i, e := range x {
			c[i] = cloneValue(e)
		}
		return c
	}
	return v
}
