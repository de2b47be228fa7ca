package storetest

import (
	"errors"
	"fmt"
	"sync"
	"testing"

	"agentd/internal/store"
)

// testClaim: a piece of work is taken once, by one of racing callers, and
// stays taken after the store is opened again.
func testClaim(t *testing.T, x *suite) {
	name := x.name()
	s := x.open(t, name)
	ctx := t.Context()
	for _, c := range []struct {
		key, node string
		want      bool
	}{
		{"cron:digest:1", "n1", true},
		{"cron:digest:1", "n1", false},
		{"cron:digest:1", "n2", false},
		{"cron:digest:2", "n2", true},
	} {
		if got, err := s.Claim(ctx, c.key, c.node); err != nil || got != c.want {
			t.Errorf("Claim(%q, %q) = %v, %v; want %v", c.key, c.node, got, err, c.want)
		}
	}
	for _, bad := range [][2]string{{"", "n1"}, {"k", ""}} {
		if _, err := s.Claim(ctx, bad[0], bad[1]); !errors.Is(err, store.ErrInvalid) {
			t.Errorf("Claim(%q, %q) = %v, want ErrInvalid", bad[0], bad[1], err)
		}
	}
	var wg sync.WaitGroup
	var mu sync.Mutex
	var won []string
	for i := range 8 {
		wg.Go(func() {
			node := fmt.Sprintf("n%d", i)
			took, err := s.Claim(ctx, "poll:feed:7", node)
			if err != nil {
				t.Errorf("Claim by %s: %v", node, err)
			}
			if took {
				mu.Lock()
				won = append(won, node)
				mu.Unlock()
			}
		})
	}
	wg.Wait()
	if len(won) != 1 {
		t.Errorf("racing claims: taken by %v, want exactly one", won)
	}
	s.Close()
	s = x.open(t, name)
	if took, err := s.Claim(ctx, "cron:digest:1", "n3"); err != nil || took {
		t.Errorf("Claim after reopening = %v, %v; want false: claimed before", took, err)
	}
}

// testLead: a role has one leader at a time; released, it can be taken
// again; the store's Close ends every leadership.
func testLead(t *testing.T, x *suite) {
	s := x.newStore(t)
	ctx := t.Context()
	l, err := s.TryLead(ctx, "cron")
	if err != nil || l == nil {
		t.Fatalf("TryLead(cron) = %v, %v; want the leadership", l, err)
	}
	if l2, err := s.TryLead(ctx, "cron"); err != nil || l2 != nil {
		t.Errorf("TryLead(cron) while led = %v, %v; want none", l2, err)
	}
	other, err := s.TryLead(ctx, "connectors")
	if err != nil || other == nil {
		t.Fatalf("TryLead(connectors) = %v, %v; want the leadership", other, err)
	}
	if _, err := s.TryLead(ctx, ""); !errors.Is(err, store.ErrInvalid) {
		t.Errorf("TryLead(\"\") = %v, want ErrInvalid", err)
	}
	select {
	case <-l.Lost():
		t.Fatal("leadership lost before it was released")
	default:
	}
	l.Release()
	<-l.Lost()
	l.Release() // again: nothing
	l3, err := s.TryLead(ctx, "cron")
	if err != nil || l3 == nil {
		t.Fatalf("TryLead(cron) after release = %v, %v; want the leadership", l3, err)
	}
	s.Close()
	<-l3.Lost()
	<-other.Lost()
	if _, err := s.TryLead(ctx, "cron"); !errors.Is(err, store.ErrClosed) {
		t.Errorf("TryLead after Close = %v, want ErrClosed", err)
	}
}
