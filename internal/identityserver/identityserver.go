// Package identityserver is the identity server agentd ships (`agentd
// identity-server`): an MCP server, shared by many agentd nodes, that
// keeps each agent's character file (its identity without secrets) and the
// log of its message lifecycles. Only the holder of an agent's key writes
// its character and log, and reads its log: every such call carries the
// agent's approval (_meta["agentd/approval"], package approval) for this
// server, this tool and these arguments. docs/identity-server.md is the
// contract others implement.
package identityserver

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"net/url"
	"time"

	"github.com/google/jsonschema-go/jsonschema"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"agentd/approval"
	"agentd/internal/mcpserver"
	"agentd/internal/store"
	"agentd/internal/tool"
)

// Tool names, as the contract names them.
const (
	ToolRegister     = "register"
	ToolGetCharacter = "get_character"
	ToolLog          = "log"
	ToolLogs         = "logs"
)

// Errors a call is refused with (as a tool error whose text wraps them).
var (
	ErrUnsigned  = errors.New("identity server: the call carries no valid approval of the agent's key")
	ErrNotHolder = errors.New("identity server: the approval is not of this agent's key")
	ErrBadInput  = errors.New("identity server: bad arguments")
)

// Character is an agent's character file: who it is, never a key or a
// secret (the model's base URL has no credentials; no API key).
type Character struct {
	Name           string          `json:"name"`
	Pubkey         string          `json:"pubkey"`
	IdentityPrompt string          `json:"identity_prompt,omitempty"`
	Model          *CharacterModel `json:"model,omitempty"`
	// Bootstrap is the agent's start-up calls, as its definition has them.
	Bootstrap []json.RawMessage `json:"bootstrap,omitempty"`
}

// CharacterModel is the model settings of a character file.
type CharacterModel struct {
	Provider string          `json:"provider,omitempty"`
	Name     string          `json:"name,omitempty"`
	BaseURL  string          `json:"base_url,omitempty"`
	Params   json.RawMessage `json:"params,omitempty"`
}

// Check reports what is wrong with c: a pubkey that is not an ed25519
// public key, a base URL with credentials or not http(s).
func (c *Character) Check() error {
	if _, err := approval.ParsePublicKey(c.Pubkey); err != nil {
		return fmt.Errorf("character: pubkey: %v", err)
	}
	if c.Model != nil && c.Model.BaseURL != "" {
		u, err := url.Parse(c.Model.BaseURL)
		if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
			return errors.New("character: model.base_url is not an http or https URL")
		}
		if u.User != nil {
			return errors.New("character: model.base_url holds credentials")
		}
	}
	return nil
}

// Options configure a Server.
type Options struct {
	// Audience lists the URLs agents name the server by (the MCP
	// endpoint, without a query): an approval for another audience is
	// refused. Required.
	Audience []string
	// Logger (default slog.Default()).
	Logger *slog.Logger
	// Version is the server's version in initialize (default "dev").
	Version string
	// Now returns the time (default time.Now).
	Now func() time.Time
}

// Server is the identity server. It is safe for concurrent use.
type Server struct {
	st  store.IdentityStore
	o   Options
	ver *approval.Verifier
	mcp *mcp.Server
}

// New returns a Server keeping its characters and logs in st.
func New(st store.IdentityStore, o *Options) (*Server, error) {
	if st == nil || o == nil || len(o.Audience) == 0 {
		return nil, errors.New("identity server: a store and an audience are required")
	}
	s := &Server{st: st, o: *o}
	if s.o.Logger == nil {
		s.o.Logger = slog.Default()
	}
	if s.o.Version == "" {
		s.o.Version = "dev"
	}
	if s.o.Now == nil {
		s.o.Now = time.Now
	}
	s.ver = approval.NewVerifier(&approval.VerifierOptions{Audience: s.o.Audience, Now: s.o.Now})
	s.mcp = mcp.NewServer(&mcp.Implementation{Name: "agentd-identity", Title: "agentd identity server", Version: s.o.Version}, nil)
	s.addTools()
	return s, nil
}

// MCP returns the MCP server, to serve over any transport.
func (s *Server) MCP() *mcp.Server { return s.mcp }

// Handler serves the server over streamable HTTP behind the Host and
// Origin guard of o (nil: loopback hosts, no origins).
func (s *Server) Handler(o *mcpserver.HandlerOptions) http.Handler {
	// A session idle for an hour ends (a node killed never ends its own);
	// the guard checks Host, so the SDK's own loopback check is off.
	h := mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return s.mcp },
		&mcp.StreamableHTTPOptions{DisableLocalhostProtection: true, SessionTimeout: time.Hour})
	return mcpserver.Guard(h, o, s.o.Logger)
}

// result is a tool's structured answer, also given as JSON text.
func result(v any) (*mcp.CallToolResult, error) {
	b, err := json.Marshal(v)
	if err != nil {
		return nil, err
	}
	return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: string(b)}}, StructuredContent: json.RawMessage(b)}, nil
}

// refuse is a tool error the caller sees.
func refuse(err error) (*mcp.CallToolResult, error) {
	return &mcp.CallToolResult{IsError: true, Content: []mcp.Content{&mcp.TextContent{Text: err.Error()}}}, nil
}

// handler adapts a tool function to the SDK, turning its errors into tool
// errors: a refusal is an answer, not a broken connection.
func handler(fn func(ctx context.Context, req *mcp.CallToolRequest) (any, error)) mcp.ToolHandler {
	return func(ctx context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		out, err := fn(ctx, req)
		if err != nil {
			return refuse(err)
		}
		return result(out)
	}
}

// holder returns the public key whose holder signed req's approval for
// tool: the approval must verify for this server. A replayed approval is
// accepted (its signature verified first): every tool is idempotent, and
// a resend after a lost answer must succeed.
func (s *Server) holder(req *mcp.CallToolRequest, tool string) (string, error) {
	a, err := approval.FromMeta(req.Params.Meta)
	if err == nil {
		err = s.ver.Verify(a, tool, req.Params.Arguments)
	}
	if err != nil && !errors.Is(err, approval.ErrReplayed) {
		return "", fmt.Errorf("%w: %v", ErrUnsigned, err)
	}
	return a.Pubkey, nil
}

// decode decodes a tool's arguments strictly into v (tool.DecodeArgs).
func decode(raw json.RawMessage, v any) error {
	if err := tool.DecodeArgs(raw, v); err != nil {
		return fmt.Errorf("%w: %v", ErrBadInput, err)
	}
	return nil
}

func object(props map[string]*jsonschema.Schema, required ...string) *jsonschema.Schema {
	return &jsonschema.Schema{Type: "object", Properties: props, Required: required}
}
