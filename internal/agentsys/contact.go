package agentsys

import (
	"context"
	"fmt"

	"agentd/internal/agent"
	"agentd/internal/event"
	"agentd/internal/runtime"
	"agentd/internal/store"
)

// sourceContact is the Source of a person's message through Contact.
const sourceContact = "contact"

// Contact submits c's text to the instance of c's person on c.Template —
// one per connector, channel and user, and per template for a swarm —
// made on first contact. The template must be of type user or swarm
// (ErrNotTemplate).
func (s *System) Contact(ctx context.Context, c Contact) (store.Instance, runtime.Receipt, error) {
	in, err := s.contactOf(ctx, c)
	if err != nil {
		return in, runtime.Receipt{}, err
	}
	src := c.Source
	if src == "" {
		src = sourceContact
	}
	rc, err := s.rt.Submit(ctx, runtime.Input{Session: mainSession(in.Agent), Text: c.Text, Images: c.Images, Source: src,
		Origin: c.MessageID, IdempotencyKey: c.IdempotencyKey})
	if err != nil {
		return in, rc, fmt.Errorf("agentsys: contact %s: %w", in.ID, err)
	}
	if moved, _ := s.st.SetInstanceState(ctx, in.ID, store.AgentRunning, "", rc.Turn); moved {
		in.State = store.AgentRunning
	}
	return in, rc, nil
}

// contactInstance finds the instance of d, or makes it (with its first
// event) on first contact, unless agents.max_contacts live (ErrLimit).
func (s *System) contactInstance(ctx context.Context, tpl *agent.Definition, d Descriptor) (store.Instance, error) {
	in, err := s.st.InstanceByDescriptor(ctx, d.String())
	if err == nil {
		s.remember(in)
		return in, nil
	}
	in = store.Instance{ID: s.ids.next(), Type: tpl.Type, Descriptor: d.String(), Template: tpl.ID, Payer: tpl.ID,
		State: store.AgentIdle}
	in, created, err := s.st.CreateInstance(ctx, in, store.InstanceLimits{MaxContacts: *s.cfg.MaxContacts})
	if err != nil {
		return in, fmt.Errorf("agentsys: contact: %w", limitError(err))
	}
	s.remember(in)
	if created {
		ev := event.New(0, 0, event.Agent, event.AgentData{Op: event.AgentStarted, ID: in.ID, Type: in.Type, Reason: in.Descriptor})
		if err := s.rt.Record(ctx, mainSession(in.Agent), ev); err != nil {
			return in, fmt.Errorf("agentsys: contact %s: %w", in.ID, err)
		}
	}
	return in, nil
}

// ContactSession finds or makes the instance of c's person, as Contact
// does, and returns it with its main session's id, submitting nothing
// (c.Text is not read): a caller that records where the session's
// replies go (a chat's conversation) does so before the message is
// durable, so that no durable message has a reply with nowhere to go.
func (s *System) ContactSession(ctx context.Context, c Contact) (store.Instance, int64, error) {
	in, err := s.contactOf(ctx, c)
	if err != nil {
		return in, 0, err
	}
	sess, err := s.st.SessionByAddress(ctx, in.Agent, mainKey)
	if err != nil {
		return in, 0, fmt.Errorf("agentsys: contact %s: %w", in.ID, err)
	}
	return in, sess.ID, nil
}

// contactOf finds or makes the instance of c's person on c.Template.
func (s *System) contactOf(ctx context.Context, c Contact) (store.Instance, error) {
	tpl, ok := s.definition(c.Template)
	if !ok {
		return store.Instance{}, fmt.Errorf("agentsys: contact: %w: %s (no definition of that id to make an instance of)", ErrNotFound, c.Template)
	}
	var d Descriptor
	switch {
	case tpl.Template != "":
		return store.Instance{}, fmt.Errorf("agentsys: contact: %w: %s is a dynamic agent", ErrNotTemplate, c.Template)
	case tpl.Type == agent.TypeUser:
		d = UserDescriptor(c.Connector, c.Channel, c.User)
	case tpl.Type == agent.TypeSwarm:
		d = SwarmDescriptor(tpl.ID, c.Connector, c.Channel, c.User)
	default:
		return store.Instance{}, fmt.Errorf("agentsys: contact: %w: %s is of type %s, not user or swarm",
			ErrNotTemplate, c.Template, tpl.Type)
	}
	if err := d.valid(); err != nil {
		return store.Instance{}, fmt.Errorf("agentsys: contact: %w: %v (connector, channel and user are needed)", store.ErrInvalid, err)
	}
	return s.contactInstance(ctx, tpl, d)
}
