package extension

import (
	"context"
	"slices"

	"agentd/internal/store"
)

// activate makes e's state take effect here: an enabled row's version is
// activated (unless it already is), a disabled row's deactivated. A
// failed activation leaves the previous version in effect and is
// recorded for Status.
func (m *Manager) activate(ctx context.Context, e *store.Extension) {
	if !e.Enabled {
		m.deactivate(ctx, e.Type, e.Name)
		return
	}
	c, ok := m.typ(e.Type)
	if !ok {
		m.log.Warn("extension of an unknown type not activated", "extension", key(e.Type, e.Name))
		return
	}
	k := key(e.Type, e.Name)
	m.amu.Lock()
	defer m.amu.Unlock()
	m.mu.Lock()
	cur, failed := m.active[k], m.errs[k]
	m.mu.Unlock()
	if cur == e.Version || (cur > e.Version) {
		return // already active, or a newer version is (notifications may come late)
	}
	var err error
	if c.Handler != nil {
		err = c.Handler.Activate(ctx, e)
	}
	m.mu.Lock()
	if err != nil {
		m.errs[k] = err.Error()
	} else {
		m.active[k] = e.Version
		delete(m.errs, k)
	}
	m.mu.Unlock()
	if err != nil && err.Error() != failed {
		m.log.Warn("extension not activated; its previous version stays", "extension", k, "version", e.Version, "err", err)
	}
	m.notify(e)
}

// deactivate undoes a row's activation here, if it has one.
func (m *Manager) deactivate(ctx context.Context, typ, name string) {
	k := key(typ, name)
	m.amu.Lock()
	defer m.amu.Unlock()
	m.mu.Lock()
	cur, hadErr := m.active[k], m.errs[k] != ""
	delete(m.errs, k)
	m.mu.Unlock()
	if cur == 0 && !hadErr {
		return
	}
	if c, ok := m.typ(typ); ok && c.Handler != nil && cur != 0 {
		if err := c.Handler.Deactivate(ctx, name); err != nil {
			m.log.Warn("extension not deactivated", "extension", k, "err", err)
		}
	}
	m.mu.Lock()
	delete(m.active, k)
	m.mu.Unlock()
	m.notify(&store.Extension{Type: typ, Name: name})
}

func (m *Manager) notify(e *store.Extension) {
	s := m.status(e)
	m.mu.Lock()
	subs := slices.Clone(m.subs)
	m.mu.Unlock()
	for _, f := range subs {
		f(s)
	}
}
