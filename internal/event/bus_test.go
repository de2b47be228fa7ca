package event

import (
	"testing"

	"github.com/google/go-cmp/cmp"
)

// TestBusRemote checks that what another node committed reaches every
// subscriber but the local-only ones, which act on this node's events
// alone, and that the remote-only ones get nothing else.
func TestBusRemote(t *testing.T) {
	b := NewBus()
	all := b.Subscribe(0, 8)
	one := b.Subscribe(7, 8)
	local := b.SubscribeLocal(0, 8)
	remote := b.SubscribeRemote(7, 8)
	mine := Event{Session: 7, Seq: 1, Kind: Text}
	theirs := Event{Session: 7, Seq: 2, Kind: Text}
	b.Publish(mine)
	b.PublishRemote(theirs)
	for _, c := range []struct {
		name string
		sub  *Subscription
		want []Event
	}{
		{"all", all, []Event{mine, theirs}},
		{"session", one, []Event{mine, theirs}},
		{"local", local, []Event{mine}},
		{"remote", remote, []Event{theirs}},
	} {
		c.sub.Close()
		var got []Event
		for e := range c.sub.C {
			got = append(got, e)
		}
		if d := cmp.Diff(c.want, got); d != "" {
			t.Errorf("%s subscription (-want +got):\n%s", c.name, d)
		}
	}
}
