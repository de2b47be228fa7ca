package connector

import (
	"context"
	"crypto/rand"
	"fmt"
	"strings"
	"time"

	"agentd/internal/store"
)

// Pairing's bounds (docs/connectors.md).
const (
	// MaxPending is the most pairing codes a connector has pending.
	MaxPending = 3
	// PairingTTL is how long a pairing code is valid.
	PairingTTL = time.Hour
)

// crockford is Crockford's base32 alphabet: no I, L, O, U.
const crockford = "0123456789ABCDEFGHJKMNPQRSTVWXYZ"

// newCode returns 8 random symbols of Crockford's base32 (40 bits).
func newCode() string {
	var b [8]byte
	rand.Read(b[:]) // never fails (crypto/rand)
	for i := range b {
		b[i] = crockford[b[i]&31]
	}
	return string(b[:])
}

// ShowCode writes a code as people read it: XXXX-XXXX.
func ShowCode(code string) string {
	if len(code) != 8 {
		return code
	}
	return code[:4] + "-" + code[4:]
}

// NormalCode is a code as typed (any case, with or without the dash or
// spaces, O for 0, I or L for 1) as stored.
func NormalCode(s string) string {
	s = strings.ToUpper(s)
	return strings.Map(func(r rune) rune {
		switch r {
		case '-', ' ':
			return -1
		case 'O':
			return '0'
		case 'I', 'L':
			return '1'
		}
		return r
	}, s)
}

// Texts a stranger is told.
const (
	privateText  = "This bot is private."
	approvedText = "You can talk to me now."
)

// pairText is what a stranger with a pending code is told.
func pairText(code string) string {
	return privateText + " Ask its owner to run: agentd pairing approve " + ShowCode(code)
}

// ListPairings lists the pairings of connector ("" every one) in state
// ("" every state), newest first.
func (m *Manager) ListPairings(ctx context.Context, connector, state string) ([]store.Pairing, error) {
	return m.st.Pairings(ctx, connector, state)
}

// DecidePairing approves or denies a pending code (as typed: any case,
// with or without the dash). An approved person is told "You can talk to
// me now." through the outbox, by whichever node runs the connector: the
// notice's row is written in the decision's transaction, so a crash
// leaves both or neither. store.ErrNotFound: no such pending code.
func (m *Manager) DecidePairing(ctx context.Context, code string, approve bool, by string) (store.Pairing, error) {
	state := store.PairDenied
	if approve {
		state = store.PairApproved
	}
	now := m.o.Now()
	p, err := m.st.DecidePairing(ctx, NormalCode(code), state, by, now,
		&store.OutboxItem{State: store.OutPending, Text: approvedText, SendingPart: -1, NextAt: now})
	if err != nil {
		return p, fmt.Errorf("connector: pairing: %w", err)
	}
	if in := m.inst(p.Connector); approve && in != nil {
		in.wake()
	}
	return p, nil
}

// RevokePairing removes user's pairing on connector: they pair again to
// talk.
func (m *Manager) RevokePairing(ctx context.Context, connector, user string) error {
	return m.st.RevokePairing(ctx, connector, user)
}
