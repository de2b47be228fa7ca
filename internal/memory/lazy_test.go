package memory

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
)

// A Store made by New opens its database when first used: reads before
// anything is written find nothing and create no file, the first write
// makes it, and a Store made again over it opens it at its first read.
func TestNewOpensOnFirstUse(t *testing.T) {
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "memory.db")
	s, err := New(path, &Options{Embedder: hashed()})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	runDone := make(chan error, 1)
	rctx, stop := context.WithCancel(ctx)
	defer stop()
	go func() { runDone <- s.Run(rctx) }()

	if r, err := s.Recall(ctx, Query{Scope: "a", Text: "lighthouse"}); err != nil || len(r.Items) != 0 {
		t.Errorf("recall before any memory: %+v, %v", r, err)
	}
	if items, err := s.List(ctx, "a", 10); err != nil || len(items) != 0 {
		t.Errorf("list before any memory: %v, %v", items, err)
	}
	if _, err := s.Get(ctx, "a", "Ana"); !errors.Is(err, ErrNotFound) {
		t.Errorf("get before any memory: %v, want ErrNotFound", err)
	}
	if n, err := s.Forget(ctx, "a", Forget{Entities: []string{"Ana"}}); err != nil || n != 0 {
		t.Errorf("forget before any memory: %d, %v", n, err)
	}
	if err := s.Drain(ctx); err != nil {
		t.Errorf("drain before any memory: %v", err)
	}
	if _, err := s.Recall(ctx, Query{Scope: "a", Text: ""}); !errors.Is(err, ErrInvalid) {
		t.Errorf("a bad query before any memory: %v, want ErrInvalid", err)
	}
	if _, err := os.Stat(path); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("reads made the database: %v", err)
	}

	if _, err := s.Remember(ctx, "a", Remember{Insight: "the lighthouse ships in March"}, Provenance{}); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(path); err != nil {
		t.Fatalf("the first write made no database: %v", err)
	}
	if err := s.Drain(ctx); err != nil {
		t.Fatal(err)
	}
	if r, err := s.Recall(ctx, Query{Scope: "a", Text: "lighthouse"}); err != nil || len(r.Items) != 1 {
		t.Errorf("recall after remembering: %+v, %v", r, err)
	}
	stop()
	if err := <-runDone; err != nil {
		t.Errorf("Run: %v", err)
	}
	s.Close()

	again, err := New(path, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer again.Close()
	if r, err := again.Recall(ctx, Query{Scope: "a", Text: "lighthouse"}); err != nil || len(r.Items) != 1 {
		t.Errorf("recall from a Store made again: %+v, %v", r, err)
	}
}

// A database that cannot be opened makes every call fail with
// ErrUnavailable, and OnUnavailable is told why once.
func TestNewUnavailable(t *testing.T) {
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "memory.db")
	if err := os.Mkdir(path, 0o700); err != nil { // not a database
		t.Fatal(err)
	}
	var mu sync.Mutex
	var told []error
	s, err := New(path, &Options{OnUnavailable: func(err error) { mu.Lock(); told = append(told, err); mu.Unlock() }})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	for range 2 {
		if _, err := s.Recall(ctx, Query{Scope: "a", Text: "x"}); !errors.Is(err, ErrUnavailable) {
			t.Errorf("recall: %v, want ErrUnavailable", err)
		}
		if _, err := s.Remember(ctx, "a", Remember{Insight: "x"}, Provenance{}); !errors.Is(err, ErrUnavailable) {
			t.Errorf("remember: %v, want ErrUnavailable", err)
		}
		if _, err := s.List(ctx, "a", 1); !errors.Is(err, ErrUnavailable) {
			t.Errorf("list: %v, want ErrUnavailable", err)
		}
	}
	mu.Lock()
	defer mu.Unlock()
	if len(told) != 1 || !strings.Contains(told[0].Error(), "memory: open") {
		t.Errorf("OnUnavailable told %v, want one reason", told)
	}
	if _, err := s.Recall(ctx, Query{Scope: "a", Text: "x"}); strings.Contains(err.Error(), path) {
		t.Errorf("the error a caller sees names the file: %v", err)
	}
}

// Close while a first use opens the database waits for it, and later
// calls say the Store is closed.
func TestNewCloseWhileOpening(t *testing.T) {
	ctx := context.Background()
	s, err := New(filepath.Join(t.TempDir(), "memory.db"), nil)
	if err != nil {
		t.Fatal(err)
	}
	var wg sync.WaitGroup
	for i := range 4 {
		wg.Go(func() {
			if i%2 == 0 {
				s.Remember(ctx, "a", Remember{Insight: "x"}, Provenance{})
			} else {
				s.Recall(ctx, Query{Scope: "a", Text: "x"})
			}
		})
	}
	if err := s.Close(); err != nil {
		t.Errorf("close: %v", err)
	}
	wg.Wait()
	if _, err := s.Remember(ctx, "a", Remember{Insight: "y"}, Provenance{}); !errors.Is(err, ErrClosed) {
		t.Errorf("remember after close: %v, want ErrClosed", err)
	}
}
