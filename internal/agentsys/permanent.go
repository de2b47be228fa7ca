package agentsys

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"

	"agentd/internal/agent"
	"agentd/internal/store"
)

// agentRows is the optional ability of the Store to list extension rows
// (the agent rows create_permanent_agent writes).
type agentRows interface {
	Extensions(ctx context.Context, typ string) ([]store.Extension, error)
}

// Permanent records the instance of a permanent agent an agent made (its
// row of type agent, named name, written by creator): its descriptor
// permanent:<name>, its creator as its parent. A second call returns the
// same instance.
func (s *System) Permanent(ctx context.Context, name, creator string) (store.Instance, error) {
	in := store.Instance{ID: s.ids.next(), Type: store.InstancePermanent, Agent: name, Descriptor: PermanentDescriptor(name).String(),
		Parent: creator, Payer: name, State: store.AgentIdle}
	got, _, err := s.st.CreateInstance(ctx, in, store.InstanceLimits{})
	if err != nil {
		return got, fmt.Errorf("agentsys: permanent agent %s: %w", name, err)
	}
	s.remember(got)
	return got, nil
}

// recoverPermanents makes the instances of the permanent agents an agent
// wrote whose instance a crash left unwritten (the row came first).
func (s *System) recoverPermanents(ctx context.Context) error {
	rows, ok := s.st.(agentRows)
	if !ok {
		return nil
	}
	exts, err := rows.Extensions(ctx, "agent")
	if err != nil {
		return err
	}
	var errs []error
	for _, e := range exts {
		creator, ok := strings.CutPrefix(e.CreatedBy, store.ProvenanceAgent)
		if !ok {
			continue
		}
		var spec struct {
			Type string `json:"type"`
		}
		if json.Unmarshal(e.Spec, &spec) != nil || spec.Type != agent.TypePermanent {
			continue
		}
		if _, err := s.st.InstanceByAgent(ctx, e.Name); !errors.Is(err, store.ErrNotFound) {
			continue
		}
		if _, err := s.Permanent(ctx, e.Name, creator); err != nil {
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}
