package tool

import (
	"errors"
	"fmt"
	"path"
	"slices"
	"strconv"
	"strings"
)

// ErrBadPattern is returned by Policy.Validate for a malformed glob.
var ErrBadPattern = errors.New("invalid tool pattern")

// Policy is an agent's tool policy: lists of path.Match globs over tool
// names ("web_*", "calculator", "*").
//
// Decide applies it in this order:
//
//  1. a tool matched by Deny is denied;
//  2. otherwise a tool matched by Ask may run once a person approves it;
//  3. otherwise a tool matched by Allow or Grant is allowed;
//  4. otherwise, when Allow is empty, every tool that is not Risky is
//     allowed, except that a Destructive one needs approval, and a Risky
//     one is denied;
//  5. otherwise (Allow is set but does not match) the tool is denied.
//
// A tool marked AskFirst (it makes something that outlives the turn, such
// as an agent) is allowed only when Allow names it exactly; matched by a
// glob or granted, or not named at all when it is not Risky, each call
// needs a person's approval.
//
// So a Risky tool (network, commands, files) runs only when Allow or Ask
// names it, and a bare "*" in Allow names every tool, Risky ones included:
// Allow: ["*"] means "everything", not "everything safe". To allow every
// safe tool leave Allow empty.
//
// A malformed pattern (see Validate) fails closed: in Deny it denies every
// tool, in Allow and Ask it matches nothing.
type Policy struct {
	Allow []string `json:"allow,omitempty" yaml:"allow,omitempty"`
	Deny  []string `json:"deny,omitempty" yaml:"deny,omitempty"`
	Ask   []string `json:"ask,omitempty" yaml:"ask,omitempty"`
	// Grant allows the tools it matches, as Allow does, without making
	// the policy an allow list: what capabilities an agent includes add
	// to its policy.
	Grant []string `json:"grant,omitempty" yaml:"grant,omitempty"`
}

// Verdict is what a policy says about a tool. The zero value is Deny.
type Verdict uint8

// Verdicts.
const (
	Deny  Verdict = iota // the agent may not see or call the tool
	Allow                // the agent may call the tool
	Ask                  // each call needs a person's approval first
)

func (v Verdict) String() string {
	switch v {
	case Deny:
		return "deny"
	case Allow:
		return "allow"
	case Ask:
		return "ask"
	}
	return fmt.Sprintf("Verdict(%d)", uint8(v))
}

// Decision is a policy's verdict on one tool and, for Deny and Ask, why.
type Decision struct {
	Verdict Verdict
	Reason  string
	// Default marks a verdict that comes from the tool's own marking
	// (Risky, Destructive, AskFirst) and no pattern of the policy.
	Default bool
}

// Validate reports every malformed pattern in p, wrapping ErrBadPattern.
func (p Policy) Validate() error {
	var errs []error
	for _, l := range []struct {
		name     string
		patterns []string
	}{{"allow", p.Allow}, {"deny", p.Deny}, {"ask", p.Ask}} {
		for _, pat := range l.patterns {
			if _, err := path.Match(pat, ""); err != nil {
				errs = append(errs, fmt.Errorf("tool policy: %s: %w %q", l.name, ErrBadPattern, pat))
			}
		}
	}
	return errors.Join(errs...)
}

// Decide applies p to the tool s describes.
func (p Policy) Decide(s Spec) Decision {
	for _, pat := range p.Deny {
		ok, err := path.Match(pat, s.Name)
		if err != nil {
			return Decision{Verdict: Deny, Reason: "tool policy has an invalid deny pattern " + strconv.Quote(pat)}
		}
		if ok {
			return Decision{Verdict: Deny, Reason: "tool " + s.Name + " is denied by the pattern " + strconv.Quote(pat)}
		}
	}
	if pat, ok := firstMatch(p.Ask, s.Name); ok {
		return Decision{Verdict: Ask, Reason: "tool " + s.Name + " needs approval (pattern " + strconv.Quote(pat) + ")"}
	}
	_, allowed := firstMatch(p.Allow, s.Name)
	if !allowed {
		_, allowed = firstMatch(p.Grant, s.Name)
	}
	switch {
	case allowed && s.AskFirst && !slices.Contains(p.Allow, s.Name):
		return Decision{Verdict: Ask, Reason: "tool " + s.Name + " needs approval for each call unless the policy's allow list names it exactly", Default: true}
	case allowed:
		return Decision{Verdict: Allow}
	case len(p.Allow) > 0:
		return Decision{Verdict: Deny, Reason: "tool " + s.Name + " is not in the allow list"}
	case s.Risky:
		return Decision{Verdict: Deny, Reason: "tool " + s.Name + " " + s.reach() + ", and the policy does not allow it by name", Default: true}
	case s.Destructive:
		return Decision{Verdict: Ask, Reason: "tool " + s.Name + " may destroy data (its server says so), and the policy does not allow it by name", Default: true}
	case s.AskFirst:
		return Decision{Verdict: Ask, Reason: "tool " + s.Name + " needs approval for each call unless the policy's allow list names it exactly", Default: true}
	}
	return Decision{Verdict: Allow}
}

// reach says what a Risky tool reaches, for the reason it is denied.
func (s Spec) reach() string {
	if s.Reach != "" {
		return s.Reach
	}
	return "reaches the network, runs commands or writes files"
}

// firstMatch returns the first pattern matching name; malformed patterns
// match nothing.
func firstMatch(patterns []string, name string) (string, bool) {
	for _, pat := range patterns {
		if !strings.ContainsAny(pat, `*?[\`) {
			if pat == name { // a name, not a pattern: what path.Match would say
				return pat, true
			}
			continue
		}
		if ok, _ := path.Match(pat, name); ok {
			return pat, true
		}
	}
	return "", false
}
