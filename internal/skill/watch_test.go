package skill

import (
	"context"
	"os"
	"path/filepath"
	"testing"
	"time"
)

func writeSkill(t *testing.T, dir, name, description string) {
	t.Helper()
	if err := os.MkdirAll(filepath.Join(dir, name), 0o755); err != nil {
		t.Fatal(err)
	}
	data := "---\nname: " + name + "\ndescription: " + description + "\n---\nBody.\n"
	if err := os.WriteFile(filepath.Join(dir, name, FileName), []byte(data), 0o644); err != nil {
		t.Fatal(err)
	}
}

// waitFor reads loaded sets until one satisfies ok. It fails the test if
// none does within a generous time: a watcher that misses a change never
// reloads.
func waitFor(t *testing.T, loads <-chan *Set, what string, ok func(*Set) bool) {
	t.Helper()
	fail := time.After(20 * time.Second)
	for {
		select {
		case s := <-loads:
			if ok(s) {
				return
			}
		case <-fail:
			t.Fatalf("no reload with %s", what)
		}
	}
}

func description(s *Set, name string) string {
	sk, ok := s.Get(name)
	if !ok {
		return ""
	}
	return sk.Description
}

func TestWatch(t *testing.T) {
	root := t.TempDir()
	dir := filepath.Join(root, "skills")
	later := filepath.Join(root, "later") // created while watching
	writeSkill(t, dir, "old", "Was there first.")

	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()
	loads := make(chan *Set)
	done := make(chan error, 1)
	go func() {
		done <- Watch(ctx, []string{dir, later}, nil, func(s *Set) {
			select {
			case loads <- s:
			case <-ctx.Done():
			}
		})
	}()

	waitFor(t, loads, "the first load", func(s *Set) bool { return description(s, "old") != "" })

	writeSkill(t, dir, "new", "Added while watching.")
	waitFor(t, loads, "the new skill", func(s *Set) bool { return description(s, "new") == "Added while watching." })

	writeSkill(t, dir, "new", "Edited.")
	waitFor(t, loads, "the edit", func(s *Set) bool { return description(s, "new") == "Edited." })

	if err := os.RemoveAll(filepath.Join(dir, "old")); err != nil {
		t.Fatal(err)
	}
	waitFor(t, loads, "the removal", func(s *Set) bool { _, ok := s.Get("old"); return !ok })

	writeSkill(t, later, "new", "Overrides from a directory created later.")
	waitFor(t, loads, "the later directory", func(s *Set) bool {
		return description(s, "new") == "Overrides from a directory created later."
	})

	cancel()
	if err := <-done; err != nil {
		t.Errorf("Watch returned %v, want nil", err)
	}
}

func TestRelevant(t *testing.T) {
	dirs := []string{"/s/a", "/s/b"}
	for name, want := range map[string]bool{
		"/s/a":                   true,
		"/s/a/pdf":               true,
		"/s/b/pdf/SKILL.md":      true,
		"/s/a/pdf/scripts":       false,
		"/s/a/pdf/notes.md":      false,
		"/s/a/pdf/x/SKILL.md":    false,
		"/s/a/.git":              false,
		"/s/a/.hidden/SKILL.md":  false,
		"/s/c/pdf/SKILL.md":      false,
		"/s":                     false,
		"/s/a/pdf/SKILL.md.swp":  false,
		"/s/a/pdf/.SKILL.md.swp": false,
	} {
		if got := relevant(dirs, name); got != want {
			t.Errorf("relevant(%s) = %v, want %v", name, got, want)
		}
	}
}
