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
	prepared := func() (n int) {
		for _, st := range s.r.all {
			st.mu.Lock()
			if st.st != nil {
				n++
			}
			st.mu.Unlock()
		}
		return n
	}
	if n := prepared(); n != 0 {
		t.Fatalf("%d statements prepared by Open", n)
	}
	cancelled, cancel := context.WithCancel(context.Background())
	cancel()
	s.SessionByAddress(cancelled, "a", "k")
	if _, err := s.SessionByAddress(context.Background(), "a", "k"); !errors.Is(err, store.ErrNotFound) {
		t.Fatalf("SessionByAddress: %v, want ErrNotFound", err)
	}
	if n := prepared(); n != 1 {
		t.Errorf("%d statements prepared after one kind of read, want 1", n)
	}
}
