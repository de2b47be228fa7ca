package app

import (
	"crypto/ed25519"
	"encoding/json"
	"time"

	"agentd/approval"
	"agentd/internal/identity"
)

// signer gives the engine the agents' keys.
type signer struct{ k *identity.Keyring }

// SignMessage signs a message alone with the agent's key (created on first
// use); only its fingerprint leaves.
func (s signer) SignMessage(agentID string, m approval.Message) (string, string, error) {
	return s.k.SignMessage(agentID, m)
}

// ApproveCall signs a message's approval for one call with the agent's key.
func (s signer) ApproveCall(agentID string, m approval.Message, signedAt time.Time, audience, tool string, args json.RawMessage) (json.RawMessage, error) {
	a, err := s.k.Approve(agentID, m, signedAt, audience, tool, args)
	if err != nil {
		return nil, err
	}
	return json.Marshal(a)
}

// SignPayload is the internal "sign" tool of hooks.
func (s signer) SignPayload(agentID, payload string) (string, string, error) {
	key, err := s.k.Key(agentID)
	if err != nil {
		return "", "", err
	}
	sig, err := approval.SignHook(key, payload)
	if err != nil {
		return "", "", err
	}
	return sig, approval.EncodePublicKey(key.Public().(ed25519.PublicKey)), nil
}

// messageApprover signs one message's approvals, call by call, for calls
// made outside a turn (an agent's start-up calls).
type messageApprover struct {
	s     signer
	agent string
	m     approval.Message
}

func (a messageApprover) Approve(audience, tool string, args json.RawMessage) (json.RawMessage, error) {
	return a.s.ApproveCall(a.agent, a.m, time.Now(), audience, tool, args)
}
