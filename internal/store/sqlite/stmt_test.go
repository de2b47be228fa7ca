package sqlite

import (
	"context"
	"errors"
	"path/filepath"
	"testing"

	"agentd/internal/store"
)

// The read statements are prepared when first used, not at Open, and a
// statement whose first caller gave up is prepared for the next.
func TestReadStatementsPreparedOnFirstUse(t *testing.T) {
	s, err := Open(context.Background(), filepath.Join(t.TempDir(), "a.db"), nil)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	if n := prepared(s); n != 0 {
		t.Fatalf("%d statements prepared by Open", n)
	}
	cancelled, cancel := context.WithCancel(context.Background())
	cancel()
	s.SessionByAddress(cancelled, "a", "k")
	if _, err := s.SessionByAddress(context.Background(), "a", "k"); !errors.Is(err, store.ErrNotFound) {
		t.Fatalf("SessionByAddress: %v, want ErrNotFound", err)
	}
	if n := prepared(s); n != 1 {
		t.Errorf("%d statements prepared after one kind of read, want 1", n)
	}
}

// prepared returns how many of s's read statements are prepared.
func prepared(s *Store) (n int) {
	for _, st := range s.r.all {
		st.mu.Lock()
		if st.st != nil {
			n++
		}
		st.mu.Unlock()
	}
	return n
}

// The job runs' reads are prepared statements, each prepared once
// however often it runs: a burst of fires reads its jobs' open runs, a
// scheduler's start every job's last run, and parsing the SQL anew each
// time cost more than the reads.
func TestJobRunReadsPrepared(t *testing.T) {
	ctx := context.Background()
	s, err := Open(ctx, filepath.Join(t.TempDir(), "a.db"), nil)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	reads := []struct {
		name string
		read func() error
	}{
		{"OpenRuns", func() error { _, err := s.OpenRuns(ctx, "j"); return err }},
		{"LastRun", func() error { _, err := s.LastRun(ctx, "j", store.TriggerCron); return err }},
		{"JobRuns", func() error { _, err := s.JobRuns(ctx, "j", "", 0); return err }},
		{"JobRuns before", func() error { _, err := s.JobRuns(ctx, "j", "20261126T080000.000Z", 0); return err }},
		{"JobRun", func() error { _, err := s.JobRun(ctx, "j", "20261126T080000.000Z"); return err }},
		{"UndeliveredRuns", func() error { _, err := s.UndeliveredRuns(ctx, "j", 0); return err }},
		{"DeliveryRun", func() error { _, err := s.DeliveryRun(ctx, "j", "d1"); return err }},
		{"MACRun", func() error { _, err := s.MACRun(ctx, "j", "00ff"); return err }},
	}
	for i, r := range reads {
		for range 2 {
			if err := r.read(); err != nil && !errors.Is(err, store.ErrNotFound) {
				t.Fatalf("%s: %v", r.name, err)
			}
		}
		if n := prepared(s); n != i+1 {
			t.Errorf("after %s twice: %d read statements prepared, want %d", r.name, n, i+1)
		}
	}
}
