package doctor

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"maps"
	"net"
	"net/url"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"agentd/internal/agent"
	"agentd/internal/model"
	"agentd/internal/model/anthropic"
	"agentd/internal/model/openai"
)

// agents checks agentd.yaml and every agent file, and returns the
// configuration and the agents that load (nil when agentd.yaml does not).
func (d *doctor) agents() (*agent.Config, []*agent.Definition) {
	cfg, err := agent.LoadConfig(d.dir)
	if err != nil {
		d.r.add("agent", agent.ConfigFile, Fail, err.Error(), "fix "+filepath.Join(d.dir, agent.ConfigFile)+": agentd does not start until it loads")
		return nil, nil
	}
	reg, err := agent.NewRegistry(d.dir, cfg, &agent.RegistryOptions{Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		d.r.add("agent", agent.AgentsDir+"/", Fail, err.Error(), "")
		return cfg, nil
	}
	defs := reg.List()
	for _, def := range defs {
		file := "built in (no agent files)"
		if def.File != "" {
			file = relTo(d.dir, def.File)
		}
		d.r.add("agent", def.ID, OK, file, "")
	}
	errs := reg.Errors()
	for _, id := range slices.Sorted(maps.Keys(errs)) {
		d.r.add("agent", id, Fail, errs[id].Error(),
			"fix the file: until it loads, a running agentd keeps the agent's last good definition, and a starting one goes without the agent")
	}
	return cfg, defs
}

// relTo is p relative to dir when it is inside it.
func relTo(dir, p string) string {
	if r, err := filepath.Rel(dir, p); err == nil && !strings.HasPrefix(r, "..") {
		return r
	}
	return p
}

// models checks each model the agents use (fallbacks too), once each: its
// API key, that its host answers, and, with a Prober, a one-token call.
func (d *doctor) models(ctx context.Context, defs []*agent.Definition) {
	seen := map[string]bool{}
	var visit func(m agent.Model, who string)
	visit = func(m agent.Model, who string) {
		k := m.Provider + "\x00" + m.Name + "\x00" + m.BaseURL + "\x00" + m.APIKeyEnv
		if !seen[k] {
			seen[k] = true
			d.model(ctx, m, who)
		}
		for _, f := range m.Fallbacks {
			visit(f, who+" (fallback)")
		}
	}
	for _, def := range defs {
		visit(def.Model, def.ID)
	}
}

// modelName names a model for a person.
func modelName(m agent.Model) string {
	if m.Provider == agent.ProviderEcho {
		return "echo (built in)"
	}
	s := m.Provider + " " + m.Name
	if m.BaseURL != "" {
		s += " at " + m.BaseURL
	}
	return s
}

func (d *doctor) model(ctx context.Context, m agent.Model, who string) {
	const area = "model"
	name := modelName(m)
	if m.Provider == agent.ProviderEcho {
		d.r.add(area, name, Warn, "the built-in echo model (used by "+who+") repeats messages",
			"for a real model, export OPENAI_API_KEY or ANTHROPIC_API_KEY and set model.provider and model.name in agents/"+who+".yaml, or model.base_url to a local server")
		return
	}
	if m.APIKeyEnv != "" && d.o.Env(m.APIKeyEnv) == "" {
		d.r.add(area, name, Fail, m.APIKeyEnv+" is not set in this environment (used by "+who+")",
			"export "+m.APIKeyEnv+"=… where agentd serve runs (the systemd unit reads it from "+filepath.Join(d.dir, "agentd.env")+")")
		return
	}
	host, err := modelHost(m)
	if err != nil {
		d.r.add(area, name, Fail, err.Error(), "fix model.base_url of "+who)
		return
	}
	dctx, cancel := context.WithTimeout(ctx, d.o.Timeout)
	c, err := d.o.Dial(dctx, "tcp", host)
	cancel()
	if err != nil {
		d.r.add(area, name, Fail, fmt.Sprintf("%s does not answer: %v", host, err),
			"check the address and that the server runs (a local server: is it started? a remote API: is the network up, a proxy needed?)")
		return
	}
	c.Close()
	if d.o.Prober == nil {
		d.r.add(area, name, OK, host+" answers (--probe makes a one-token call)", "")
		return
	}
	pctx, cancel := context.WithTimeout(ctx, 6*d.o.Timeout)
	t0 := time.Now()
	err = d.o.Prober.Probe(pctx, m)
	cancel()
	if err != nil {
		d.r.add(area, name, Fail, "a one-token call failed: "+err.Error(), probeFix(err, m))
		return
	}
	d.r.add(area, name, OK, fmt.Sprintf("a one-token call answered in %s", time.Since(t0).Round(time.Millisecond)), "")
}

// probeFix says what to do about a failed model call.
func probeFix(err error, m agent.Model) string {
	switch {
	case errors.Is(err, model.ErrAuth):
		if m.APIKeyEnv != "" {
			return "the API refused the key: check " + m.APIKeyEnv
		}
		return "the API wants a key: set model.api_key_env to the variable that holds it"
	case errors.Is(err, model.ErrBadRequest):
		return "check model.name (" + m.Name + ") against the models the API offers"
	case errors.Is(err, model.ErrRateLimited), errors.Is(err, model.ErrOverloaded):
		return "the API is busy or the account is over its limits: try again later, or check the account"
	}
	return "check model.base_url and that the server speaks the " + m.Provider + " API"
}

// modelHost is the host:port a model's API is reached at.
func modelHost(m agent.Model) (string, error) {
	base := m.BaseURL
	if base == "" {
		switch m.Provider {
		case agent.ProviderAnthropic:
			base = anthropic.DefaultBaseURL
		default:
			base = openai.DefaultBaseURL
		}
	}
	return urlHost(base)
}

// urlHost is the host:port of an http or https URL.
func urlHost(raw string) (string, error) {
	u, err := url.Parse(raw)
	if err != nil || u.Host == "" || (u.Scheme != "http" && u.Scheme != "https") {
		return "", fmt.Errorf("%q is not an http or https URL", raw)
	}
	if u.Port() != "" {
		return u.Host, nil
	}
	port := "443"
	if u.Scheme == "http" {
		port = "80"
	}
	return net.JoinHostPort(u.Hostname(), port), nil
}
