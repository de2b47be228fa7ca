// Package web holds the tools that read the web for an agent:
// web_search, which asks a search backend (a SearXNG instance, Brave
// Search or Tavily) and keeps each session's answers for a while, and
// web_fetch, which fetches a page and returns it as readable Markdown
// (PDFs as their text where that is cheap). Every connection goes through
// the SSRF guard (internal/netguard), redirects included; API keys are
// secret references or environment variables' names, resolved at each
// search and never written to an error, a log line or an event.
package web

import (
	"log/slog"
	"net/netip"
	"os"
	"time"

	"agentd/internal/agent"
	"agentd/internal/netguard"
	"agentd/internal/secret"
	"agentd/internal/tool"
)

// Secrets expands the secret references in a string; *secret.Resolver is
// one.
type Secrets interface {
	Expand(s string) (string, []secret.Value, error)
}

// Options configures the web tools.
type Options struct {
	// Search configures web_search; without a Backend it is not offered.
	// Zero fields take agent's defaults (5 results, 15s).
	Search agent.WebSearchConfig
	// Fetch configures web_fetch; zero fields take agent's defaults
	// (30s, 5 MiB).
	Fetch agent.WebFetchConfig
	// Secrets expands a key given as "${secret:NAME}"; nil: such a key
	// is missing.
	Secrets Secrets
	// LookupEnv reads the variable Search.KeyEnv names; default
	// os.LookupEnv.
	LookupEnv func(string) (string, bool)
	// Logger receives a line per search and fetch (never a key); default
	// discards.
	Logger *slog.Logger
	// Now is the clock of the search cache; default time.Now.
	Now func() time.Time
	// CacheEntries bounds the searches kept, all sessions together
	// (default 256); CacheTTL is how long one is kept (default 15m).
	CacheEntries int
	CacheTTL     time.Duration
}

// Tools returns web_fetch, and web_search when o.Search.Backend is set.
// o may be nil.
func Tools(o *Options) []tool.Tool {
	var v Options
	if o != nil {
		v = *o
	}
	if v.LookupEnv == nil {
		v.LookupEnv = os.LookupEnv
	}
	if v.Logger == nil {
		v.Logger = slog.New(slog.DiscardHandler)
	}
	if v.Now == nil {
		v.Now = time.Now
	}
	tools := []tool.Tool{newFetch(&v)}
	if v.Search.Backend != "" {
		tools = append(tools, newSearch(&v))
	}
	return tools
}

// guard returns the SSRF guard loosened by the CIDR ranges allow names;
// a range that does not parse loosens nothing (configuration validation
// reports it).
func guard(allow []string, log *slog.Logger) *netguard.Guard {
	var prefixes []netip.Prefix
	for _, s := range allow {
		p, err := netip.ParsePrefix(s)
		if err != nil {
			if a, err2 := netip.ParseAddr(s); err2 == nil {
				p = netip.PrefixFrom(a, a.BitLen())
			} else {
				log.Warn("web: allow_networks entry ignored", "entry", s, "err", err)
				continue
			}
		}
		prefixes = append(prefixes, p)
	}
	return netguard.New(&netguard.Options{AllowPrefixes: prefixes})
}
