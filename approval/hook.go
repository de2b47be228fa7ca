package approval

import (
	"crypto/ed25519"
	"fmt"

	"github.com/mr-tron/base58"
)

// HookDomainTag starts the bytes an agent signs for a hook's "sign"
// internal tool. The tag keeps those signatures apart from approvals: a
// tool server that asks an agent to sign an arbitrary payload cannot get
// a valid approval of a message the agent never received, because an
// approval's signed bytes start with DomainTag instead.
const HookDomainTag = "agentd-hook-v1\x00"

// HookBytes returns what is signed for a hook payload.
func HookBytes(payload string) []byte {
	return append([]byte(HookDomainTag), payload...)
}

// SignHook signs a hook payload; the signature is base58.
func SignHook(key ed25519.PrivateKey, payload string) (string, error) {
	if len(key) != ed25519.PrivateKeySize {
		return "", fmt.Errorf("approval: sign hook: %w: bad key length", ErrMalformed)
	}
	return base58.Encode(ed25519.Sign(key, HookBytes(payload))), nil
}

// CheckHook verifies a hook signature (base58) by pubkey (base58) over
// payload, as a tool server receives them from a hook.
func CheckHook(pubkey, payload, signature string) error {
	pub, err := ParsePublicKey(pubkey)
	if err != nil {
		return err
	}
	sig, err := base58.Decode(signature)
	if err != nil || len(sig) != ed25519.SignatureSize {
		return fmt.Errorf("approval: hook signature: %w: not a base58 ed25519 signature", ErrMalformed)
	}
	if !ed25519.Verify(pub, HookBytes(payload), sig) {
		return fmt.Errorf("approval: hook signature: %w", ErrSignature)
	}
	return nil
}
