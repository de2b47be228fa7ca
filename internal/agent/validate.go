package agent

import (
	"fmt"
	"net/netip"
	"net/url"
	"path"
	"regexp"
	"slices"
	"sort"
	"strings"
	"sync"
	"time"
	"unicode"

	"agentd/internal/store"
)

var (
	idRE = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9_-]{0,63}$`) })
	// tagRE is what an agent's tag must look like (#memory-keeper).
	tagRE     = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`^[a-z][a-z0-9]*(-[a-z0-9]+)*$`) })
	envNameRE = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_]*$`) })
	// serverRE is what an MCP server name must look like: it prefixes its
	// tools' names as <server>__<tool>.
	serverRE = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`^[A-Za-z0-9]([A-Za-z0-9-]|_[A-Za-z0-9-]){0,31}$`) })
)

// ValidServerName reports whether name can name an MCP server: 1 to 32
// letters, digits, '-' and single '_', starting with a letter or digit.
func ValidServerName(name string) bool { return len(name) <= 32 && serverRE().MatchString(name) }

// ValidTag reports whether tag can address an agent (#tag): 1 to 64
// lowercase letters, digits and single hyphens, starting with a letter
// and not ending with a hyphen.
func ValidTag(tag string) bool { return len(tag) <= 64 && tagRE().MatchString(tag) }

// Accepted values of the enumerated fields.
var (
	providers   = []string{ProviderOpenAI, ProviderAnthropic, ProviderEcho}
	inboxModes  = []string{ModeQueue, ModeInterrupt}
	logLevels   = []string{"debug", "info", "warn", "error"}
	logFormats  = []string{"text", "json"}
	syncModes   = []string{"full", "normal"}
	transports  = []string{TransportStdio, TransportHTTP, TransportSSE}
	toolKinds   = []string{"model", "context", "action", "postprocess", "server"}
	keyPrefixes = []string{"sk-", "sk_", "xai-", "gsk_", "AIza", "hf_", "ghp_", "github_pat_"}
)

// Limits of the numeric fields.
const (
	maxRetries   = 10
	maxTemp      = 2.0
	maxTopP      = 1.0
	minTurnLimit = 1
	// maxErrors is the most problems reported for one file.
	maxErrors = 50
)

// ValidID reports whether id can name an agent: 1 to 64 letters, digits,
// '-' and '_', starting with a letter or digit.
func ValidID(id string) bool { return idRE().MatchString(id) }

// checker validates decoded values, reporting each problem at the line of
// the field it is about.
type checker struct {
	doc *document
}

// err returns every problem found in the file, or nil.
func (c *checker) err() error {
	if len(c.doc.errs) == 0 {
		return nil
	}
	errs := slices.Clone(c.doc.errs)
	sort.SliceStable(errs, func(i, j int) bool { return errs[i].Line < errs[j].Line })
	if len(errs) > maxErrors {
		more := FieldError{File: c.doc.file, Msg: fmt.Sprintf("and %d more problems", len(errs)-maxErrors)}
		errs = append(errs[:maxErrors], more)
	}
	return &ConfigError{Errors: errs}
}

// has reports whether the file sets field p (to something other than null).
func (c *checker) has(p string) bool {
	_, ok := c.doc.lines[p]
	return ok
}

// add reports a problem with field p, unless p already has a structural error.
func (c *checker) add(p, format string, args ...any) {
	for _, b := range c.doc.bad {
		if b == "" || p == b || strings.HasPrefix(p, b+".") || strings.HasPrefix(p, b+"[") {
			return
		}
	}
	c.doc.add(c.line(p), p, fmt.Sprintf(format, args...))
}

// line finds the line of field p, or of its nearest ancestor in the file.
func (c *checker) line(p string) int {
	for p != "" {
		if l, ok := c.doc.lines[p]; ok {
			return l
		}
		p = parentPath(p)
	}
	return 1
}

func parentPath(p string) string {
	if strings.HasSuffix(p, "]") {
		if i := strings.LastIndexByte(p, '['); i > 0 {
			return p[:i]
		}
	}
	if i := strings.LastIndexByte(p, '.'); i >= 0 {
		return p[:i]
	}
	return ""
}

func (c *checker) definition(d *Definition, id string) {
	if d.ID != "" && d.ID != id {
		c.add("id", "must match the file name %q, got %q", id, d.ID)
	}
	c.oneOf("type", d.Type, Types())
	c.oneOf("tool_protocol", d.ToolProtocol, ToolProtocols)
	if d.Type == TypeSystem && len(d.Tags) == 0 {
		c.add("tags", "a system agent needs at least one tag: it is addressed by it (#tag)")
	}
	for i, tag := range d.Tags {
		switch {
		case !ValidTag(tag):
			c.add(fmt.Sprintf("tags[%d]", i), "invalid tag %q: want lowercase letters and digits in words joined by single hyphens, such as memory-keeper", tag)
		case slices.Contains(d.Tags[:i], tag):
			c.add(fmt.Sprintf("tags[%d]", i), "%q is tagged twice", tag)
		}
	}
	if !modelIsZero(&d.Model) {
		c.model("model", &d.Model, true)
	}
	c.tools("tools", &d.Tools)
	c.nonNegative("budgets.max_steps", d.Budgets.MaxSteps)
	c.nonNegative("budgets.max_output_tokens", d.Budgets.MaxOutputTokens)
	c.nonNegativeFloat("budgets.max_usd_per_turn", d.Budgets.MaxUSDPerTurn)
	c.nonNegativeFloat("budgets.max_usd_per_day", d.Budgets.MaxUSDPerDay)
	c.duration("budgets.max_wall_time", d.Budgets.MaxWallTime)
	c.nonNegative("memory.context_window", d.Memory.ContextWindow)
	c.oneOf("memory.compaction", d.Memory.Compaction, []string{CompactSummarize, CompactRetrieve})
	c.nonNegative("memory.recent_turns", d.Memory.RecentTurns)
	for _, f := range []struct {
		p string
		v float64
	}{{"memory.warn_at", d.Memory.WarnAt}, {"memory.compact_at", d.Memory.CompactAt}} {
		if f.v < 0 || f.v > 1 {
			c.add(f.p, "must be a fraction between 0 and 1, got %v", f.v)
		}
	}
	if m := d.Memory.SummaryModel; m != nil && !modelIsZero(m) {
		c.model("memory.summary_model", m, false)
	}
	if d.Memory.Recall < -1 {
		c.add("memory.recall", "must be -1 (none), 0 (the default) or more, got %d", d.Memory.Recall)
	}
	c.oneOf("inbox.mode", d.Inbox.Mode, inboxModes)
	c.machine(d)
	c.agentsPolicy("agents", &d.Agents)
	c.servers("mcp_servers", d.MCPServers)
	for i, name := range d.Servers {
		if !ValidServerName(name) {
			c.add(fmt.Sprintf("servers[%d]", i), "invalid server name %q", name)
		}
	}
	c.globs("skills", d.Skills)
	for i, name := range d.Capabilities {
		if !ValidID(strings.ReplaceAll(name, ".", "_")) {
			c.add(fmt.Sprintf("capabilities[%d]", i), "invalid capability name %q", name)
		}
	}
	for i, b := range d.Bootstrap {
		if b.Tool == "" {
			c.add(fmt.Sprintf("bootstrap[%d].tool", i), "required: the tool's full name, such as identity__register")
		}
	}
}

// servers checks MCP server definitions.
func (c *checker) servers(p string, m map[string]MCPServer) {
	names := make([]string, 0, len(m))
	for name := range m {
		names = append(names, name)
	}
	sort.Strings(names)
	for _, name := range names {
		s := m[name]
		sp := p + "." + name
		if !ValidServerName(name) {
			c.add(sp, "invalid server name %q: want 1 to 32 letters, digits, '-' or single '_'", name)
		}
		c.oneOf(sp+".transport", s.Transport, transports)
		switch t := s.EffectiveTransport(); {
		case t == "":
			c.add(sp, "set command (a stdio server) or url (an HTTP server)")
		case t == TransportStdio && s.Command == "":
			c.add(sp+".command", "required for a stdio server (or set url for an HTTP one)")
		case t == TransportStdio && s.URL != "":
			c.add(sp+".url", "a stdio server has a command, not a url")
		case t != TransportStdio && t != "" && s.URL == "":
			c.add(sp+".url", "required for an %s server", t)
		case t != TransportStdio && s.Command != "":
			c.add(sp+".command", "an %s server has a url, not a command", t)
		}
		if s.URL != "" {
			if u, err := url.Parse(s.URL); err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
				// The value is not repeated: a URL may carry credentials.
				c.add(sp+".url", "must be an http:// or https:// URL with a host")
			}
		}
		for i, n := range s.AllowNetworks {
			fp := fmt.Sprintf("%s.allow_networks[%d]", sp, i)
			if _, err := netip.ParsePrefix(n); err != nil {
				c.add(fp, "must be a CIDR range such as 127.0.0.1/32, got %q", n)
			} else if s.EffectiveTransport() == TransportStdio {
				c.add(fp, "only an http or sse server connects to a network")
			}
		}
		for i, v := range s.PassEnv {
			c.envName(fmt.Sprintf("%s.pass_env[%d]", sp, i), v, "GITHUB_TOKEN")
		}
		for h, v := range s.HeadersEnv {
			c.envName(sp+".headers_env."+h, v, "API_TOKEN")
		}
		c.oneOf(sp+".kind", s.Kind, toolKinds)
		for t, k := range s.Kinds {
			c.oneOf(sp+".kinds."+t, k, toolKinds)
		}
		c.duration(sp+".timeout", s.Timeout)
	}
}

// globs checks a list of path.Match patterns.
func (c *checker) globs(p string, patterns []string) {
	for i, pat := range patterns {
		fp := fmt.Sprintf("%s[%d]", p, i)
		if pat == "" {
			c.add(fp, "must not be empty")
			continue
		}
		if _, err := path.Match(pat, ""); err != nil {
			c.add(fp, "invalid pattern %q: %v", pat, err)
		}
	}
}

func (c *checker) config(cfg *Config) {
	if (cfg.MaxConcurrentTurns != 0 || c.has("max_concurrent_turns")) && cfg.MaxConcurrentTurns < minTurnLimit {
		c.add("max_concurrent_turns", "must be at least %d, got %d", minTurnLimit, cfg.MaxConcurrentTurns)
	}
	if cfg.DefaultModel != nil && !modelIsZero(cfg.DefaultModel) {
		c.model("default_model", cfg.DefaultModel, true)
	}
	names := make([]string, 0, len(cfg.Prices))
	for name := range cfg.Prices {
		names = append(names, name)
	}
	sort.Strings(names)
	for _, name := range names {
		p := cfg.Prices[name]
		if name == "" {
			c.add("prices", "model names must not be empty")
		}
		c.nonNegativeFloat("prices."+name+".input", p.Input)
		c.nonNegativeFloat("prices."+name+".output", p.Output)
	}
	c.oneOf("log.level", cfg.Log.Level, logLevels)
	c.oneOf("log.format", cfg.Log.Format, logFormats)
	c.oneOf("store.synchronous", cfg.Store.Synchronous, syncModes)
	c.store("store", cfg.Store)
	c.servers("mcp_servers", cfg.MCPServers)
	e := cfg.Embeddings
	c.oneOf("embeddings.provider", e.Provider, []string{EmbedHashed, EmbedOpenAI})
	if e.Provider == EmbedOpenAI && e.Model == "" {
		c.add("embeddings.model", "required for the openai provider, e.g. text-embedding-3-small or nomic-embed-text")
	}
	if e.BaseURL != "" {
		c.baseURL("embeddings.base_url", e.BaseURL)
	}
	if e.APIKeyEnv != "" {
		c.envName("embeddings.api_key_env", e.APIKeyEnv, "OPENAI_API_KEY")
	}
	c.nonNegative("embeddings.dim", e.Dim)
	c.gateway(&cfg.Gateway)
	c.cidrs("tools.http_fetch.allow_networks", cfg.Tools.HTTPFetch.AllowNetworks)
	c.web(&cfg.Tools)
	c.cidrs("actions.allow_networks", cfg.Actions.AllowNetworks)
	c.cidrs("connectors.allow_networks", cfg.Connectors.AllowNetworks)
	c.agentsConfig("agents", &cfg.Agents)
	c.nonNegative("jobs.keep_runs", cfg.Jobs.KeepRuns)
	if cfg.Jobs.KeepRunsFor < 0 || (cfg.Jobs.KeepRunsFor > 0 && cfg.Jobs.KeepRunsFor.D() < time.Hour) {
		c.add("jobs.keep_runs_for", "must be at least 1h")
	}
}

// agentsPolicy checks a definition's agents block, at path p: its
// globs and its children limit.
func (c *checker) agentsPolicy(p string, a *AgentsPolicy) {
	for _, l := range []struct {
		name  string
		globs []string
	}{{"templates", a.Templates}, {"targets", a.Targets}} {
		for i, g := range l.globs {
			if _, err := path.Match(g, ""); err != nil || g == "" {
				c.add(fmt.Sprintf("%s.%s[%d]", p, l.name, i), "must be an agent id or a glob such as support-*, got %q", g)
			}
		}
	}
	c.nonNegative(p+".max_children", a.MaxChildren)
}

// agentsConfig checks agentd.yaml's agents limits, at path p.
func (c *checker) agentsConfig(p string, a *AgentsConfig) {
	c.nonNegative(p+".max_hops", a.MaxHops)
	c.nonNegative(p+".max_depth", a.MaxDepth)
	c.nonNegative(p+".max_children", a.MaxChildren)
	c.nonNegative(p+".max_live", a.MaxLive)
	if a.MaxContacts != nil {
		c.nonNegative(p+".max_contacts", *a.MaxContacts)
	}
	c.duration(p+".ask_timeout", a.AskTimeout)
	c.nonNegative(p+".report_bytes", a.ReportBytes)
	if a.ReportBytes > store.MaxInstanceResult {
		c.add(p+".report_bytes", "must be at most %d (an instance's result is cut there), got %d", store.MaxInstanceResult, a.ReportBytes)
	}
}

// cidrs checks that each of list, at path p, is a CIDR range.
func (c *checker) cidrs(p string, list []string) {
	for i, n := range list {
		if _, err := netip.ParsePrefix(n); err != nil {
			c.add(fmt.Sprintf("%s[%d]", p, i), "must be a CIDR range such as 127.0.0.1/32, got %q", n)
		}
	}
}

// model checks m at path p; top is false for a fallback, which may not
// have fallbacks of its own.
func (c *checker) model(p string, m *Model, top bool) {
	switch {
	case m.Provider == "":
		c.add(p+".provider", "required: %s", orList(providers))
	case !slices.Contains(providers, m.Provider):
		c.add(p+".provider", "must be %s, got %q", orList(providers), m.Provider)
	case m.Name == "" && m.Provider != ProviderEcho:
		c.add(p+".name", "required for provider %s", m.Provider)
	}
	if m.BaseURL != "" {
		c.baseURL(p+".base_url", m.BaseURL)
	}
	if m.APIKeyEnv != "" {
		example := OpenAIKeyEnv
		if m.Provider == ProviderAnthropic {
			example = AnthropicKeyEnv
		}
		c.envName(p+".api_key_env", m.APIKeyEnv, example)
	}
	if t := m.Params.Temperature; t != nil && !(*t >= 0 && *t <= maxTemp) {
		c.add(p+".params.temperature", "must be between 0 and %v, got %v", maxTemp, *t)
	}
	if t := m.Params.TopP; t != nil && !(*t >= 0 && *t <= maxTopP) {
		c.add(p+".params.top_p", "must be between 0 and %v, got %v", maxTopP, *t)
	}
	c.nonNegative(p+".params.max_tokens", m.Params.MaxTokens)
	for i, s := range m.Params.Stop {
		if s == "" {
			c.add(fmt.Sprintf("%s.params.stop[%d]", p, i), "must not be empty")
		}
	}
	if m.Retries < 0 || m.Retries > maxRetries {
		c.add(p+".retries", "must be between 0 and %d, got %d", maxRetries, m.Retries)
	}
	c.duration(p+".timeout", m.Timeout)
	c.duration(p+".idle_timeout", m.IdleTimeout)
	c.oneOf(p+".tool_protocol", m.ToolProtocol, ToolProtocols)
	if !top && len(m.Fallbacks) > 0 {
		c.add(p+".fallbacks", "a fallback cannot have fallbacks of its own")
		return
	}
	for i := range m.Fallbacks {
		c.model(fmt.Sprintf("%s.fallbacks[%d]", p, i), &m.Fallbacks[i], false)
	}
}

func (c *checker) baseURL(p, s string) {
	u, err := url.Parse(s)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		c.add(p, "must be an http or https URL such as http://localhost:11434/v1, got %q", s)
		return
	}
	if u.User != nil {
		c.add(p, "must not contain a user name or password; put the API key in an environment variable and name it in api_key_env")
	}
}

// sslModes are PostgreSQL's sslmode values.
var sslModes = []string{"disable", "allow", "prefer", "require", "verify-ca", "verify-full"}

// store checks the store's settings: a PostgreSQL URL names no password
// (the file may be shared; the password stays in the environment or a
// passfile).
func (c *checker) store(p string, s StoreConfig) {
	if s.URL != "" && s.URL != "sqlite" {
		u, err := url.Parse(s.URL)
		switch {
		case !IsPostgresURL(s.URL) || err != nil:
			c.add(p+".url", "must be sqlite or a postgres:// URL such as postgres://agentd@db.example.com/agentd")
		case u.User != nil && hasPassword(u):
			c.add(p+".url", "must not contain a password; put it in an environment variable and name it in password_env, or in PGPASSWORD or a passfile (~/.pgpass)")
		case u.Query().Has("password"):
			c.add(p+".url", "must not contain a password; put it in an environment variable and name it in password_env, or in PGPASSWORD or a passfile (~/.pgpass)")
		}
	}
	if s.PasswordEnv != "" {
		c.envName(p+".password_env", s.PasswordEnv, "AGENTD_PGPASSWORD")
	}
	c.nonNegative(p+".pool_size", s.PoolSize)
	if s.StatementTimeout < 0 {
		c.add(p+".statement_timeout", "must not be negative")
	}
	if s.LeaseTTL < 0 || (s.LeaseTTL > 0 && s.LeaseTTL.D() < 300*time.Millisecond) {
		c.add(p+".lease_ttl", "must be at least 300ms")
	}
	c.oneOf(p+".sslmode", s.SSLMode, sslModes)
}

func hasPassword(u *url.URL) bool {
	_, ok := u.User.Password()
	return ok
}

// envName checks the name of the environment variable holding an API key.
// The value is never echoed: it may be a key pasted in by mistake. example
// is a variable name to suggest.
func (c *checker) envName(p, s, example string) {
	if looksLikeKey(s) {
		c.add(p, "looks like an API key; put the key in an environment variable (export %s=...) and write the variable's name here, never the key", example)
		return
	}
	if !envNameRE().MatchString(s) {
		if name := strings.Trim(strings.TrimPrefix(s, "$"), "{}"); strings.HasPrefix(s, "$") && envNameRE().MatchString(name) {
			c.add(p, "write the variable's name without $: %s", name)
			return
		}
		c.add(p, "must be the name of an environment variable (letters, digits and _, not starting with a digit), such as %s", example)
	}
}

// looksLikeKey reports whether s looks like an API key rather than the
// name of a variable holding one.
func looksLikeKey(s string) bool {
	for _, pre := range keyPrefixes {
		if strings.HasPrefix(s, pre) {
			return true
		}
	}
	var lower, upper, digit bool
	for _, r := range s {
		switch {
		case unicode.IsLower(r):
			lower = true
		case unicode.IsUpper(r):
			upper = true
		case unicode.IsDigit(r):
			digit = true
		}
	}
	return len(s) >= 32 && lower && upper && digit
}

func (c *checker) tools(p string, t *ToolPolicy) {
	c.globs(p+".allow", t.Allow)
	c.globs(p+".deny", t.Deny)
	c.globs(p+".ask", t.Ask)
	c.globs(p+".builtin", t.Builtin)
	c.duration(p+".timeout", t.Timeout)
	c.duration(p+".approval_timeout", t.ApprovalTimeout)
	c.nonNegative(p+".max_output_bytes", t.MaxOutputBytes)
}

// duration checks a duration: left out (zero) means the default; written,
// it must be positive.
func (c *checker) duration(p string, d Duration) {
	if d < 0 || (d == 0 && c.has(p)) {
		c.add(p, "must be positive, got %s", time.Duration(d))
	}
}

func (c *checker) nonNegative(p string, v int) {
	if v < 0 {
		c.add(p, "must not be negative, got %d", v)
	}
}

func (c *checker) nonNegativeFloat(p string, v float64) {
	if !(v >= 0) {
		c.add(p, "must not be negative, got %v", v)
	}
}

// oneOf checks an enumerated field; "" means the default.
func (c *checker) oneOf(p, v string, allowed []string) {
	if v != "" && !slices.Contains(allowed, v) {
		c.add(p, "must be %s, got %q", orList(allowed), v)
	}
}

// orList formats a, b or c.
func orList(vs []string) string {
	if len(vs) == 1 {
		return vs[0]
	}
	return strings.Join(vs[:len(vs)-1], ", ") + " or " + vs[len(vs)-1]
}
