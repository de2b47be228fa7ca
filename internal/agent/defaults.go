package agent

import "time"

// Defaults applied to fields that are left out (or zero).
const (
	DefaultMaxSteps           = 25
	DefaultRetries            = 3
	DefaultModelTimeout       = 5 * time.Minute
	DefaultIdleTimeout        = 60 * time.Second
	DefaultToolTimeout        = 60 * time.Second
	DefaultMaxOutputBytes     = 64 << 10
	DefaultApprovalTimeout    = 10 * time.Minute
	DefaultContextWindow      = 200000
	DefaultWarnAt             = 0.75
	DefaultCompactAt          = 0.9
	DefaultRecall             = 5
	DefaultEmbedDim           = 384
	DefaultMaxConcurrentTurns = 256
	DefaultLogLevel           = "info"
	DefaultLogFormat          = "text"
	DefaultSynchronous        = "full"
	StoreSQLite               = "sqlite" // store.url of the default store
	DefaultStorePoolSize      = 10
	DefaultStatementTimeout   = 30 * time.Second
	DefaultLeaseTTL           = 10 * time.Second
	DefaultKeepRuns           = 1000
	DefaultMaxHops            = 10
	DefaultMaxDepth           = 3
	DefaultMaxChildren        = 8
	DefaultMaxLive            = 2000
	DefaultMaxContacts        = 10000
	DefaultAskTimeout         = 2 * time.Minute
	DefaultReportBytes        = 16384

	// DefaultDataDir is the data directory when neither --data nor
	// $AGENTD_HOME names one.
	DefaultDataDir = "./agentd-data"
	// BuiltinAgentID is the agent that exists when agents/ holds no agent files.
	BuiltinAgentID = "assistant"
	// EchoModelName is the model name of the built-in echo provider.
	EchoModelName = "echo"
)

// DefaultBuiltin returns the built-in tools a fresh agent is offered
// (ToolPolicy.Builtin of agentd init's agent and of the built-in one): the
// clock, search of its own conversations, the conversation's working
// memory, long-term memory (recall, and remember, which the memory flush
// before compaction needs too) and skill (offered only when a skill may
// be loaded). docs/tools.md gives each tool's cost in tokens.
func DefaultBuiltin() []string {
	return []string{"clock", "search_history", "wm_get", "wm_set", "wm_delete", "recall", "remember", "skill"}
}

// Environment variables read for API keys when a model names none.
const (
	OpenAIKeyEnv    = "OPENAI_API_KEY"
	AnthropicKeyEnv = "ANTHROPIC_API_KEY"
)

// DefaultConfig returns the settings used when agentd.yaml is missing.
func DefaultConfig() *Config {
	c := &Config{}
	applyConfigDefaults(c)
	return c
}

func applyConfigDefaults(c *Config) {
	applyWebDefaults(&c.Tools)
	if c.MaxConcurrentTurns == 0 {
		c.MaxConcurrentTurns = DefaultMaxConcurrentTurns
	}
	if c.Embeddings.Provider == "" {
		c.Embeddings.Provider = EmbedHashed
	}
	if c.Embeddings.Provider == EmbedHashed && c.Embeddings.Dim == 0 {
		c.Embeddings.Dim = DefaultEmbedDim
	}
	if c.DefaultModel != nil {
		if modelIsZero(c.DefaultModel) {
			c.DefaultModel = nil
		} else {
			applyModelDefaults(c.DefaultModel)
		}
	}
	if c.Log.Level == "" {
		c.Log.Level = DefaultLogLevel
	}
	if c.Log.Format == "" {
		c.Log.Format = DefaultLogFormat
	}
	if c.Store.Synchronous == "" {
		c.Store.Synchronous = DefaultSynchronous
	}
	if c.Store.URL == "" {
		c.Store.URL = StoreSQLite
	}
	if c.Store.PoolSize == 0 {
		c.Store.PoolSize = DefaultStorePoolSize
	}
	if c.Store.StatementTimeout == 0 {
		c.Store.StatementTimeout = Duration(DefaultStatementTimeout)
	}
	if c.Store.LeaseTTL == 0 {
		c.Store.LeaseTTL = Duration(DefaultLeaseTTL)
	}
	if c.Jobs.KeepRuns == 0 {
		c.Jobs.KeepRuns = DefaultKeepRuns
	}
	applyAgentsDefaults(&c.Agents)
	applyGatewayDefaults(&c.Gateway)
}

func applyAgentsDefaults(a *AgentsConfig) {
	if a.MaxHops == 0 {
		a.MaxHops = DefaultMaxHops
	}
	if a.MaxDepth == 0 {
		a.MaxDepth = DefaultMaxDepth
	}
	if a.MaxChildren == 0 {
		a.MaxChildren = DefaultMaxChildren
	}
	if a.MaxLive == 0 {
		a.MaxLive = DefaultMaxLive
	}
	if a.MaxContacts == nil {
		n := DefaultMaxContacts
		a.MaxContacts = &n
	}
	if a.AskTimeout == 0 {
		a.AskTimeout = Duration(DefaultAskTimeout)
	}
	if a.ReportBytes == 0 {
		a.ReportBytes = DefaultReportBytes
	}
}

// applyDefinitionDefaults fills in what d leaves out. d must be valid.
func applyDefinitionDefaults(d *Definition, id string, cfg *Config) {
	d.ID = id
	if d.Name == "" {
		d.Name = id
	}
	if d.Type == "" {
		d.Type = TypePermanent
	}
	if modelIsZero(&d.Model) {
		if cfg != nil && cfg.DefaultModel != nil {
			d.Model = cfg.DefaultModel.clone()
		} else {
			d.Model = Model{Provider: ProviderEcho}
		}
	}
	applyModelDefaults(&d.Model)
	if d.Tools.Timeout == 0 {
		d.Tools.Timeout = Duration(DefaultToolTimeout)
	}
	if d.Tools.MaxOutputBytes == 0 {
		d.Tools.MaxOutputBytes = DefaultMaxOutputBytes
	}
	if d.Tools.ApprovalTimeout == 0 {
		d.Tools.ApprovalTimeout = Duration(DefaultApprovalTimeout)
	}
	if d.Budgets.MaxSteps == 0 {
		d.Budgets.MaxSteps = DefaultMaxSteps
	}
	if d.Memory.ContextWindow == 0 {
		d.Memory.ContextWindow = DefaultContextWindow
	}
	if d.Memory.Compaction == "" {
		d.Memory.Compaction = CompactSummarize
	}
	if d.Memory.RecentTurns == 0 {
		d.Memory.RecentTurns = 4
		if d.Memory.Compaction == CompactRetrieve {
			d.Memory.RecentTurns = 10
		}
	}
	if d.Memory.WarnAt == 0 {
		d.Memory.WarnAt = DefaultWarnAt
	}
	if d.Memory.CompactAt == 0 {
		d.Memory.CompactAt = DefaultCompactAt
	}
	if d.Memory.SummaryModel != nil {
		applyModelDefaults(d.Memory.SummaryModel)
	}
	if d.Memory.Recall == 0 {
		d.Memory.Recall = DefaultRecall
	}
	if d.Inbox.Mode == "" {
		d.Inbox.Mode = ModeQueue
	}
}

func applyModelDefaults(m *Model) {
	if m.Provider == ProviderEcho && m.Name == "" {
		m.Name = EchoModelName
	}
	if m.APIKeyEnv == "" {
		switch {
		case m.Provider == ProviderOpenAI && m.BaseURL == "":
			m.APIKeyEnv = OpenAIKeyEnv
		case m.Provider == ProviderAnthropic:
			m.APIKeyEnv = AnthropicKeyEnv
		}
	}
	if m.Retries == 0 {
		m.Retries = DefaultRetries
	}
	if m.Timeout == 0 {
		m.Timeout = Duration(DefaultModelTimeout)
	}
	if m.IdleTimeout == 0 {
		m.IdleTimeout = Duration(DefaultIdleTimeout)
	}
	for i := range m.Fallbacks {
		applyModelDefaults(&m.Fallbacks[i])
	}
}

// modelIsZero reports whether m sets nothing at all (no model section).
func modelIsZero(m *Model) bool {
	return m.Provider == "" && m.Name == "" && m.BaseURL == "" && m.APIKeyEnv == "" &&
		m.Params.Temperature == nil && m.Params.TopP == nil && m.Params.MaxTokens == 0 &&
		len(m.Params.Stop) == 0 && len(m.Params.Extra) == 0 &&
		m.Retries == 0 && m.Timeout == 0 && m.IdleTimeout == 0 && m.Stream == nil && len(m.Fallbacks) == 0
}
