package connector

import (
	"bytes"
	_ "embed"
	"encoding/json"
	"fmt"
	"time"

	"agentd/internal/agent"
)

// IfSchema says which integration rows are connectors: those whose spec
// names a platform (the others are MCP servers).
var IfSchema = json.RawMessage(`{"required":["platform"]}`)

//go:embed schema.json
var schemaJSON []byte

// Schema is the JSON Schema of a connector row's spec, its platform one of
// platforms.
func Schema(platforms []string) json.RawMessage {
	var s map[string]any
	if err := json.Unmarshal(schemaJSON, &s); err != nil {
		panic(err) // embedded
	}
	props := s["properties"].(map[string]any)
	if len(platforms) > 0 { // none: Check names the platforms there are
		p := props["platform"].(map[string]any)
		delete(p, "type")
		p["enum"] = platforms
	}
	b, err := json.Marshal(s)
	if err != nil {
		panic(err)
	}
	return b
}

// DM policies.
const (
	PolicyPairing   = "pairing"
	PolicyAllowlist = "allowlist"
	PolicyOpen      = "open"
	PolicyDisabled  = "disabled"
)

// Spec is a connector row's spec (docs/connectors.md). Defaults are in
// each field's comment; Decode fills them.
type Spec struct {
	Platform         string   `json:"platform"`
	TokenEnv         string   `json:"token_env,omitempty"`
	Token            string   `json:"token,omitempty"`   // one secret reference
	APIURL           string   `json:"api_url,omitempty"` // default the platform's
	Agent            string   `json:"agent"`
	DMPolicy         string   `json:"dm_policy,omitempty"` // default pairing
	Allow            []string `json:"allow,omitempty"`
	Mode             string   `json:"mode,omitempty"` // default the platform's first
	AppTokenEnv      string   `json:"app_token_env,omitempty"`
	SigningSecretEnv string   `json:"signing_secret_env,omitempty"`
	WebhookSecretEnv string   `json:"webhook_secret_env,omitempty"` // default: the platform derives one from the token and the name
	PublicURL        string   `json:"public_url,omitempty"`
	GatewayURL       string   `json:"gateway_url,omitempty"`
	Groups           Groups   `json:"groups,omitzero"`
	Stream           Stream   `json:"stream,omitzero"`
	Markup           string   `json:"markup,omitempty"` // default markdown
	Typing           *bool    `json:"typing,omitempty"` // default true
	Files            Files    `json:"files,omitzero"`
	Delivery         Delivery `json:"delivery,omitzero"`
	ErrorText        string   `json:"error_text,omitempty"` // default DefaultErrorText
	Description      string   `json:"description,omitempty"`
}

// Groups say where in group chats the bot talks.
type Groups struct {
	Policy  string   `json:"policy,omitempty"` // allowlist (default), open, disabled
	Allow   []string `json:"allow,omitempty"`
	Mention *bool    `json:"mention,omitempty"` // default true
	Session string   `json:"session,omitempty"` // chat (default) or user
	Members string   `json:"members,omitempty"` // any (default) or allowed
}

// Stream says how a reply streams by edits.
type Stream struct {
	Edit       *bool          `json:"edit,omitempty"`       // default true
	Every      agent.Duration `json:"every,omitzero"`       // default Caps.EditEvery (1s without)
	GroupEvery agent.Duration `json:"group_every,omitzero"` // default Caps.GroupEditEvery (3s without)
	MinChars   int            `json:"min_chars,omitempty"`  // default 40
	FirstAfter agent.Duration `json:"first_after,omitzero"` // default 1s
}

// Files bound inbound files.
type Files struct {
	MaxBytes  int64 `json:"max_bytes,omitempty"`  // default 10 MiB
	TextBytes int64 `json:"text_bytes,omitempty"` // default 64 KiB
}

// Delivery bounds the outbox's retries.
type Delivery struct {
	Tries      int            `json:"tries,omitempty"`      // default 10
	Backoff    agent.Duration `json:"backoff,omitzero"`     // default 1s
	MaxBackoff agent.Duration `json:"max_backoff,omitzero"` // default 5m
	MaxWait    agent.Duration `json:"max_wait,omitzero"`    // default 10m
}

// DefaultErrorText is sent when a turn ends in error with no reply.
const DefaultErrorText = "Sorry, that failed. Try again in a moment."

// MinEvery is the least stream.every a row may set.
const MinEvery = 300 * time.Millisecond

// Decode decodes a connector row's spec, refusing unknown fields, and
// fills its defaults.
func Decode(raw json.RawMessage) (*Spec, error) {
	var s Spec
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&s); err != nil {
		return nil, fmt.Errorf("connector: spec: %w", err)
	}
	s.defaults()
	return &s, nil
}

func (s *Spec) defaults() {
	yes := true
	or := func(p *string, v string) {
		if *p == "" {
			*p = v
		}
	}
	or(&s.DMPolicy, PolicyPairing)
	or(&s.Markup, "markdown")
	or(&s.ErrorText, DefaultErrorText)
	or(&s.Groups.Policy, PolicyAllowlist)
	or(&s.Groups.Session, "chat")
	or(&s.Groups.Members, "any")
	if s.Typing == nil {
		s.Typing = &yes
	}
	if s.Groups.Mention == nil {
		s.Groups.Mention = &yes
	}
	if s.Stream.Edit == nil {
		s.Stream.Edit = &yes
	}
	if s.Stream.MinChars == 0 {
		s.Stream.MinChars = 40
	}
	if s.Stream.FirstAfter == 0 {
		s.Stream.FirstAfter = agent.Duration(time.Second)
	}
	if s.Files.MaxBytes == 0 {
		s.Files.MaxBytes = 10 << 20
	}
	if s.Files.TextBytes == 0 {
		s.Files.TextBytes = 64 << 10
	}
	d := &s.Delivery
	if d.Tries == 0 {
		d.Tries = 10
	}
	if d.Backoff == 0 {
		d.Backoff = agent.Duration(time.Second)
	}
	if d.MaxBackoff == 0 {
		d.MaxBackoff = agent.Duration(5 * time.Minute)
	}
	if d.MaxWait == 0 {
		d.MaxWait = agent.Duration(10 * time.Minute)
	}
}

// every is the least time between two edits in chat c.
func (s *Spec) every(c Chat, caps Caps) time.Duration {
	if c.Kind == ChatGroup {
		return firstOf(s.Stream.GroupEvery.D(), caps.GroupEditEvery, 3*time.Second)
	}
	return firstOf(s.Stream.Every.D(), caps.EditEvery, time.Second)
}

func firstOf(ds ...time.Duration) time.Duration {
	for _, d := range ds {
		if d > 0 {
			return d
		}
	}
	return 0
}

// tokenRef is the reference the bot token is read through.
func (s *Spec) tokenRef() string {
	if s.TokenEnv != "" {
		return "${env:" + s.TokenEnv + "}"
	}
	return s.Token
}

// envRef is the reference of an environment variable ("" none).
func envRef(name string) string {
	if name == "" {
		return ""
	}
	return "${env:" + name + "}"
}
