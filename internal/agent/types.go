// Package agent holds agent definitions and agentd's configuration: the
// files under the data directory (agentd.yaml, agents/<id>.yaml and the
// optional agents/<id>/system.md), their strict validation with errors that
// name file, line and field, and hot reload of agent files.
package agent

import (
	"path"
	"slices"
	"strings"
	"time"

	"go.yaml.in/yaml/v3"
)

// Agent types.
const (
	TypeUser       = "user"
	TypePermanent  = "permanent"
	TypeBackground = "background"
	TypeSubagent   = "subagent"
	TypeCron       = "cron"
	TypeSystem     = "system"
	// TypeSwarm is a template of which each contacting user gets an
	// instance of their own, with its own memory scope.
	TypeSwarm = "swarm"
)

// Types returns the agent types, the one list a definition's type is
// checked against.
func Types() []string {
	return []string{TypeUser, TypePermanent, TypeBackground, TypeSubagent, TypeCron, TypeSystem, TypeSwarm}
}

// Inbox modes: what a message that arrives mid-turn does.
const (
	ModeQueue     = "queue"     // wait for the running turn (default)
	ModeInterrupt = "interrupt" // cancel the running turn, then run
)

// Providers.
const (
	ProviderOpenAI    = "openai"    // OpenAI-compatible Chat Completions (also Ollama, vLLM, llama.cpp, LM Studio)
	ProviderAnthropic = "anthropic" // Anthropic Messages
	ProviderEcho      = "echo"      // built-in offline model that echoes the last message
)

// Definition is one agent, as defined in agents/<id>.yaml.
type Definition struct {
	ID          string `yaml:"id" json:"id"`
	Name        string `yaml:"name" json:"name"`
	Type        string `yaml:"type" json:"type"`
	Description string `yaml:"description" json:"description,omitempty"`
	// Tags address the agent in a chat: "#memory-keeper remember …" goes
	// to the one agent tagged memory-keeper (package command). Each is
	// lowercase letters and digits in words joined by single hyphens
	// (ValidTag).
	Tags         []string   `yaml:"tags" json:"tags,omitempty"`
	Model        Model      `yaml:"model" json:"model"`
	SystemPrompt string     `yaml:"system_prompt" json:"system_prompt,omitempty"`
	Tools        ToolPolicy `yaml:"tools" json:"tools"`
	// ToolProtocol is how the model calls tools: native (the provider's
	// tool calling), xml (actions and outputs written as XML elements in
	// the text, for models without tool calling) or auto (the default:
	// native until the model's server refuses tools, then xml for that
	// model). A model entry's tool_protocol overrides it for that model.
	ToolProtocol string  `yaml:"tool_protocol" json:"tool_protocol,omitempty"`
	Budgets      Budgets `yaml:"budgets" json:"budgets"`
	Memory       Memory  `yaml:"memory" json:"memory"`
	Inbox        Inbox   `yaml:"inbox" json:"inbox"`

	// MCPServers are this agent's own MCP servers, by name; their tools are
	// offered to this agent only.
	MCPServers map[string]MCPServer `yaml:"mcp_servers" json:"mcp_servers,omitempty"`
	// Servers names the node-wide MCP servers (agentd.yaml mcp_servers, or
	// added at run time) this agent uses. Left out: all of them; an empty
	// list: none.
	Servers []string `yaml:"servers" json:"servers,omitempty"`
	// Skills are globs over the names of the skills this agent may load.
	// Left out: every skill; an empty list: none.
	Skills []string `yaml:"skills" json:"skills,omitempty"`
	// Capabilities name capability extensions whose tools, skills,
	// servers and prompt fragment the agent includes.
	Capabilities []string `yaml:"capabilities" json:"capabilities,omitempty"`
	// Extensions says what the agent's extensions tool may change.
	Extensions ExtensionPolicy `yaml:"extensions" json:"extensions,omitzero"`
	// Bootstrap lists tools called when agentd starts (for example
	// registering with an identity server); their results are logged in
	// the session <id>/bootstrap.
	Bootstrap []BootstrapCall `yaml:"bootstrap" json:"bootstrap,omitempty"`
	// Agents says what the agent may do to other agents through the agent
	// tools (which its tool policy must allow as well).
	Agents AgentsPolicy `yaml:"agents" json:"agents,omitzero"`

	// Workspace is the folder the agent's file and exec tools are
	// confined to (default <data dir>/workspace/<id>; a relative path is
	// under the data directory).
	Workspace string `yaml:"workspace" json:"workspace,omitempty"`
	// Sandbox is how exec and process run commands: bwrap (the default),
	// auto or none (SandboxModes).
	Sandbox string `yaml:"sandbox" json:"sandbox,omitempty"`
	// Exec configures the exec and process tools.
	Exec ExecPolicy `yaml:"exec" json:"exec,omitzero"`
	// IdentityServer is the URL of an identity server (an MCP server over
	// streamable HTTP, docs/identity-server.md) the agent registers with
	// at start and logs every message lifecycle to. Machine-level: an
	// agent-written row may not set it.
	IdentityServer string `yaml:"identity_server" json:"identity_server,omitempty"`

	// File is the file the definition was loaded from ("" if built in).
	File string `yaml:"-" json:"file,omitempty"`
	// Builtin marks an agent agentd ships (a built-in extension row, such
	// as the memory keeper): an agent of a file or a person's that shares
	// its tag is the one the tag addresses.
	Builtin bool `yaml:"-" json:"-"`

	// Set on the definitions derived for dynamic agents (instances of a
	// template, see Registry.SetInstances) only, never in a file or row.
	Template string `yaml:"-" json:"-"` // the definition the instance is derived from
	Parent   string `yaml:"-" json:"-"` // the instance's parent agent id ("" none)
	Scope    string `yaml:"-" json:"-"` // its memory scope ("" = ID)
	KeyOwner string `yaml:"-" json:"-"` // whose ed25519 key signs for it ("" = ID)
}

// Pickable reports whether an agent of type typ may be picked when a
// person names none (the only agent, the default one): a system agent
// serves people and agents that address it by its tag.
func Pickable(typ string) bool { return typ != TypeSystem }

// ScopeID returns the memory scope the agent reads and writes: Scope, or
// its ID when it has none.
func (d *Definition) ScopeID() string {
	if d.Scope != "" {
		return d.Scope
	}
	return d.ID
}

// KeyOwnerID returns the agent whose identity key signs for this one:
// KeyOwner, or its ID when it has none.
func (d *Definition) KeyOwnerID() string {
	if d.KeyOwner != "" {
		return d.KeyOwner
	}
	return d.ID
}

// AgentsPolicy says what an agent may do to other agents.
type AgentsPolicy struct {
	// Templates are globs over the definition ids start_background_agent
	// may start an instance of. Left out: the agent's own id only.
	Templates []string `yaml:"templates" json:"templates,omitempty"`
	// Targets are globs over the agent ids and names the agent may
	// message, ask, inspect or stop beyond its own children and parent.
	// Left out: none.
	Targets []string `yaml:"targets" json:"targets,omitempty"`
	// MaxChildren bounds the agent's live children (default: agentd.yaml
	// agents.max_children).
	MaxChildren int `yaml:"max_children" json:"max_children,omitempty"`
	// Detach lets the agent start detached agents (start_background_agent
	// with detached: true): background agents that spend on their own
	// template's budgets, not its turn's, and outlive it. Default false:
	// the agents it starts are its sub-agents.
	Detach bool `yaml:"detach" json:"detach,omitempty"`
}

// ExtensionPolicy says which extension rows an agent's extensions tool
// may change (the tool itself must be allowed by the tool policy).
type ExtensionPolicy struct {
	// Any lets the agent change rows that people or other agents made;
	// by default it changes only rows it created.
	Any bool `yaml:"any" json:"any,omitempty"`
	// Machine lets the agent write rows that start processes or name
	// commands on this machine (an integration's MCP server, an agent's
	// own MCP servers or start-up calls); by default they are refused.
	Machine bool `yaml:"machine" json:"machine,omitempty"`
}

// Model selects a model and how to reach it.
type Model struct {
	Provider  string      `yaml:"provider" json:"provider"`
	Name      string      `yaml:"name" json:"name"`
	BaseURL   string      `yaml:"base_url" json:"base_url,omitempty"`
	APIKeyEnv string      `yaml:"api_key_env" json:"api_key_env,omitempty"` // name of the env var holding the key; never the key
	Params    ModelParams `yaml:"params" json:"params"`
	// Retries is how many attempts a retryable failure gets at this model
	// before the next fallback (default 3).
	Retries int `yaml:"retries" json:"retries,omitempty"`
	// Timeout bounds one model call (default 5m).
	Timeout Duration `yaml:"timeout" json:"timeout,omitempty"`
	// IdleTimeout bounds the wait for the next piece of a response once its
	// headers arrived (default 60s); a stream that stalls longer fails as a
	// transport failure, which is retried.
	IdleTimeout Duration `yaml:"idle_timeout" json:"idle_timeout,omitempty"`
	// Stream asks the server to stream its responses (nil: true). With
	// false, agentd asks for each response whole, for servers that cannot
	// stream (some cannot stream tool calls); see Streams.
	Stream *bool `yaml:"stream" json:"stream,omitempty"`
	// ToolProtocol overrides the agent's tool_protocol for this model
	// ("" keeps the agent's).
	ToolProtocol string `yaml:"tool_protocol" json:"tool_protocol,omitempty"`
	// Fallbacks are tried in order when this model fails for good.
	Fallbacks []Model `yaml:"fallbacks" json:"fallbacks,omitempty"`
}

// Streams reports whether agentd asks this model's server to stream.
func (m *Model) Streams() bool { return m.Stream == nil || *m.Stream }

// ModelParams are sampling parameters.
type ModelParams struct {
	Temperature *float64       `yaml:"temperature" json:"temperature,omitempty"`
	TopP        *float64       `yaml:"top_p" json:"top_p,omitempty"`
	MaxTokens   int            `yaml:"max_tokens" json:"max_tokens,omitempty"`
	Stop        []string       `yaml:"stop" json:"stop,omitempty"`
	Extra       map[string]any `yaml:"extra" json:"extra,omitempty"` // passed through to the provider
}

// ToolPolicy says which tools an agent may call. Entries are globs over tool
// names (path.Match syntax: *, ?, [...]). Deny wins over ask, ask over allow.
// An empty Allow allows every tool that is not Risky; a Risky tool (network,
// commands, files) must be matched by Allow or Ask explicitly.
type ToolPolicy struct {
	Allow []string `yaml:"allow" json:"allow,omitempty"`
	Deny  []string `yaml:"deny" json:"deny,omitempty"`
	Ask   []string `yaml:"ask" json:"ask,omitempty"`
	// Grant are the patterns the agent's capabilities allow (see
	// tool.Policy.Grant); set from them, never in a file.
	Grant []string `yaml:"-" json:"grant,omitempty"`
	// Builtin are globs over the names of the built-in tools the agent is
	// offered (its MCP servers' tools are chosen by Servers and
	// MCPServers); the policy applies to them as to every tool. Left out:
	// every built-in tool; an empty list: none. A fresh agent (agentd
	// init's, the built-in one) has DefaultBuiltin.
	Builtin []string `yaml:"builtin" json:"builtin,omitempty"`
	// Timeout bounds one tool call (default 60s).
	Timeout Duration `yaml:"timeout" json:"timeout,omitempty"`
	// MaxOutputBytes caps what a tool result gives the model (default 64 KiB).
	MaxOutputBytes int `yaml:"max_output_bytes" json:"max_output_bytes,omitempty"`
	// ApprovalTimeout is how long a call matched by Ask waits for a person
	// to grant or deny it before it counts as denied (default 10m).
	ApprovalTimeout Duration `yaml:"approval_timeout" json:"approval_timeout,omitempty"`
}

// MCP transports.
const (
	TransportStdio = "stdio" // a local process speaking over stdin/stdout
	TransportHTTP  = "http"  // streamable HTTP
	TransportSSE   = "sse"   // the legacy HTTP+SSE transport
)

// MCPServer is how to reach one MCP server. Its tools are named
// <server>__<tool>.
type MCPServer struct {
	// Transport is stdio, http or sse; left out, it is stdio when Command
	// is set and http when URL is.
	Transport string `yaml:"transport" json:"transport,omitempty"`
	// Command and Args start a stdio server; it is run directly, never
	// through a shell.
	Command string   `yaml:"command" json:"command,omitempty"`
	Args    []string `yaml:"args" json:"args,omitempty"`
	// Env is added to the server process's environment, which otherwise
	// holds only PATH, HOME, LANG, TMPDIR and the variables PassEnv names.
	Env     map[string]string `yaml:"env" json:"env,omitempty"`
	PassEnv []string          `yaml:"pass_env" json:"pass_env,omitempty"`
	Dir     string            `yaml:"dir" json:"dir,omitempty"`
	// URL is the endpoint of an http or sse server.
	URL string `yaml:"url" json:"url,omitempty"`
	// Headers are sent with every HTTP request; HeadersEnv maps a header
	// to the environment variable holding its value (for secrets).
	Headers    map[string]string `yaml:"headers" json:"headers,omitempty"`
	HeadersEnv map[string]string `yaml:"headers_env" json:"headers_env,omitempty"`
	// AllowNetworks are CIDR ranges an http or sse server may be reached
	// in although the SSRF guard blocks them (loopback, private,
	// link-local ...), e.g. "127.0.0.1/32" for a server on this machine.
	// Empty: none; every connection, redirects included, is checked.
	AllowNetworks []string `yaml:"allow_networks" json:"allow_networks,omitempty"`
	// Kind is the lifecycle kind of the server's tools that declare none in
	// their _meta ("agentd/kind"): model (default), context, action,
	// postprocess or server. Kinds sets it per tool (by the server's name
	// for the tool, without the prefix).
	Kind  string            `yaml:"kind" json:"kind,omitempty"`
	Kinds map[string]string `yaml:"kinds" json:"kinds,omitempty"`
	// Timeout bounds connecting and listing tools (default 30s).
	Timeout Duration `yaml:"timeout" json:"timeout,omitempty"`
	// Disabled servers are not connected.
	Disabled bool `yaml:"disabled" json:"disabled,omitempty"`
}

// EffectiveTransport is s.Transport, or the transport its fields imply.
func (s *MCPServer) EffectiveTransport() string {
	switch {
	case s.Transport != "":
		return s.Transport
	case s.Command != "":
		return TransportStdio
	case s.URL != "":
		return TransportHTTP
	}
	return ""
}

// OffersBuiltin reports whether the agent is offered the built-in tool
// name (see ToolPolicy.Builtin).
func (d *Definition) OffersBuiltin(name string) bool {
	if d.Tools.Builtin == nil {
		return true
	}
	for _, p := range d.Tools.Builtin {
		if !strings.ContainsAny(p, `*?[\`) {
			if p == name { // a name, not a pattern: what path.Match would say
				return true
			}
			continue
		}
		if ok, err := path.Match(p, name); ok && err == nil {
			return true
		}
	}
	return false
}

// UsesServer reports whether the agent uses the node-wide MCP server name.
func (d *Definition) UsesServer(name string) bool {
	return d.Servers == nil || slices.Contains(d.Servers, name)
}

// Embedding providers.
const (
	EmbedHashed = "hashed" // built in, offline, lexical (hashed character n-grams)
	EmbedOpenAI = "openai" // an OpenAI-compatible /embeddings endpoint (OpenAI, Ollama, vLLM ...)
)

// Embeddings selects the embedder of long-term memory.
type Embeddings struct {
	Provider  string `yaml:"provider" json:"provider,omitempty"` // hashed (default) or openai
	Model     string `yaml:"model" json:"model,omitempty"`
	BaseURL   string `yaml:"base_url" json:"base_url,omitempty"`
	APIKeyEnv string `yaml:"api_key_env" json:"api_key_env,omitempty"`
	// Dim is the vector size: the hashed embedder's (default 384), or
	// what to ask an OpenAI model for (0: its own).
	Dim int `yaml:"dim" json:"dim,omitempty"`
}

// BootstrapCall is a tool called when agentd starts.
type BootstrapCall struct {
	Tool string         `yaml:"tool" json:"tool"` // the full name, e.g. identity__register
	Args map[string]any `yaml:"args" json:"args,omitempty"`
}

// Budgets bound one turn, and spending per day. Zero means the default
// (MaxSteps) or no limit (the others).
type Budgets struct {
	MaxSteps        int      `yaml:"max_steps" json:"max_steps,omitempty"`                 // model calls per turn (default 25)
	MaxOutputTokens int      `yaml:"max_output_tokens" json:"max_output_tokens,omitempty"` // output tokens per turn
	MaxUSDPerTurn   float64  `yaml:"max_usd_per_turn" json:"max_usd_per_turn,omitempty"`
	MaxUSDPerDay    float64  `yaml:"max_usd_per_day" json:"max_usd_per_day,omitempty"`
	MaxWallTime     Duration `yaml:"max_wall_time" json:"max_wall_time,omitempty"` // per turn
}

// Memory holds context settings.
type Memory struct {
	// ContextWindow is the model's context window in tokens (default 200000).
	ContextWindow int `yaml:"context_window" json:"context_window,omitempty"`
	// Compaction is how the context is kept inside the window: summarize
	// (default: older turns are folded into a summary the model writes)
	// or retrieve (no summaries: the last RecentTurns turns are in
	// context, and the history tools reach the rest).
	Compaction string `yaml:"compaction" json:"compaction,omitempty"`
	// RecentTurns is how many recent turns stay verbatim (default 10 for
	// retrieve, 4 for summarize).
	RecentTurns int `yaml:"recent_turns" json:"recent_turns,omitempty"`
	// WarnAt and CompactAt are fractions of the window: a warning event
	// when a request grows past WarnAt (default 0.75), compaction past
	// CompactAt (default 0.9).
	WarnAt    float64 `yaml:"warn_at" json:"warn_at,omitempty"`
	CompactAt float64 `yaml:"compact_at" json:"compact_at,omitempty"`
	// SummaryModel writes summaries and session titles (default: the
	// agent's own model).
	SummaryModel *Model `yaml:"summary_model" json:"summary_model,omitempty"`
	// Recall is how many long-term memories are recalled into the context
	// of each turn (default 5; -1: none).
	Recall int `yaml:"recall" json:"recall,omitempty"`
	// Shared lets the agent recall and store memories shared between
	// agents, besides its own.
	Shared bool `yaml:"shared" json:"shared,omitempty"`
	// SearchAll lets the agent search other agents' conversations with
	// the search_all history tool.
	SearchAll bool `yaml:"search_all" json:"search_all,omitempty"`
}

// Compaction modes.
const (
	CompactSummarize = "summarize"
	CompactRetrieve  = "retrieve"
)

// Inbox holds inbox settings.
type Inbox struct {
	Mode string `yaml:"mode" json:"mode,omitempty"` // queue (default) or interrupt
}

// Config is agentd.yaml: settings for the whole node.
type Config struct {
	// MaxConcurrentTurns caps turns running at once across all sessions (default 256).
	MaxConcurrentTurns int `yaml:"max_concurrent_turns" json:"max_concurrent_turns,omitempty"`
	// DefaultModel is used by agents that name no model.
	DefaultModel *Model `yaml:"default_model" json:"default_model,omitempty"`
	// Prices per model name, for cost accounting and USD budgets.
	Prices map[string]Price `yaml:"prices" json:"prices,omitempty"`
	Log    Log              `yaml:"log" json:"log"`
	Store  StoreConfig      `yaml:"store" json:"store"`
	Tools  NodeTools        `yaml:"tools" json:"tools"`
	// Actions configures the action extensions (declarative HTTP tools).
	Actions ActionsConfig `yaml:"actions" json:"actions"`
	// Connectors configures the chat connectors (integration rows that
	// name a platform).
	Connectors ConnectorsConfig `yaml:"connectors" json:"connectors"`
	// MCPServers are MCP servers every agent may use (see
	// Definition.Servers), by name.
	MCPServers map[string]MCPServer `yaml:"mcp_servers" json:"mcp_servers,omitempty"`
	// SkillDirs are folders holding skills, one sub-folder each (default:
	// <data dir>/skills).
	SkillDirs []string `yaml:"skill_dirs" json:"skill_dirs,omitempty"`
	// Embeddings embeds long-term memories for recall.
	Embeddings Embeddings `yaml:"embeddings" json:"embeddings"`
	// Gateway configures the HTTP API on TCP.
	Gateway Gateway `yaml:"gateway" json:"gateway"`
	// Jobs configures the jobs' run history.
	Jobs JobsConfig `yaml:"jobs" json:"jobs"`
	// Agents bounds the agents that agents start and message.
	Agents AgentsConfig `yaml:"agents" json:"agents"`

	// File is the file the config was loaded from ("" if none).
	File string `yaml:"-" json:"file,omitempty"`
}

// Price is a model's price in USD per million tokens.
type Price struct {
	Input  float64 `yaml:"input" json:"input"`
	Output float64 `yaml:"output" json:"output"`
}

// Log configures logging.
type Log struct {
	Level  string `yaml:"level" json:"level,omitempty"`   // debug, info (default), warn, error
	Format string `yaml:"format" json:"format,omitempty"` // text (default) or json
}

// NodeTools configures built-in tools for the whole node.
type NodeTools struct {
	HTTPFetch FetchConfig     `yaml:"http_fetch" json:"http_fetch"`
	WebSearch WebSearchConfig `yaml:"web_search" json:"web_search,omitzero"`
	WebFetch  WebFetchConfig  `yaml:"web_fetch" json:"web_fetch,omitzero"`
}

// FetchConfig configures the http_fetch tool.
type FetchConfig struct {
	// AllowNetworks are CIDR ranges http_fetch may reach even though the
	// SSRF guard blocks them (loopback, private, link-local ...), e.g.
	// "127.0.0.1/32" for a service on this machine. Empty: none.
	AllowNetworks []string `yaml:"allow_networks" json:"allow_networks,omitempty"`
}

// JobsConfig configures the jobs for the whole node (a cluster's
// scheduling node applies its own).
type JobsConfig struct {
	// KeepRuns is how many of each job's newest runs its history keeps
	// at least (default 1000); older ones are pruned every hour.
	KeepRuns int `yaml:"keep_runs" json:"keep_runs,omitempty"`
	// KeepRunsFor, if set, prunes the runs scheduled longer ago than it
	// too, beyond the newest KeepRuns (default 0: no age limit).
	KeepRunsFor Duration `yaml:"keep_runs_for" json:"keep_runs_for,omitempty"`
}

// AgentsConfig bounds the dynamic agents of the whole node (a cluster's
// limits are each node's).
type AgentsConfig struct {
	// MaxHops bounds one chain of agent messages: a message an agent sends
	// carries the hops of the input its turn serves plus one (default 10).
	MaxHops int `yaml:"max_hops" json:"max_hops,omitempty"`
	// MaxDepth bounds sub-agent depth; a top-level agent is depth 0
	// (default 3).
	MaxDepth int `yaml:"max_depth" json:"max_depth,omitempty"`
	// MaxChildren bounds an agent's live children; a definition's
	// agents.max_children overrides it (default 8).
	MaxChildren int `yaml:"max_children" json:"max_children,omitempty"`
	// MaxLive bounds the live background agents and sub-agents together
	// (default 2000).
	MaxLive int `yaml:"max_live" json:"max_live,omitempty"`
	// MaxContacts bounds the live user and swarm instances together: the
	// agents people make on first contact, one per person, which a public
	// bot's every new user makes (default 10000; 0: no limit). Left out
	// it is nil, then DefaultMaxContacts.
	MaxContacts *int `yaml:"max_contacts" json:"max_contacts,omitempty"`
	// AskTimeout is the longest ask_agent waits for an answer (default 2m).
	AskTimeout Duration `yaml:"ask_timeout" json:"ask_timeout,omitempty"`
	// ReportBytes is the longest answer a report carries to the parent;
	// the rest stays in the child's log (default 16384).
	ReportBytes int `yaml:"report_bytes" json:"report_bytes,omitempty"`
}

// ActionsConfig configures the action extensions for the whole node.
type ActionsConfig struct {
	// AllowNetworks are CIDR ranges actions may reach even though the
	// SSRF guard blocks them (loopback, private, link-local ...), e.g.
	// "10.0.0.0/8" for services on the internal network. An action's
	// own allow_hosts cannot open them: the operator does. Empty: none.
	AllowNetworks []string `yaml:"allow_networks" json:"allow_networks,omitempty"`
}

// ConnectorsConfig configures the chat connectors for the whole node.
type ConnectorsConfig struct {
	// AllowNetworks are CIDR ranges a connector may reach even though the
	// SSRF guard blocks them: a self-hosted Bot API server on the
	// internal network, a test server on loopback. Empty: none.
	AllowNetworks []string `yaml:"allow_networks" json:"allow_networks,omitempty"`
}

// StoreConfig configures the store. In agentd.yaml it is a mapping, or
// the URL alone (store: postgres://agentd@db/agentd).
type StoreConfig struct {
	// URL selects the store: "" or "sqlite" for SQLite in the data
	// directory (the default), a postgres:// URL for PostgreSQL. It holds
	// no password: see PasswordEnv.
	URL string `yaml:"url" json:"url,omitempty"`
	// Synchronous is the SQLite synchronous mode: full (default) or normal.
	Synchronous string `yaml:"synchronous" json:"synchronous,omitempty"`
	// PasswordEnv names the environment variable holding the PostgreSQL
	// password; without it, PGPASSWORD or the passfile (~/.pgpass) serve.
	PasswordEnv string `yaml:"password_env" json:"password_env,omitempty"`
	// PoolSize caps the PostgreSQL connections (default 10).
	PoolSize int `yaml:"pool_size" json:"pool_size,omitempty"`
	// StatementTimeout bounds each PostgreSQL statement (default 30s).
	StatementTimeout Duration `yaml:"statement_timeout" json:"statement_timeout,omitempty"`
	// SSLMode is PostgreSQL's sslmode: disable, allow, prefer, require,
	// verify-ca or verify-full; "" keeps the URL's (libpq's default is prefer).
	SSLMode string `yaml:"sslmode" json:"sslmode,omitempty"`
	// LeaseTTL is how long a node's lease on a session lasts unless
	// renewed (PostgreSQL; default 10s): another node takes a dead
	// node's sessions over that long after its last heartbeat.
	LeaseTTL Duration `yaml:"lease_ttl" json:"lease_ttl,omitempty"`
}

// UnmarshalYAML reads a store written as its URL alone or as a mapping.
func (c *StoreConfig) UnmarshalYAML(n *yaml.Node) error {
	if n.Kind == yaml.ScalarNode {
		c.URL = n.Value
		return nil
	}
	type plain StoreConfig
	return n.Decode((*plain)(c))
}

// Postgres reports whether the store is PostgreSQL.
func (c StoreConfig) Postgres() bool { return IsPostgresURL(c.URL) }

// IsPostgresURL reports whether a store URL names PostgreSQL.
func IsPostgresURL(u string) bool {
	return strings.HasPrefix(u, "postgres://") || strings.HasPrefix(u, "postgresql://")
}

// Duration is a time.Duration written as "30s", "5m" in YAML.
type Duration time.Duration

// D returns d as a time.Duration.
func (d Duration) D() time.Duration { return time.Duration(d) }

// MarshalText writes d as "1m30s".
func (d Duration) MarshalText() ([]byte, error) { return []byte(time.Duration(d).String()), nil }

// UnmarshalText parses "1m30s".
func (d *Duration) UnmarshalText(b []byte) error {
	v, err := time.ParseDuration(string(b))
	if err != nil {
		return err
	}
	*d = Duration(v)
	return nil
}
