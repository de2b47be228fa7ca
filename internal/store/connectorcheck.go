package store

import (
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"time"
)

// The bounds of what a connector store keeps: an outbox row's text is a
// reply already in the session's log, kept again so that the worker needs
// no second read; an error is one line of the platform's answer.
const (
	MaxOutboxText  = 1 << 20
	MaxOutboxError = 4 << 10
	// MaxOutboxParts bounds the parts a reply is cut into.
	MaxOutboxParts = 256
	// MaxConnectorList bounds the rows a connector listing returns.
	MaxConnectorList = 1000
	// defaultOutboxList is an outbox listing's length when its filter
	// gives none.
	defaultOutboxList = 100
)

// CheckConversation checks a conversation to put and fills its times.
func CheckConversation(c Conversation, now time.Time) (Conversation, error) {
	if err := checkConnectorKey(c.Connector, c.Chat); err != nil {
		return Conversation{}, err
	}
	if c.SessionID <= 0 || c.Instance == "" {
		return Conversation{}, fmt.Errorf("conversation %s/%s: no session (%d) or instance (%q)", c.Connector, c.Chat, c.SessionID, c.Instance)
	}
	if c.ChatJSON == "" || !json.Valid([]byte(c.ChatJSON)) {
		return Conversation{}, fmt.Errorf("conversation %s/%s: chat is not JSON", c.Connector, c.Chat)
	}
	c.SeenSeq = max(c.SeenSeq, 0)
	c.CreatedAt, c.UpdatedAt = now.UTC(), now.UTC()
	return c, nil
}

// checkConnectorKey checks a connector's name and a chat's key.
func checkConnectorKey(connector, chat string) error {
	if err := CheckExtensionKey("integration", connector); err != nil {
		return err
	}
	if chat == "" || len(chat) > MaxExtensionKey {
		return fmt.Errorf("chat key %q: empty or longer than %d bytes", chat, MaxExtensionKey)
	}
	return nil
}

// CheckSeen checks a SetSeen.
func CheckSeen(connector, chat string, seq int64) error {
	if err := checkConnectorKey(connector, chat); err != nil {
		return err
	}
	if seq < 0 {
		return fmt.Errorf("seen seq %d is negative", seq)
	}
	return nil
}

// OutboxOpen checks an outbox row to open and fills what the caller may
// leave out: the kind (a reply), the next try (now), the message ids
// (none) and the times. A row no one has moved has no create in flight,
// so its SendingPart is -1 unless it opens in OutSending.
func OutboxOpen(it OutboxItem, now time.Time) (OutboxItem, error) {
	if err := checkConnectorKey(it.Connector, it.Chat); err != nil {
		return OutboxItem{}, err
	}
	if it.Kind == "" {
		it.Kind = OutReply
	}
	switch it.Kind {
	case OutReply:
		if it.SessionID <= 0 || it.Turn < 0 {
			return OutboxItem{}, fmt.Errorf("outbox row: a reply of session %d, turn %d", it.SessionID, it.Turn)
		}
	case OutNotice:
		// A notice may go to a chat with no session yet (a person just
		// approved, /help first); it is of no turn, so never merged.
		if it.SessionID < 0 || it.Turn != 0 {
			return OutboxItem{}, fmt.Errorf("outbox row: a notice of session %d, turn %d (a notice has no turn)", it.SessionID, it.Turn)
		}
	default:
		return OutboxItem{}, fmt.Errorf("outbox row: kind %q is neither %q nor %q", it.Kind, OutReply, OutNotice)
	}
	if it.State != OutSending {
		it.SendingPart, it.Nonce = -1, ""
	}
	if it.NextAt.IsZero() {
		it.NextAt = now
	}
	it.CreatedAt, it.UpdatedAt, it.Acked = now.UTC(), now.UTC(), false
	return OutboxMove(it)
}

// OutboxMove checks the row a move writes and makes its values as a store
// keeps them: the text and error cut, the message ids never nil, the times
// in UTC.
func OutboxMove(to OutboxItem) (OutboxItem, error) {
	if !slices.Contains(OutboxStates(), to.State) {
		return OutboxItem{}, fmt.Errorf("outbox state %q is not one of %v", to.State, OutboxStates())
	}
	if to.Parts < 0 || to.Parts > MaxOutboxParts || len(to.MessageIDs) > MaxOutboxParts {
		return OutboxItem{}, fmt.Errorf("outbox row: %d parts, %d message ids (at most %d)", to.Parts, len(to.MessageIDs), MaxOutboxParts)
	}
	if to.SendingPart < -1 || to.SendingPart >= MaxOutboxParts || to.Tries < 0 {
		return OutboxItem{}, fmt.Errorf("outbox row: sending part %d, tries %d", to.SendingPart, to.Tries)
	}
	if to.NextAt.IsZero() {
		return OutboxItem{}, errors.New("outbox row: no next try time")
	}
	if to.MessageIDs == nil {
		to.MessageIDs = []string{}
	}
	to.Text, to.Error = RunText(to.Text, MaxOutboxText), RunText(to.Error, MaxOutboxError)
	to.NextAt, to.SentAt = to.NextAt.UTC(), utc(to.SentAt)
	return to, nil
}

// CheckOutboxFrom checks the state a move starts from.
func CheckOutboxFrom(id int64, from string) error {
	if id <= 0 || !slices.Contains(OutboxStates(), from) {
		return fmt.Errorf("outbox row %d: state %q is not one of %v", id, from, OutboxStates())
	}
	return nil
}

// MessageIDsJSON returns a row's message ids as the stores keep them.
func MessageIDsJSON(ids []string) string {
	if len(ids) == 0 {
		return "[]"
	}
	b, _ := json.Marshal(ids) // strings always marshal
	return string(b)
}

// ParseMessageIDs reads a row's message ids as the stores keep them.
func ParseMessageIDs(s string) ([]string, error) {
	ids := []string{}
	if err := json.Unmarshal([]byte(s), &ids); err != nil {
		return nil, fmt.Errorf("message ids: %w", err)
	}
	return ids, nil
}

// OutboxLimit checks an outbox listing's filter and returns its length.
func OutboxLimit(f OutboxFilter) (int, error) {
	if f.Limit < 0 || f.Before < 0 || (f.State != "" && !slices.Contains(OutboxStates(), f.State)) {
		return 0, fmt.Errorf("outbox filter: limit %d, before %d, state %q", f.Limit, f.Before, f.State)
	}
	if f.Limit == 0 {
		return defaultOutboxList, nil
	}
	return min(f.Limit, MaxConnectorList), nil
}

// PairStart checks a pairing to make and fills its state and creation
// time (now unless given).
func PairStart(p Pairing, maxPending int, now time.Time) (Pairing, error) {
	if err := CheckExtensionKey("integration", p.Connector); err != nil {
		return Pairing{}, err
	}
	if p.UserID == "" || len(p.UserID) > MaxExtensionKey || len(p.Chat) > MaxExtensionKey {
		return Pairing{}, fmt.Errorf("pairing of %q: user id empty, or user id or chat longer than %d bytes", p.UserID, MaxExtensionKey)
	}
	p.Name = RunText(p.Name, MaxExtensionKey)
	if p.Code == "" || len(p.Code) > 64 {
		return Pairing{}, fmt.Errorf("pairing of %q: code empty or longer than 64 bytes", p.UserID)
	}
	if maxPending <= 0 {
		return Pairing{}, fmt.Errorf("pairing of %q: at most %d pending", p.UserID, maxPending)
	}
	if p.State != "" && p.State != PairPending {
		return Pairing{}, fmt.Errorf("pairing of %q: a new pairing is %s, not %s", p.UserID, PairPending, p.State)
	}
	if p.CreatedAt.IsZero() {
		p.CreatedAt = now
	}
	if !p.ExpiresAt.After(now) {
		return Pairing{}, fmt.Errorf("pairing of %q: expires at %v, not after now (%v)", p.UserID, p.ExpiresAt, now)
	}
	p.State, p.DecidedAt, p.DecidedBy = PairPending, time.Time{}, ""
	p.CreatedAt, p.ExpiresAt = p.CreatedAt.UTC(), p.ExpiresAt.UTC()
	return p, nil
}

// CheckDecision checks a pairing's decision.
func CheckDecision(code, state, by string) error {
	if code == "" || len(code) > 64 {
		return fmt.Errorf("pairing code %q: empty or longer than 64 bytes", code)
	}
	if state != PairApproved && state != PairDenied {
		return fmt.Errorf("pairing decision %q is neither %s nor %s", state, PairApproved, PairDenied)
	}
	if len(by) > MaxExtensionKey {
		return fmt.Errorf("pairing decided by a name longer than %d bytes", MaxExtensionKey)
	}
	return nil
}

// CheckPairingsFilter checks a pairings listing's filter.
func CheckPairingsFilter(connector, state string) error {
	if connector != "" {
		if err := CheckExtensionKey("integration", connector); err != nil {
			return err
		}
	}
	if state != "" && !slices.Contains(PairingStates(), state) {
		return fmt.Errorf("pairing state %q is not one of %v", state, PairingStates())
	}
	return nil
}

// PairingStates lists the pairing states.
func PairingStates() []string { return []string{PairPending, PairApproved, PairDenied, PairExpired} }

// PairingNotice is the notice row DecidePairing opens with decision p, in
// session (the chat's conversation's, 0 when none); false when there is
// none to open (no notice asked, a denial, a pairing without a chat).
func PairingNotice(p Pairing, notice *OutboxItem, session int64, now time.Time) (OutboxItem, bool, error) {
	if notice == nil || p.State != PairApproved || p.Chat == "" {
		return OutboxItem{}, false, nil
	}
	n := *notice
	n.Connector, n.Chat, n.SessionID, n.Kind, n.Turn = p.Connector, p.Chat, session, OutNotice, 0
	n, err := OutboxOpen(n, now)
	return n, err == nil, err
}
