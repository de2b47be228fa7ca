package connector

import "slices"

// Refusal reasons, as the figures count them.
const (
	RefusedBot       = "bot"       // sent by a bot
	RefusedDisabled  = "disabled"  // direct messages are off
	RefusedAllowlist = "allowlist" // the sender is not allowed
	RefusedPairing   = "pairing"   // a stranger, answered with a pairing code
	RefusedGroup     = "group"     // a group chat not allowed
	RefusedMention   = "mention"   // a group message not for the bot
	RefusedLimit     = "limit"     // too many conversations
)

// verdict is what the policy makes of an inbound message: accept it, or
// refuse it for reason (RefusedPairing: answer with a pairing code).
type verdict struct {
	accept bool
	reason string
}

// decide applies s's rules to m (docs/connectors.md, "Who may talk"):
// nothing a stranger sends goes further. known says whether the sender is
// in allow or has an approved pairing; it is asked only when the rules
// need it.
func decide(s *Spec, m Inbound, known func() (bool, error)) (verdict, error) {
	if m.Bot {
		return verdict{reason: RefusedBot}, nil
	}
	if m.Chat.Kind == ChatGroup {
		return decideGroup(s, m, known)
	}
	switch s.DMPolicy {
	case PolicyOpen:
		return verdict{accept: true}, nil
	case PolicyDisabled:
		return verdict{reason: RefusedDisabled}, nil
	}
	ok, err := allowed(s, m, known)
	switch {
	case err != nil:
		return verdict{}, err
	case ok:
		return verdict{accept: true}, nil
	case s.DMPolicy == PolicyPairing:
		return verdict{reason: RefusedPairing}, nil
	}
	return verdict{reason: RefusedAllowlist}, nil
}

func decideGroup(s *Spec, m Inbound, known func() (bool, error)) (verdict, error) {
	g := s.Groups
	switch {
	case g.Policy == PolicyDisabled,
		g.Policy == PolicyAllowlist && !slices.Contains(g.Allow, m.Chat.ID) && !slices.Contains(g.Allow, m.Chat.Key()):
		return verdict{reason: RefusedGroup}, nil
	case *g.Mention && !m.Mentioned && !m.ReplyToBot:
		return verdict{reason: RefusedMention}, nil
	case g.Members == "allowed":
		ok, err := allowed(s, m, known)
		if err != nil || !ok {
			return verdict{reason: RefusedAllowlist}, err
		}
	}
	return verdict{accept: true}, nil
}

// allowed: the sender is in allow, or approved.
func allowed(s *Spec, m Inbound, known func() (bool, error)) (bool, error) {
	if slices.Contains(s.Allow, m.User) {
		return true, nil
	}
	return known()
}
