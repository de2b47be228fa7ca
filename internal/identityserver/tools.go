package identityserver

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"

	"github.com/google/jsonschema-go/jsonschema"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"agentd/internal/store"
)

// The tools' arguments and answers (docs/identity-server.md).
type (
	registerIn struct {
		Character Character `json:"character"`
	}
	characterOut struct {
		Character json.RawMessage `json:"character"`
		CreatedAt string          `json:"created_at"`
		UpdatedAt string          `json:"updated_at"`
	}
	getCharacterIn struct {
		Pubkey string `json:"pubkey,omitempty"`
		Name   string `json:"name,omitempty"`
	}
	charactersOut struct {
		Characters []characterOut `json:"characters"`
	}
	logIn struct {
		Lifecycle json.RawMessage `json:"lifecycle"`
	}
	logOut struct {
		Seq       int64  `json:"seq"`
		MessageID string `json:"messageId"`
		Created   bool   `json:"created"`
	}
	logsIn struct {
		Pubkey string `json:"pubkey"`
		After  int64  `json:"after,omitempty"`
		Limit  int    `json:"limit,omitempty"`
	}
	logEntry struct {
		Seq       int64           `json:"seq"`
		MessageID string          `json:"messageId"`
		Lifecycle json.RawMessage `json:"lifecycle"`
		LoggedAt  string          `json:"logged_at"`
	}
	logsOut struct {
		Logs []logEntry `json:"logs"`
		Next int64      `json:"next"` // the after of the next page
	}
)

const timeLayout = "2006-01-02T15:04:05.000Z07:00"

func (s *Server) addTools() {
	str := func(d string) *jsonschema.Schema { return &jsonschema.Schema{Type: "string", Description: d} }
	s.mcp.AddTool(&mcp.Tool{
		Name: ToolRegister,
		Description: "Store or update the calling agent's character file. The call's approval (_meta[\"agentd/approval\"]) must be " +
			"signed by the key character.pubkey names.",
		InputSchema: object(map[string]*jsonschema.Schema{"character": object(map[string]*jsonschema.Schema{
			"name": str("The agent's name."), "pubkey": str("The agent's base58 ed25519 public key."),
			"identity_prompt": str("Who the agent is."), "model": {Type: "object"}, "bootstrap": {Type: "array"},
		}, "pubkey")}, "character"),
	}, handler(s.register))
	s.mcp.AddTool(&mcp.Tool{
		Name:        ToolGetCharacter,
		Description: "Read the character file of a public key, or the character files of a name (newest first).",
		InputSchema: object(map[string]*jsonschema.Schema{"pubkey": str("A public key."), "name": str("A name.")}),
	}, handler(s.getCharacter))
	s.mcp.AddTool(&mcp.Tool{
		Name: ToolLog,
		Description: "Append a message lifecycle object (signatures excluded) to the calling agent's log. Idempotent by the " +
			"lifecycle's messageId. The approval's key is the log's.",
		InputSchema: object(map[string]*jsonschema.Schema{"lifecycle": {Type: "object"}}, "lifecycle"),
	}, handler(s.log))
	s.mcp.AddTool(&mcp.Tool{
		Name:        ToolLogs,
		Description: "Read an agent's log in order, after a sequence number. Only the key's holder reads it: the approval's key must be pubkey.",
		InputSchema: object(map[string]*jsonschema.Schema{"pubkey": str("The agent's public key."),
			"after": {Type: "integer", Minimum: jsonschema.Ptr(0.0)}, "limit": {Type: "integer", Minimum: jsonschema.Ptr(0.0), Maximum: jsonschema.Ptr(1000.0)}}, "pubkey"),
	}, handler(s.logs))
}

func (s *Server) register(ctx context.Context, req *mcp.CallToolRequest) (any, error) {
	var in registerIn
	if err := decode(req.Params.Arguments, &in); err != nil {
		return nil, err
	}
	if err := in.Character.Check(); err != nil {
		return nil, fmt.Errorf("%w: %v", ErrBadInput, err)
	}
	key, err := s.holder(req, ToolRegister)
	if err != nil {
		return nil, err
	}
	if key != in.Character.Pubkey {
		return nil, fmt.Errorf("%w: signed by %s, character of %s", ErrNotHolder, key, in.Character.Pubkey)
	}
	file, err := json.Marshal(in.Character)
	if err != nil {
		return nil, err
	}
	c, err := s.st.PutCharacter(ctx, store.Character{Pubkey: key, Name: in.Character.Name, File: file, UpdatedAt: s.o.Now()})
	if err != nil {
		return nil, s.storeErr(err)
	}
	s.o.Logger.Info("identity: character registered", "pubkey", key, "name", c.Name)
	return charOut(c), nil
}

func charOut(c store.Character) characterOut {
	return characterOut{Character: c.File, CreatedAt: c.CreatedAt.Format(timeLayout), UpdatedAt: c.UpdatedAt.Format(timeLayout)}
}

func (s *Server) getCharacter(ctx context.Context, req *mcp.CallToolRequest) (any, error) {
	var in getCharacterIn
	if err := decode(req.Params.Arguments, &in); err != nil {
		return nil, err
	}
	if (in.Pubkey == "") == (in.Name == "") {
		return nil, fmt.Errorf("%w: give pubkey or name, one of them", ErrBadInput)
	}
	out := charactersOut{Characters: []characterOut{}}
	if in.Pubkey != "" {
		c, err := s.st.Character(ctx, in.Pubkey)
		if errors.Is(err, store.ErrNotFound) {
			return out, nil
		}
		if err != nil {
			return nil, s.storeErr(err)
		}
		out.Characters = append(out.Characters, charOut(c))
		return out, nil
	}
	cs, err := s.st.CharactersNamed(ctx, in.Name)
	if err != nil {
		return nil, s.storeErr(err)
	}
	for _, c := range cs {
		out.Characters = append(out.Characters, charOut(c))
	}
	return out, nil
}

// lifecycleHead is what the server reads of a lifecycle object.
type lifecycleHead struct {
	MessageID    string          `json:"messageId"`
	DaemonPubkey string          `json:"daemonPubkey"`
	Approval     json.RawMessage `json:"approval"`
}

func (s *Server) log(ctx context.Context, req *mcp.CallToolRequest) (any, error) {
	var in logIn
	if err := decode(req.Params.Arguments, &in); err != nil {
		return nil, err
	}
	var head lifecycleHead
	if err := json.Unmarshal(in.Lifecycle, &head); err != nil || head.MessageID == "" {
		return nil, fmt.Errorf("%w: lifecycle must be an object with a messageId", ErrBadInput)
	}
	if hasSignature(head.Approval) {
		return nil, fmt.Errorf("%w: a lifecycle is logged without signatures", ErrBadInput)
	}
	key, err := s.holder(req, ToolLog)
	if err != nil {
		return nil, err
	}
	if head.DaemonPubkey != "" && head.DaemonPubkey != key {
		return nil, fmt.Errorf("%w: signed by %s, lifecycle of %s", ErrNotHolder, key, head.DaemonPubkey)
	}
	l, created, err := s.st.AppendIdentityLog(ctx, store.IdentityLog{Pubkey: key, MessageID: head.MessageID, Lifecycle: in.Lifecycle, CreatedAt: s.o.Now()})
	if err != nil {
		return nil, s.storeErr(err)
	}
	return logOut{Seq: l.Seq, MessageID: l.MessageID, Created: created}, nil
}

// hasSignature reports whether a lifecycle's approval view holds a
// signature (agentd's holds its fingerprint alone).
func hasSignature(view json.RawMessage) bool {
	var v map[string]json.RawMessage
	if json.Unmarshal(view, &v) != nil {
		return false
	}
	_, ok := v["signature"]
	return ok
}

func (s *Server) logs(ctx context.Context, req *mcp.CallToolRequest) (any, error) {
	var in logsIn
	if err := decode(req.Params.Arguments, &in); err != nil {
		return nil, err
	}
	if in.After < 0 || in.Limit < 0 || in.Limit > 1000 {
		return nil, fmt.Errorf("%w: after and limit must not be negative, limit at most 1000", ErrBadInput)
	}
	key, err := s.holder(req, ToolLogs)
	if err != nil {
		return nil, err
	}
	if key != in.Pubkey {
		return nil, fmt.Errorf("%w: signed by %s, log of %s", ErrNotHolder, key, in.Pubkey)
	}
	ls, err := s.st.IdentityLogs(ctx, in.Pubkey, in.After, in.Limit)
	if err != nil {
		return nil, s.storeErr(err)
	}
	out := logsOut{Logs: make([]logEntry, 0, len(ls)), Next: in.After}
	for _, l := range ls {
		out.Logs = append(out.Logs, logEntry{Seq: l.Seq, MessageID: l.MessageID, Lifecycle: l.Lifecycle, LoggedAt: l.CreatedAt.Format(timeLayout)})
		out.Next = l.Seq
	}
	return out, nil
}

// storeErr is what a caller sees of a store failure: a refusal of bad
// input says why, anything else is logged and answered plainly.
func (s *Server) storeErr(err error) error {
	if errors.Is(err, store.ErrInvalid) {
		return fmt.Errorf("%w: %v", ErrBadInput, err)
	}
	s.o.Logger.Error("identity: store", "err", err)
	return errors.New("identity server: the store failed; try again")
}
