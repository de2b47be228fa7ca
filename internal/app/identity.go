package app

import (
	"crypto/ed25519"
	"encoding/json"
	"time"

	"github.com/mr-tron/base58"

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
func (s signer) SignPayload(agentID string, payload []byte) (string, string, error) {
	key, err := s.k.Key(agentID)
	if err != nil {
		return "", "", err
	}
	sig := ed25519.Sign(key, payload)
	return base58.Encode(sig), approval.EncodePublicKey(key.Public().(ed25519.PublicKey)), nil
}
