package memory_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"

	"agentd/internal/embed"
	"agentd/internal/memory"
)

func Example() {
	ctx := context.Background()
	dir, _ := os.MkdirTemp("", "memory")
	defer os.RemoveAll(dir)

	s, err := memory.Open(ctx, filepath.Join(dir, "memory.db"), &memory.Options{Embedder: embed.NewHashed(384)})
	if err != nil {
		fmt.Println(err)
		return
	}
	defer s.Close()
	runCtx, stop := context.WithCancel(ctx)
	defer stop()
	go s.Run(runCtx) // embeds in the background

	p := memory.Provenance{Session: "chat:alice", Turn: 1}
	_, _ = s.Remember(ctx, "assistant", memory.Remember{Entities: []memory.EntityInput{
		{Name: "Alice", Type: "person", Observations: []string{"prefers green tea", "lives in Lyon"}},
	}}, p)
	_, _ = s.Relate(ctx, "assistant", []memory.Relation{{From: "Alice", To: "Acme", Type: "works_at"}}, p)

	r, _ := s.Recall(ctx, memory.Query{Scope: "assistant", Text: "what tea does Alice like?", Kinds: []string{memory.KindObservation}, K: 1})
	for _, it := range r.Items {
		fmt.Println(it.Entity+":", it.Snippet)
	}
	e, _ := s.Get(ctx, "assistant", "alice")
	fmt.Println(e.Name, e.Type, len(e.Observations), e.Relations[0].Type, e.Relations[0].To)
	// Output:
	// Alice: prefers green «tea»
	// Alice person 2 works_at Acme
}
