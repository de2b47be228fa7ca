package connector

import (
	"context"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"agentd/internal/agentsys"
	"agentd/internal/store"
)

// lateConvStore records a conversation only once wait returns: a chat's
// first turn ends before the connector has mapped its session (a fast
// model, a busy disk).
type lateConvStore struct {
	Store
	wait func()
}

func (s *lateConvStore) PutConversation(ctx context.Context, c store.Conversation) (store.Conversation, error) {
	s.wait()
	return s.Store.PutConversation(ctx, c)
}

// TestFirstReplyWhenTheTurnEndsFirst: a chat's first message whose turn
// ends (and whose end the runtime has handed to the connectors) before
// the chat's conversation is recorded is answered at once, not by the
// sweep, which runs once an hour here.
func TestFirstReplyWhenTheTurnEndsFirst(t *testing.T) {
	for _, tc := range []struct{ name, fields string }{
		{"streaming", `,"dm_policy":"open"`},
		{"no streaming", `,"dm_policy":"open","typing":false,"stream":{"edit":false}`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var r *rig
			ended := func() { waitFor(t, "the turn's end handed on", func() bool { return r.ends.Load() > 0 }) }
			r = newRig(t, &rigOptions{sweep: time.Hour, agents: func(s *agentsys.System) Contacts { return contactOnly{s} }, wrap: func(s Store) Store { return &lateConvStore{Store: s, wait: ended} }})
			r.activate(tc.fields)
			if err := r.inbound(dm("k1", "u1", "hello")); err != nil {
				t.Fatal(err)
			}
			waitFor(t, "the reply", r.settled(1))
			if diff := cmp.Diff([]string{"re: hello"}, r.p.texts()); diff != "" {
				t.Errorf("messages (-want +got)\n%s", diff)
			}
		})
	}
}
