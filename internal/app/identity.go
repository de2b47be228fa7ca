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

// Approve signs a message's approval with the agent's key (created on first use).
func (s signer) Approve(agentID, message string, createdAt time.Time, messageID, channelID string) (json.RawMessage, string, error) {
	a, err := s.k.Sign(agentID, message, createdAt, messageID, channelID)
	if err != nil {
		return nil, "", err
	}
	b, err := json.Marshal(a)
	return b, a.Pubkey, err
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
