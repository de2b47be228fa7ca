package app

import (
	"context"
	"crypto/ed25519"
	"encoding/json"
	"fmt"
	"strings"

	"agentd/approval"
	"agentd/internal/agent"
	"agentd/internal/engine"
	"agentd/internal/identityclient"
	"agentd/internal/identityserver"
	"agentd/internal/store"
)

// identityClients are the clients of the identity servers the agents
// name, once the daemon has started them.
type identityClients []*identityclient.Client

// startIdentity starts a client per identity server the agents name: it
// registers them and delivers their lifecycles until Close (the daemon
// only, beside the start-up calls). A store without the queue, or an
// agent whose character cannot be made, is logged and left out.
func (a *App) startIdentity(ctx context.Context) {
	// A client per server and key: nodes sharing a store may each hold
	// their own key of an agent, and only a key's holder delivers its rows.
	type target struct{ url, pubkey string }
	byURL := map[target][]identityclient.Agent{}
	for _, d := range a.Agents.List() {
		if d.IdentityServer == "" {
			continue
		}
		c, err := a.character(d)
		if err != nil {
			a.Logger.Error("identity server: character", "agent", d.ID, "err", err)
			continue
		}
		k := target{d.IdentityServer, c.Pubkey}
		byURL[k] = append(byURL[k], identityclient.Agent{ID: d.ID, KeyID: d.KeyOwnerID(), Character: c})
	}
	if len(byURL) == 0 {
		return
	}
	out, ok := a.Store.(store.IdentityOutbox)
	if !ok {
		a.Logger.Error("identity server: the store keeps no queue of lifecycles")
		return
	}
	var lead identityclient.Leader
	if a.storeKind == StorePostgres {
		lead = a.Store
	}
	var cs identityClients
	for u, agents := range byURL {
		c, err := identityclient.New(&identityclient.Options{URL: u.url, Agents: agents, Outbox: out, Keys: a.Keys,
			Lifecycle: a.lifecycleObject, Lead: lead, Logger: a.Logger, Version: a.version})
		if err != nil {
			a.Logger.Error("identity server", "url", u.url, "err", err)
			continue
		}
		cs = append(cs, c)
		a.wg.Go(func() { c.Run(ctx) })
	}
	a.identity.Store(&cs)
}

// identityEnded tells the identity clients a turn ended.
func (a *App) identityEnded(s store.Session, it store.InboxItem) {
	if cs := a.identity.Load(); cs != nil {
		for _, c := range *cs {
			c.Ended(s.Agent, it.ID)
		}
	}
}

// character is d's character file: its name, public key, identity prompt
// (the system prompt's first paragraph), model settings without secrets
// and the tools of its start-up calls (their arguments left out).
func (a *App) character(d *agent.Definition) (identityserver.Character, error) {
	key, err := a.Keys.Key(d.KeyOwnerID())
	if err != nil {
		return identityserver.Character{}, err
	}
	m := d.Model.WithoutSecrets()
	params, err := json.Marshal(m.Params)
	if err != nil {
		return identityserver.Character{}, err
	}
	c := identityserver.Character{Name: d.Name, Pubkey: approval.EncodePublicKey(key.Public().(ed25519.PublicKey)),
		IdentityPrompt: firstParagraph(d.SystemPrompt),
		Model:          &identityserver.CharacterModel{Provider: m.Provider, Name: m.Name, BaseURL: m.BaseURL, Params: params}}
	if c.Name == "" {
		c.Name = d.ID
	}
	for _, b := range d.Bootstrap {
		t, _ := json.Marshal(map[string]string{"tool": b.Tool})
		c.Bootstrap = append(c.Bootstrap, t)
	}
	return c, nil
}

// firstParagraph is s up to its first blank line, trimmed.
func firstParagraph(s string) string {
	s = strings.TrimSpace(s)
	if i := strings.Index(s, "\n\n"); i >= 0 {
		s = s[:i]
	}
	return strings.TrimSpace(s)
}

// lifecycleObject is the lifecycle object of an agent's turn, built from
// the turn's events as the message API builds it: without signatures
// (the approval's fingerprint alone).
func (a *App) lifecycleObject(ctx context.Context, agentID string, turn int64) (json.RawMessage, error) {
	d, ok := a.Agents.Get(agentID)
	if !ok {
		return nil, fmt.Errorf("app: lifecycle of turn %d: no agent %s", turn, agentID)
	}
	it, err := a.Store.InboxItem(ctx, turn)
	if err != nil {
		return nil, err
	}
	evs, err := a.Store.TurnEvents(ctx, it.Session, it.ID)
	if err != nil {
		return nil, err
	}
	sess, err := a.Store.SessionByID(ctx, it.Session)
	if err != nil {
		return nil, err
	}
	var o *engine.Object
	if a.Engine != nil {
		o = a.Engine.Object(d, it, evs, sess.Agent+"/"+sess.Key)
	} else {
		o = engine.BuildObject(d, it, evs, sess.Agent+"/"+sess.Key)
	}
	return json.Marshal(o)
}
