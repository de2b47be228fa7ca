package agent

import (
	"fmt"
	"net/url"

	"agentd/internal/secret"
)

// machine checks a definition's workspace, sandbox and exec fields.
func (c *checker) machine(d *Definition) {
	c.oneOf("sandbox", d.Sandbox, SandboxModes)
	e := &d.Exec
	for i, name := range e.Env {
		if !envNameRE().MatchString(name) {
			c.add(fmt.Sprintf("exec.env[%d]", i), "must be the name of an environment variable, got %q", name)
		}
	}
	c.duration("exec.timeout", e.Timeout)
	c.nonNegative("exec.max_output_bytes", e.MaxOutputBytes)
	c.nonNegative("exec.max_processes", e.MaxProcesses)
	c.duration("exec.limits.cpu", e.Limits.CPU)
	c.nonNegative("exec.limits.processes", e.Limits.Processes)
	for p, v := range map[string]Size{"exec.limits.memory": e.Limits.Memory, "exec.limits.file_size": e.Limits.FileSize,
		"exec.limits.disk": e.Limits.Disk, "exec.limits.tmp": e.Limits.Tmp} {
		if v < 0 || (v == 0 && c.has(p)) {
			c.add(p, "must be positive, such as 512MiB")
		}
	}
	c.identityServer(d.IdentityServer)
}

// identityServer checks identity_server: an http or https URL of an MCP
// server, without credentials (the agent's key is what it trusts).
func (c *checker) identityServer(raw string) {
	if raw == "" {
		return
	}
	u, err := url.Parse(raw)
	switch {
	case err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "":
		c.add("identity_server", "must be an http or https URL, such as http://127.0.0.1:7400/mcp, got %q", raw)
	case u.User != nil:
		c.add("identity_server", "must not hold credentials")
	}
}

// web checks agentd.yaml's web_search and web_fetch.
func (c *checker) web(t *NodeTools) {
	s := &t.WebSearch
	c.oneOf("tools.web_search.backend", s.Backend, SearchBackends)
	switch {
	case s.Backend == SearchSearXNG && s.URL == "":
		c.add("tools.web_search.url", "required for searxng: your instance's base URL, such as http://127.0.0.1:8888")
	case (s.Backend == SearchBrave || s.Backend == SearchTavily) && s.KeyEnv == "" && s.Key == "":
		c.add("tools.web_search.key_env", "required for %s: the environment variable holding the API key", s.Backend)
	}
	if s.URL != "" {
		c.baseURL("tools.web_search.url", s.URL)
	}
	if s.KeyEnv != "" {
		c.envName("tools.web_search.key_env", s.KeyEnv, "BRAVE_API_KEY")
	}
	if s.Key != "" && !isSecretRef(s.Key) {
		c.add("tools.web_search.key", `must be one secret reference such as "${secret:BRAVE_API_KEY}", never the key itself; or use key_env`)
	}
	if s.Results < 0 || s.Results > MaxSearchResults {
		c.add("tools.web_search.results", "must be between 1 and %d, got %d", MaxSearchResults, s.Results)
	}
	c.duration("tools.web_search.timeout", s.Timeout)
	c.cidrs("tools.web_search.allow_networks", s.AllowNetworks)
	c.cidrs("tools.web_fetch.allow_networks", t.WebFetch.AllowNetworks)
	c.duration("tools.web_fetch.timeout", t.WebFetch.Timeout)
	if t.WebFetch.MaxBytes < 0 {
		c.add("tools.web_fetch.max_bytes", "must be positive, such as 5MiB")
	}
}

// isSecretRef reports whether s is exactly one reference, "${secret:NAME}"
// or "${env:NAME}".
func isSecretRef(s string) bool {
	parts, err := secret.Parse(s)
	return err == nil && len(parts) == 1 && parts[0].Ref.Kind != ""
}
