package connector

import (
	"context"
	"encoding/json"
	"fmt"
	"net/url"
	"strings"

	"agentd/internal/agent"
	"agentd/internal/extension"
	"agentd/internal/schema"
	"agentd/internal/secret"
	"agentd/internal/store"
)

// Type is the connector arm of the integration type: a row whose spec
// names a platform. Its rows reach the network (Machine) and make their
// agent act (Actor).
func (m *Manager) Type() extension.Type {
	return extension.Type{Name: "integration", Summary: "a chat platform's bot, connected to an agent",
		Schema: Schema(m.Platforms()), Handler: m,
		Machine: func(json.RawMessage) bool { return true },
		Actor: func(spec json.RawMessage) []string {
			var s struct {
				Agent string `json:"agent"`
			}
			if json.Unmarshal(spec, &s) != nil || s.Agent == "" {
				return nil
			}
			return []string{s.Agent}
		}}
}

// modes are each platform's receive modes, the first the default.
var modes = map[string][]string{"telegram": {"polling", "webhook"}, "discord": {"gateway"}, "slack": {"socket", "events"}}

// defaultMode is a platform's first mode ("" for one agentd does not
// list).
func defaultMode(platform string) string {
	if ms := modes[platform]; len(ms) > 0 {
		return ms[0]
	}
	return ""
}

// Check checks what the schema cannot: the platform is known, the token
// is referenced (never written), the agent is a user or swarm agent, the
// URLs and durations are sound, and each mode has what it needs.
func (m *Manager) Check(_ context.Context, d *extension.Doc) []schema.Error {
	var errs []schema.Error
	add := func(ptr, format string, args ...any) {
		errs = append(errs, schema.Error{Pointer: "/spec" + ptr, Message: fmt.Sprintf(format, args...)})
	}
	s, err := Decode(d.Spec)
	if err != nil {
		add("", "%v", err)
		return errs
	}
	if _, ok := m.platforms[s.Platform]; !ok {
		add("/platform", "unknown platform %q (this agentd knows %s)", s.Platform, strings.Join(m.Platforms(), ", "))
	}
	checkToken(s, add)
	for ptr, name := range map[string]string{"/app_token_env": s.AppTokenEnv, "/signing_secret_env": s.SigningSecretEnv,
		"/webhook_secret_env": s.WebhookSecretEnv} {
		if name != "" && !secret.ValidName(name) {
			add(ptr, "%q is not an environment variable's name", name)
		}
	}
	if m.o.Agents != nil {
		switch def, ok := m.o.Agents.Get(s.Agent); {
		case !ok:
			add("/agent", "no agent %q", s.Agent)
		case def.Type != agent.TypeUser && def.Type != agent.TypeSwarm:
			add("/agent", "%s is of type %s: a connector talks to a user or swarm agent", s.Agent, def.Type)
		}
	}
	for ptr, u := range map[string]string{"/api_url": s.APIURL, "/public_url": s.PublicURL, "/gateway_url": s.GatewayURL} {
		if msg := checkURL(u); msg != "" {
			add(ptr, "%s", msg)
		}
	}
	if ms, ok := modes[s.Platform]; ok && s.Mode != "" && !strings.Contains(" "+strings.Join(ms, " ")+" ", " "+s.Mode+" ") {
		add("/mode", "%s has no mode %q (it has %s)", s.Platform, s.Mode, strings.Join(ms, ", "))
	}
	switch {
	case s.Mode == "webhook" || s.Mode == "events":
		if s.PublicURL == "" {
			add("/public_url", "the %s mode needs the public URL the platform posts to", s.Mode)
		}
		if s.Mode == "events" && s.SigningSecretEnv == "" {
			add("/signing_secret_env", "the events mode needs the signing secret's variable")
		}
	case s.Platform == "slack" && s.AppTokenEnv == "":
		add("/app_token_env", "the socket mode needs the app-level token's variable")
	}
	for ptr, v := range map[string]agent.Duration{"/stream/every": s.Stream.Every, "/stream/group_every": s.Stream.GroupEvery} {
		if v != 0 && v.D() < MinEvery {
			add(ptr, "must be at least %s", MinEvery)
		}
	}
	if s.Delivery.Backoff.D() <= 0 || s.Delivery.MaxBackoff < s.Delivery.Backoff {
		add("/delivery", "backoff must be positive and max_backoff at least backoff")
	}
	return errs
}

// checkToken: exactly one of token_env and token; token is one reference.
func checkToken(s *Spec, add func(ptr, format string, args ...any)) {
	switch {
	case s.TokenEnv != "" && s.Token != "":
		add("/token", "give token_env or token, not both")
	case s.TokenEnv == "" && s.Token == "":
		add("/token_env", "is required (or token, a secret reference)")
	case s.TokenEnv != "" && !secret.ValidName(s.TokenEnv):
		add("/token_env", "%q is not an environment variable's name", s.TokenEnv)
	case s.Token != "":
		parts, err := secret.Parse(s.Token)
		if err != nil || len(parts) != 1 || parts[0].Ref.Kind == "" {
			add("/token", "must be one secret reference such as ${secret:NAME} or ${env:NAME}; a token is never written in a row")
		}
	}
}

// checkURL returns what is wrong with an optional http(s) or ws(s) URL.
func checkURL(s string) string {
	if s == "" {
		return ""
	}
	u, err := url.Parse(s)
	switch {
	case err != nil:
		return "is not a URL"
	case u.Scheme != "http" && u.Scheme != "https" && u.Scheme != "ws" && u.Scheme != "wss", u.Host == "":
		return "must be an http(s) or ws(s) URL"
	case u.User != nil:
		return "must not hold a user or password (use the token's reference)"
	}
	return ""
}

// Activate starts (or restarts, with the row's new version) the row's
// connector. It returns at once: the instance connects in the background.
// Its outbox, conversations and pairings are kept.
func (m *Manager) Activate(_ context.Context, e *store.Extension) error {
	s, err := Decode(e.Spec)
	if err != nil {
		return err
	}
	if _, ok := m.platforms[s.Platform]; !ok {
		return fmt.Errorf("connector: %s: unknown platform %q", e.Name, s.Platform)
	}
	in := newInstance(m, e.Name, s)
	m.mu.Lock()
	old := m.insts[e.Name]
	m.insts[e.Name] = in
	if old != nil {
		m.mu.Unlock()
		old.stop()
		m.mu.Lock()
	}
	if m.started && !m.closed && m.insts[e.Name] == in {
		m.wg.Go(func() { in.run(m.ctx) })
	}
	m.mu.Unlock()
	return nil
}

// Deactivate stops the row's connector; its rows stay in the store.
func (m *Manager) Deactivate(_ context.Context, name string) error {
	m.mu.Lock()
	in := m.insts[name]
	delete(m.insts, name)
	m.mu.Unlock()
	if in != nil {
		in.stop()
	}
	return nil
}
