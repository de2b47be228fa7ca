package agentsys

import (
	"fmt"
	"net/url"
	"strings"
)

// A Descriptor says what an agent is for, in one canonical string: a
// dynamic agent's is unique (the store finds its instance by it, so that a
// first contact or a re-run tool call finds the agent made before), a cron
// or system agent's is computed.
//
//	user:<connector>:<channel>:<user>
//	swarm:<template>:<connector>:<channel>:<user>
//	permanent:<name>
//	task:<parent session>:<tool call id>   (a start by an agent's tool)
//	task:api:<idempotency key>             (a start by a person)
//	cron:<job>
//	system:<tag>
//
// Each part is escaped as a URL path segment, ':' too, so a part may hold
// any text.
type Descriptor struct {
	Kind  string   // one of the kinds above
	Parts []string // non-empty, as many as the kind has
}

// Descriptor kinds.
const (
	DescUser      = "user"
	DescSwarm     = "swarm"
	DescPermanent = "permanent"
	DescTask      = "task"
	DescCron      = "cron"
	DescSystem    = "system"
)

// descParts is how many parts each kind has.
var descParts = map[string]int{DescUser: 3, DescSwarm: 4, DescPermanent: 1, DescTask: 2, DescCron: 1, DescSystem: 1}

// descAPI is the first part of a task descriptor made by a person's start:
// no session address is "api" (an address holds a '/').
const descAPI = "api"

// UserDescriptor is the descriptor of a person's user agent.
func UserDescriptor(connector, channel, user string) Descriptor {
	return Descriptor{DescUser, []string{connector, channel, user}}
}

// SwarmDescriptor is the descriptor of a person's instance of a swarm
// template.
func SwarmDescriptor(template, connector, channel, user string) Descriptor {
	return Descriptor{DescSwarm, []string{template, connector, channel, user}}
}

// TaskDescriptor is the descriptor of an agent started by the tool call
// call in the session at addr.
func TaskDescriptor(addr, call string) Descriptor { return Descriptor{DescTask, []string{addr, call}} }

// APIDescriptor is the descriptor of an agent a person started with key.
func APIDescriptor(key string) Descriptor { return Descriptor{DescTask, []string{descAPI, key}} }

// PermanentDescriptor, CronDescriptor and SystemDescriptor are those of a
// permanent agent, a job's agent and a tagged system agent.
func PermanentDescriptor(name string) Descriptor { return Descriptor{DescPermanent, []string{name}} }
func CronDescriptor(job string) Descriptor       { return Descriptor{DescCron, []string{job}} }
func SystemDescriptor(tag string) Descriptor     { return Descriptor{DescSystem, []string{tag}} }

// String returns the canonical form.
func (d Descriptor) String() string {
	var b strings.Builder
	b.WriteString(d.Kind)
	for _, p := range d.Parts {
		b.WriteByte(':')
		b.WriteString(escapePart(p))
	}
	return b.String()
}

// ParseDescriptor parses a descriptor's canonical form; any other form of
// it (another escaping) is refused, so that one descriptor has one string.
func ParseDescriptor(s string) (Descriptor, error) {
	kind, rest, _ := strings.Cut(s, ":")
	n, ok := descParts[kind]
	if !ok {
		return Descriptor{}, fmt.Errorf("descriptor %q: unknown kind %q", s, kind)
	}
	raw := strings.Split(rest, ":")
	if len(raw) != n {
		return Descriptor{}, fmt.Errorf("descriptor %q: a %s descriptor has %d parts", s, kind, n)
	}
	d := Descriptor{Kind: kind, Parts: make([]string, n)}
	for i, r := range raw {
		p, err := url.PathUnescape(r)
		if err != nil || p == "" || escapePart(p) != r {
			return Descriptor{}, fmt.Errorf("descriptor %q: part %d is not a canonical non-empty part", s, i+1)
		}
		d.Parts[i] = p
	}
	return d, nil
}

// valid reports whether d has its kind's parts, all non-empty.
func (d Descriptor) valid() error {
	n, ok := descParts[d.Kind]
	switch {
	case !ok:
		return fmt.Errorf("unknown descriptor kind %q", d.Kind)
	case len(d.Parts) != n:
		return fmt.Errorf("a %s descriptor has %d parts", d.Kind, n)
	}
	for i, p := range d.Parts {
		if p == "" {
			return fmt.Errorf("%s descriptor: part %d is empty", d.Kind, i+1)
		}
	}
	return nil
}

// escapePart escapes a part as a URL path segment, and its ':' (which a
// path segment may hold).
func escapePart(p string) string {
	return strings.ReplaceAll(url.PathEscape(p), ":", "%3A")
}
