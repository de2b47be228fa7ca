package agentsys

import (
	"context"
	"errors"
	"testing"

	"agentd/internal/agent"
	"agentd/internal/store"
)

func TestContactMakesOneInstancePerPerson(t *testing.T) {
	h := newHarness(t, nil)
	ann := Contact{Template: "desk", Connector: "slack", Channel: "C1", User: "ann", Text: "my order?"}
	a, rc, err := h.sys.Contact(context.Background(), ann)
	if err != nil {
		t.Fatal(err)
	}
	if a.Type != store.InstanceSwarm || a.Descriptor != "swarm:desk:slack:C1:ann" || a.Template != "desk" || rc.Session != a.ID+"/main" {
		t.Fatalf("first contact %+v, %+v", a, rc)
	}
	ann.Text = "and the refund?"
	again, _, err := h.sys.Contact(context.Background(), ann)
	if err != nil || again.ID != a.ID {
		t.Fatalf("second contact %s, %v; want %s", again.ID, err, a.ID)
	}
	bob, _, err := h.sys.Contact(context.Background(), Contact{Template: "desk", Connector: "slack", Channel: "C1", User: "bob", Text: "hi"})
	if err != nil || bob.ID == a.ID {
		t.Fatalf("bob's contact %s, %v", bob.ID, err)
	}
	// A swarm instance remembers in its own scope; its identity key is
	// its template's.
	d, ok := h.sys.Definition(a.ID)
	if !ok || d.ScopeID() != a.ID || d.KeyOwnerID() != "desk" || d.Template != "desk" || d.Type != agent.TypeSwarm {
		t.Fatalf("derived %+v", d)
	}
	if db, _ := h.sys.Definition(bob.ID); db.ScopeID() == d.ScopeID() {
		t.Error("two customers share a memory scope")
	}
	// A user agent's scope is its template's (one person's assistant).
	u, _, err := h.sys.Contact(context.Background(), Contact{Template: "helper", Connector: "tg", Channel: "1", User: "ann", Text: "hi"})
	if err != nil {
		t.Fatal(err)
	}
	if u.Type != store.InstanceUser || u.Descriptor != "user:tg:1:ann" {
		t.Fatalf("user instance %+v", u)
	}
	if du, _ := h.sys.Definition(u.ID); du.ScopeID() != "helper" {
		t.Errorf("user instance scope %q", du.ScopeID())
	}
	h.eventually("the user instance idle", func() bool { return h.instance(u.ID).State == store.AgentIdle })
	for _, c := range []struct {
		c    Contact
		want error
	}{
		{Contact{Template: "worker", Connector: "a", Channel: "b", User: "c", Text: "x"}, ErrNotTemplate},
		{Contact{Template: "nobody", Connector: "a", Channel: "b", User: "c", Text: "x"}, ErrNotFound},
		{Contact{Template: "desk", Connector: "a", User: "c", Text: "x"}, store.ErrInvalid},
		{Contact{Template: a.ID, Connector: "a", Channel: "b", User: "c", Text: "x"}, ErrNotTemplate},
	} {
		if _, _, err := h.sys.Contact(context.Background(), c.c); !errors.Is(err, c.want) {
			t.Errorf("%+v: %v, want %v", c.c, err, c.want)
		}
	}
}

func TestDefinitionHook(t *testing.T) {
	h := newHarness(t, nil)
	if _, ok := h.sys.Definition("assistant"); ok {
		t.Error("a definition id answered by the hook")
	}
	unknown := h.sys.ids.next()
	if _, ok := h.sys.Definition(unknown); ok {
		t.Error("an unknown id answered")
	}
	in := h.startChild(StartRequest{Prompt: "x", Template: "worker", Name: "w1"})
	d, ok := h.sys.Definition(in.ID)
	if !ok || d.ID != in.ID || d.Name != "w1" || d.Type != agent.TypeSubagent || d.Parent != "assistant" || d.Template != "worker" ||
		d.ScopeID() != "worker" {
		t.Fatalf("derived %+v", d)
	}
	if again, _ := h.sys.Definition(in.ID); again != d {
		t.Error("derived again with the same template")
	}
	// A changed template (a new pointer) derives again.
	changed := *h.defs["worker"]
	changed.SystemPrompt = "be brief"
	h.setDef(&changed)
	if d2, _ := h.sys.Definition(in.ID); d2 == d || d2.SystemPrompt != "be brief" {
		t.Errorf("not derived again after the template changed: %+v", d2)
	}
	// An id made on another node after a miss is found once the miss is
	// old.
	other := store.Instance{ID: unknown, Type: store.InstanceBackground, Descriptor: "task:api:other", Template: "worker",
		State: store.AgentStarting}
	if _, _, err := h.k.Store.CreateInstance(context.Background(), other, store.InstanceLimits{}); err != nil {
		t.Fatal(err)
	}
	if _, ok := h.sys.Definition(unknown); ok {
		t.Error("a recent miss read again")
	}
	h.now.add(missingFor + 1)
	if _, ok := h.sys.Definition(unknown); !ok {
		t.Error("an old miss not read again")
	}
}
