package command

import (
	"context"
	"fmt"
	"slices"
	"strings"

	"agentd/internal/agent"
)

// Prefix is a chat prefix: what a line that starts with it addresses.
type Prefix struct {
	Prefix string `json:"prefix"` // "/", "!", "@" or "#"
	// Addresses is what the name after the prefix names: "command",
	// "agent" or "tag".
	Addresses   string `json:"addresses"`
	Usage       string `json:"usage"`
	Description string `json:"description"`
}

// Prefixes are the chat prefixes Route knows, in the order /help lists
// them.
var Prefixes = []Prefix{
	{"/", "command", "/name [args]", "an active command extension (/help lists them)"},
	{"!", "command", "!name [args]", "the same commands, for chats that keep / for their own (Slack, Discord)"},
	{"@", "agent", "@agent text", "the agent with that id answers, in its own session keyed by this one's"},
	{"#", "tag", "#tag text", "the one agent with that tag answers, as with @"},
}

// cutLine splits a line that starts with one of the Prefixes into the
// prefix, the name after it (up to the first space) and the rest (after
// the spaces that follow the name). ok is false for a line that does not
// start with a prefix followed by a name.
func cutLine(line string) (p byte, name, rest string, ok bool) {
	if line == "" || !slices.ContainsFunc(Prefixes, func(x Prefix) bool { return x.Prefix == line[:1] }) {
		return 0, "", "", false
	}
	name, rest = cutWord(line[1:])
	if name == "" {
		return 0, "", "", false
	}
	return line[0], name, rest, true
}

// known reports whether id names an agent a line may address: a current
// one, or a disabled one (Disabler), whose session refuses the post.
func (r *Router) known(ctx context.Context, id string) bool {
	if r.agents == nil || !agent.ValidID(id) {
		return false
	}
	if _, ok := r.agents.Get(id); ok {
		return true
	}
	d, ok := r.agents.(Disabler)
	return ok && d.Disabled(ctx, id)
}

// tagged routes "#tag text" to the one agent tagged tag; a tag no agent
// has is not routed, and one several agents share is an ErrUsage naming
// them (an address must not depend on which agent was loaded first).
func (r *Router) tagged(tag, text, addr string) (Route, bool, error) {
	ids := r.taggedWith(tag)
	switch len(ids) {
	case 0:
		return Route{}, false, nil
	case 1:
		return address(ids[0], "#"+tag, text, addr)
	}
	return Route{}, true, fmt.Errorf("%w: #%s: the agents %s share the tag; address one with @%s", ErrUsage, tag, strings.Join(ids, ", "), ids[0])
}

// Tagged returns the ids of the agents tagged tag, sorted: none for a tag
// no agent has or one that is not a valid tag. "#tag" names an agent only
// when exactly one is returned, as a chat line's #tag does (the agent
// tools resolve a "#tag" target with it).
func (r *Router) Tagged(tag string) []string { return r.taggedWith(tag) }

// taggedWith returns the ids of the agents tagged tag, sorted.
func (r *Router) taggedWith(tag string) []string {
	if r.agents == nil || !agent.ValidTag(tag) {
		return nil
	}
	var ids []string
	for _, d := range r.agents.List() {
		if slices.Contains(d.Tags, tag) {
			ids = append(ids, d.ID)
		}
	}
	slices.Sort(ids)
	return ids
}

// address routes text to agent id, addressed as said ("@researcher",
// "#memory-keeper"); nothing to say is an ErrUsage.
func address(id, said, text, addr string) (Route, bool, error) {
	if strings.TrimSpace(text) == "" {
		return Route{}, true, fmt.Errorf("%w: %s: nothing to say; usage: %s <text>", ErrUsage, said, said)
	}
	return Route{Agent: id, Session: sessionOf(id, addr), Text: text}, true, nil
}

// Tag is an agent tag as /help lists it.
type Tag struct {
	Tag    string   `json:"tag"`
	Agents []string `json:"agents"` // more than one: #tag is refused until one is left
}

// Tags returns the tags of the current agents, by tag.
func (r *Router) Tags() []Tag {
	if r.agents == nil {
		return []Tag{}
	}
	by := map[string][]string{}
	for _, d := range r.agents.List() {
		for _, t := range d.Tags {
			by[t] = append(by[t], d.ID)
		}
	}
	out := make([]Tag, 0, len(by))
	for t, ids := range by {
		slices.Sort(ids)
		out = append(out, Tag{Tag: t, Agents: ids})
	}
	slices.SortFunc(out, func(a, b Tag) int { return strings.Compare(a.Tag, b.Tag) })
	return out
}
