package agent

// The settings of the tools that act on a machine: the workspace the file
// and exec tools are confined to, the sandbox every command runs in, and
// the web tools (docs/tools.md, "Tools that act on a machine").

import "time"

// Sandbox modes (Definition.Sandbox).
const (
	SandboxBwrap = "bwrap" // every command runs in bubblewrap; exec refuses where it is missing (the default)
	SandboxAuto  = "auto"  // bubblewrap where it is installed, else SandboxNone
	SandboxNone  = "none"  // commands run as agentd's user, in the workspace, with the limits alone
)

// Tool protocols (Definition.ToolProtocol, Model.ToolProtocol).
const (
	ToolProtocolAuto   = "auto"   // native until the server refuses tools, then xml (the default)
	ToolProtocolNative = "native" // the provider's tool calling
	ToolProtocolXML    = "xml"    // actions and outputs as XML elements in the model's text
)

// ToolProtocols are the values tool_protocol takes ("" is ToolProtocolAuto).
var ToolProtocols = []string{ToolProtocolAuto, ToolProtocolNative, ToolProtocolXML}

// Protocol returns the tool protocol the agent uses with model m: m's own,
// else the agent's, else ToolProtocolAuto.
func (d *Definition) Protocol(m *Model) string {
	switch {
	case m != nil && m.ToolProtocol != "":
		return m.ToolProtocol
	case d.ToolProtocol != "":
		return d.ToolProtocol
	}
	return ToolProtocolAuto
}

// SandboxModes are the values Definition.Sandbox takes ("" is SandboxBwrap).
var SandboxModes = []string{SandboxBwrap, SandboxAuto, SandboxNone}

// Defaults of the machine tools.
const (
	// WorkspaceDir is the folder under the data directory holding the
	// agents' workspaces, one sub-folder per agent.
	WorkspaceDir = "workspace"

	DefaultExecTimeout     = 2 * time.Minute
	DefaultExecOutputBytes = 32 << 10
	DefaultMaxProcesses    = 4
	DefaultLimitCPU        = 5 * time.Minute
	DefaultLimitMemory     = Size(1 << 30)
	DefaultLimitProcesses  = 128
	DefaultLimitFileSize   = Size(256 << 20)
	DefaultLimitDisk       = Size(1 << 30)
	DefaultLimitTmp        = Size(256 << 20)

	DefaultSearchResults   = 5
	MaxSearchResults       = 20
	DefaultSearchTimeout   = 15 * time.Second
	DefaultWebFetchTimeout = 30 * time.Second
	DefaultWebFetchBytes   = Size(5 << 20)
)

// ExecPolicy configures an agent's exec and process tools.
type ExecPolicy struct {
	// Shell lets the agent run a command through a shell (exec's
	// shell: true, or argv ["sh", "-c", …]); off, argv runs as given and
	// a shell is refused.
	Shell bool `yaml:"shell" json:"shell,omitempty"`
	// Network gives commands the host's network; off (the default), a
	// command has its own network namespace holding only its loopback.
	Network bool `yaml:"network" json:"network,omitempty"`
	// Env names agentd's environment variables a command also gets;
	// besides them it has only PATH, HOME (the workspace), LANG, TERM=dumb
	// and TMPDIR.
	Env []string `yaml:"env" json:"env,omitempty"`
	// Timeout is a command's default and largest timeout (default 2m); a
	// call may ask for less.
	Timeout Duration `yaml:"timeout" json:"timeout,omitempty"`
	// MaxOutputBytes caps what a command's output gives the model, kept
	// as its head and its tail (default 32 KiB).
	MaxOutputBytes int `yaml:"max_output_bytes" json:"max_output_bytes,omitempty"`
	// MaxProcesses bounds the background processes one session runs at
	// once (default 4).
	MaxProcesses int `yaml:"max_processes" json:"max_processes,omitempty"`
	// Limits bound every command's resources.
	Limits Limits `yaml:"limits" json:"limits,omitzero"`
}

// Limits bound the resources of one command and what it starts.
type Limits struct {
	// CPU is the CPU time of each process (default 5m).
	CPU Duration `yaml:"cpu" json:"cpu,omitempty"`
	// Memory bounds the command's memory (a cgroup's where agentd may
	// make one, else each process's address space; default 1GiB).
	Memory Size `yaml:"memory" json:"memory,omitempty"`
	// Processes bounds the processes and threads (default 128).
	Processes int `yaml:"processes" json:"processes,omitempty"`
	// FileSize bounds each file a command writes (default 256MiB).
	FileSize Size `yaml:"file_size" json:"file_size,omitempty"`
	// Disk bounds what a command takes of its file system's free space
	// while it runs (default 1GiB); past it the command is killed.
	Disk Size `yaml:"disk" json:"disk,omitempty"`
	// Tmp is the size of the command's private /tmp (default 256MiB).
	Tmp Size `yaml:"tmp" json:"tmp,omitempty"`
}

// WithDefaults returns l with every unset limit at its default.
func (l Limits) WithDefaults() Limits {
	if l.CPU <= 0 {
		l.CPU = Duration(DefaultLimitCPU)
	}
	if l.Memory <= 0 {
		l.Memory = DefaultLimitMemory
	}
	if l.Processes <= 0 {
		l.Processes = DefaultLimitProcesses
	}
	if l.FileSize <= 0 {
		l.FileSize = DefaultLimitFileSize
	}
	if l.Disk <= 0 {
		l.Disk = DefaultLimitDisk
	}
	if l.Tmp <= 0 {
		l.Tmp = DefaultLimitTmp
	}
	return l
}

// WithDefaults returns p with every unset field at its default.
func (p ExecPolicy) WithDefaults() ExecPolicy {
	if p.Timeout <= 0 {
		p.Timeout = Duration(DefaultExecTimeout)
	}
	if p.MaxOutputBytes <= 0 {
		p.MaxOutputBytes = DefaultExecOutputBytes
	}
	if p.MaxProcesses <= 0 {
		p.MaxProcesses = DefaultMaxProcesses
	}
	p.Limits = p.Limits.WithDefaults()
	return p
}

// SandboxMode returns the agent's sandbox mode, SandboxBwrap when unset.
func (d *Definition) SandboxMode() string {
	if d.Sandbox == "" {
		return SandboxBwrap
	}
	return d.Sandbox
}

// Web search backends (WebSearchConfig.Backend).
const (
	SearchSearXNG = "searxng"
	SearchBrave   = "brave"
	SearchTavily  = "tavily"
)

// SearchBackends are the values WebSearchConfig.Backend takes.
var SearchBackends = []string{SearchSearXNG, SearchBrave, SearchTavily}

// WebSearchConfig configures the web_search tool; without a backend the
// tool is not offered.
type WebSearchConfig struct {
	// Backend is searxng, brave or tavily.
	Backend string `yaml:"backend" json:"backend,omitempty"`
	// URL is the backend's endpoint: a SearXNG instance's base URL
	// (required for searxng), or another API base (tests, proxies).
	URL string `yaml:"url" json:"url,omitempty"`
	// KeyEnv names the environment variable holding the API key (Brave's
	// X-Subscription-Token, Tavily's key); Key may instead hold a secret
	// reference ("${secret:NAME}"). A literal key is refused.
	KeyEnv string `yaml:"key_env" json:"key_env,omitempty"`
	Key    string `yaml:"key" json:"key,omitempty"`
	// Results is how many results a search returns (default 5, at most 20).
	Results int `yaml:"results" json:"results,omitempty"`
	// AllowNetworks are CIDR ranges the backend may be reached in although
	// the SSRF guard blocks them (a SearXNG on this machine: 127.0.0.1/32).
	AllowNetworks []string `yaml:"allow_networks" json:"allow_networks,omitempty"`
	// Timeout bounds one search (default 15s).
	Timeout Duration `yaml:"timeout" json:"timeout,omitempty"`
}

// WebFetchConfig configures the web_fetch tool.
type WebFetchConfig struct {
	// AllowNetworks are CIDR ranges web_fetch may reach although the SSRF
	// guard blocks them. Empty: none.
	AllowNetworks []string `yaml:"allow_networks" json:"allow_networks,omitempty"`
	// Timeout bounds one fetch, redirects and body included (default 30s).
	Timeout Duration `yaml:"timeout" json:"timeout,omitempty"`
	// MaxBytes caps the body read (default 5MiB); the text returned is
	// capped by the agent's tools.max_output_bytes.
	MaxBytes Size `yaml:"max_bytes" json:"max_bytes,omitempty"`
}

// applyWebDefaults sets the web tools' unset fields to their defaults.
func applyWebDefaults(t *NodeTools) {
	if t.WebSearch.Results <= 0 {
		t.WebSearch.Results = DefaultSearchResults
	}
	if t.WebSearch.Timeout <= 0 {
		t.WebSearch.Timeout = Duration(DefaultSearchTimeout)
	}
	if t.WebFetch.Timeout <= 0 {
		t.WebFetch.Timeout = Duration(DefaultWebFetchTimeout)
	}
	if t.WebFetch.MaxBytes <= 0 {
		t.WebFetch.MaxBytes = DefaultWebFetchBytes
	}
}
