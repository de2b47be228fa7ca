package extension

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"

	"agentd/internal/store"
)

// Put validates a document, writes it as its row's next version and
// activates it. A document equal to the row (spec and enabled state)
// writes nothing. A row an agent writes of a PersonEnables type is stored
// disabled, a change of an enabled one too; an agent changes only rows it created unless Who.Any.
func (m *Manager) Put(ctx context.Context, d Doc, w Who) (Status, error) {
	c, spec, err := m.check(ctx, &d)
	if err != nil {
		return Status{}, err
	}
	if err := machine(c, spec, w); err != nil {
		return Status{}, err
	}
	old, err := m.st.Extension(ctx, d.Type, d.Name)
	exists := err == nil
	if err != nil && !errors.Is(err, store.ErrNotFound) {
		return Status{}, fmt.Errorf("extension: %s: %w", d.Key(), err)
	}
	if exists {
		if err := allowed(&old, w); err != nil {
			return Status{}, err
		}
	}
	if err := held(ctx, c, Doc{Type: d.Type, Name: d.Name, Spec: spec}, w, !exists); err != nil {
		return Status{}, err
	}
	enabled := !exists || old.Enabled
	if d.Enabled != nil {
		enabled = *d.Enabled
	}
	if _, isAgent := w.Agent(); isAgent && c.PersonEnables {
		enabled = false // what an agent writes waits for a person, a change too
	}
	if exists && bytes.Equal(old.Spec, spec) && old.Enabled == enabled && (d.IfVersion == 0 || d.IfVersion == old.Version) {
		return m.status(&old), nil
	}
	e := store.Extension{Type: d.Type, Name: d.Name, Spec: spec, Enabled: enabled, Provenance: w.Provenance,
		CreatedBy: w.by(), UpdatedBy: w.by()}
	if exists {
		e.SeedHash = old.SeedHash
	}
	return m.write(ctx, e, store.ExtPut, ifVersion(d.IfVersion, exists, old.Version), before(exists, &old))
}

// ifVersion is the version a write expects: the caller's, else the one
// read (so a change made meanwhile is a conflict, never lost).
func ifVersion(asked int64, exists bool, read int64) int64 {
	switch {
	case asked != 0:
		return asked
	case exists:
		return read
	}
	return store.NoVersion
}

// write stores e and activates what it became; old is the row it
// replaces (nil: none), for Options.Written.
func (m *Manager) write(ctx context.Context, e store.Extension, op string, ifv int64, old *store.Extension) (Status, error) {
	got, err := m.st.PutExtension(ctx, e, op, ifv)
	if err != nil {
		return Status{}, fmt.Errorf("extension: %s: %w", key(e.Type, e.Name), err)
	}
	if m.written != nil {
		m.written(ctx, old, &got)
	}
	m.activate(ctx, &got)
	return m.status(&got), nil
}

// before is the row read before a write, nil when there was none.
func before(exists bool, old *store.Extension) *store.Extension {
	if !exists {
		return nil
	}
	return old
}

// SetEnabled enables or disables a row.
func (m *Manager) SetEnabled(ctx context.Context, typ, name string, on bool, w Who) (Status, error) {
	c, ok := m.typ(typ)
	if !ok {
		return Status{}, fmt.Errorf("extension: %w: %q", ErrUnknownType, typ)
	}
	old, err := m.st.Extension(ctx, typ, name)
	if err != nil {
		return Status{}, fmt.Errorf("extension: %s: %w", key(typ, name), err)
	}
	if err := allowed(&old, w); err != nil {
		return Status{}, err
	}
	if _, isAgent := w.Agent(); isAgent && on && c.PersonEnables {
		return Status{}, fmt.Errorf("extension: %w: a person enables a %s", ErrForbidden, typ)
	}
	if old.Enabled == on {
		return m.status(&old), nil
	}
	op := store.ExtDisable
	if on {
		op = store.ExtEnable
	}
	e := old
	// Enabling or disabling a seeded row is a person's choice a reseed
	// keeps, like a change of its spec: the provenance is the changer's.
	e.Enabled, e.Provenance, e.UpdatedBy = on, w.Provenance, w.by()
	return m.write(ctx, e, op, old.Version, &old)
}

// Delete removes a row (its history stays) and deactivates it. A row a
// person or an agent wrote over a seed document (a built-in, a file) goes
// back to that document instead: delete the file to remove it.
func (m *Manager) Delete(ctx context.Context, typ, name string, w Who) error {
	if _, ok := m.typ(typ); !ok {
		return fmt.Errorf("extension: %w: %q", ErrUnknownType, typ)
	}
	old, err := m.st.Extension(ctx, typ, name)
	if err != nil {
		return fmt.Errorf("extension: %s: %w", key(typ, name), err)
	}
	if err := allowed(&old, w); err != nil {
		return err
	}
	m.mu.Lock()
	seed, seeded := m.seeds[key(typ, name)]
	m.mu.Unlock()
	if seeded && old.Provenance != seed.prov {
		// A person's or an agent's row over a seed document: removing it
		// gives the row back to the document, as a reseed would.
		e := store.Extension{Type: typ, Name: name, Spec: seed.spec, Enabled: seed.enabled, Provenance: seed.prov,
			SeedHash: seed.hash, UpdatedBy: w.by()}
		_, err := m.write(ctx, e, store.ExtPut, old.Version, &old)
		return err
	}
	if err := m.st.DeleteExtension(ctx, typ, name, w.by(), old.Version); err != nil {
		return fmt.Errorf("extension: %s: %w", key(typ, name), err)
	}
	m.deactivate(ctx, typ, name)
	return nil
}

// Revert sets a row's spec back to an earlier version's (version <= 0: the
// one before the current), as a new version, validated against the type's
// schema as it is now. A deleted row is made again.
func (m *Manager) Revert(ctx context.Context, typ, name string, version int64, w Who) (Status, error) {
	hist, err := m.History(ctx, typ, name)
	if err != nil {
		return Status{}, err
	}
	last := hist[len(hist)-1]
	if version <= 0 {
		version = last.Version - 1
	}
	i := slices.IndexFunc(hist, func(c store.ExtensionChange) bool { return c.Version == version })
	if i < 0 || hist[i].Op == store.ExtDelete {
		return Status{}, fmt.Errorf("extension: %s: %w: no version %d to revert to", key(typ, name), store.ErrNotFound, version)
	}
	c, spec, err := m.check(ctx, &Doc{Type: typ, Name: name, Spec: hist[i].Spec})
	if err != nil {
		return Status{}, err
	}
	if err := machine(c, spec, w); err != nil {
		return Status{}, err
	}
	old, err := m.st.Extension(ctx, typ, name)
	exists := err == nil
	if err != nil && !errors.Is(err, store.ErrNotFound) {
		return Status{}, fmt.Errorf("extension: %s: %w", key(typ, name), err)
	}
	if exists {
		if err := allowed(&old, w); err != nil {
			return Status{}, err
		}
	}
	if err := held(ctx, c, Doc{Type: typ, Name: name, Spec: spec}, w, !exists); err != nil {
		return Status{}, err
	}
	enabled := !exists || old.Enabled
	if _, isAgent := w.Agent(); isAgent && c.PersonEnables {
		enabled = false
	}
	e := store.Extension{Type: typ, Name: name, Spec: spec, Enabled: enabled, Provenance: w.Provenance,
		CreatedBy: w.by(), UpdatedBy: w.by()}
	return m.write(ctx, e, store.ExtRevert, ifVersion(0, exists, old.Version), before(exists, &old))
}

// machine refuses an agent's write of a spec that changes what runs on
// this machine, unless the agent may (Who.Machine), and of a spec that
// makes another agent act, unless it may change any row (Who.Any).
func machine(c *compiled, spec json.RawMessage, w Who) error {
	self, isAgent := w.Agent()
	if !isAgent {
		return nil
	}
	if !w.Machine && c.Machine != nil && c.Machine(spec) {
		return fmt.Errorf("extension: %w: a %s that starts processes, names commands, watches files or reaches the network from this machine needs extensions.machine in the agent's file", ErrForbidden, c.Name)
	}
	if w.Any {
		return nil
	}
	if c.Shared {
		return fmt.Errorf("extension: %w: a %s changes what every agent has; an agent writes one only if its file says extensions.any", ErrForbidden, c.Name)
	}
	if c.Actor != nil {
		for _, a := range c.Actor(spec) {
			if a != "" && a != self {
				return fmt.Errorf("extension: %w: a %s for agent %q: an agent writes these only for itself, unless its file says extensions.any", ErrForbidden, c.Name, a)
			}
		}
	}
	return nil
}

// held refuses an agent's write of a document its type's handler finds
// gives more than the agent has (WriterChecker).
func held(ctx context.Context, c *compiled, d Doc, w Who, created bool) error {
	self, isAgent := w.Agent()
	wc, ok := c.Handler.(WriterChecker)
	if !isAgent || !ok {
		return nil
	}
	if err := wc.CheckWriter(ctx, &d, self, created); err != nil {
		return fmt.Errorf("extension: %w: %s: %w", ErrForbidden, d.Key(), err)
	}
	return nil
}

// allowed says whether w may change row e: people may change any row;
// an agent the rows it created, or any with Who.Any.
func allowed(e *store.Extension, w Who) error {
	if _, isAgent := w.Agent(); !isAgent || w.Any || e.CreatedBy == w.Provenance {
		return nil
	}
	return fmt.Errorf("extension: %w: %s was made by %s", ErrForbidden, key(e.Type, e.Name), e.CreatedBy)
}

// AgentOf is the agent a spec names in its "agent" field, and those of
// the sessions it names in "session" and in its deliveries ("deliver",
// "on_failure": {"session": "agent/key"}): the Actor of the types whose
// rows make an agent act or write to its sessions.
func AgentOf(spec json.RawMessage) []string {
	type target struct {
		Session string `json:"session"`
	}
	var v struct {
		Agent     string          `json:"agent"`
		Session   json.RawMessage `json:"session"`
		Deliver   *target         `json:"deliver"`
		OnFailure *target         `json:"on_failure"`
	}
	_ = json.Unmarshal(spec, &v)
	out := []string{v.Agent}
	var session string
	if json.Unmarshal(v.Session, &session) == nil {
		out = append(out, agentOfAddress(session))
	}
	for _, t := range []*target{v.Deliver, v.OnFailure} {
		if t != nil {
			out = append(out, agentOfAddress(t.Session))
		}
	}
	return out
}

// agentOfAddress is the agent of a session address "agent/key" ("" for
// a bare key, which is the row's own agent's).
func agentOfAddress(addr string) string {
	a, _, ok := strings.Cut(addr, "/")
	if !ok {
		return ""
	}
	return a
}
