package job_test

import (
	"context"
	"encoding/json"
	"os"
	"path"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"agentd/internal/extension"
	"agentd/internal/job"
	"agentd/internal/store"
	"agentd/internal/testkit"
)

func TestMatchGlob(t *testing.T) {
	for _, c := range []struct {
		pattern, name string
		want          bool
	}{
		{"", "a/b.md", true},
		{"*.md", "a.md", true},
		{"*.md", "notes/deep/a.md", true},
		{"*.md", "a.txt", false},
		{"notes/*.md", "notes/a.md", true},
		{"notes/*.md", "notes/deep/a.md", false},
		{"notes/**/*.md", "notes/a.md", true},
		{"notes/**/*.md", "notes/x/y/a.md", true},
		{"notes/**/*.md", "other/a.md", false},
		{"**/b/*.go", "a/b/c.go", true},
		{"**", "a/b/c", true},
		{"a/[", "a/[", false},
	} {
		if got := job.MatchGlob(c.pattern, c.name); got != c.want {
			t.Errorf("MatchGlob(%q, %q) = %v, want %v", c.pattern, c.name, got, c.want)
		}
	}
}

// FuzzMatchGlob checks MatchGlob against path.Match: for a pattern with
// a "/" and no "**", and a name, they agree (a malformed pattern matches
// nothing); without a "/", MatchGlob is path.Match of the name's last
// element.
func FuzzMatchGlob(f *testing.F) {
	for _, s := range [][2]string{{"a/*.md", "a/b.md"}, {"*.go", "x/y.go"}, {"a/[b-d]/?", "a/c/x"}, {"a/\\*", "a/*"}} {
		f.Add(s[0], s[1])
	}
	f.Fuzz(func(t *testing.T, pattern, name string) {
		got := job.MatchGlob(pattern, name)
		if pattern == "" || strings.Contains(pattern, "**") {
			return
		}
		var want bool
		var err error
		if strings.Contains(pattern, "/") {
			want, err = path.Match(pattern, name)
		} else {
			want, err = path.Match(pattern, path.Base(name))
		}
		if err != nil {
			want = false
		}
		if got != want {
			t.Fatalf("MatchGlob(%q, %q) = %v, path.Match says %v", pattern, name, got, want)
		}
	})
}

// TestWatchPathRefused: a watch's path must be a directory that exists,
// and not agentd's data directory or anything in it but its workspace.
func TestWatchPathRefused(t *testing.T) {
	data := t.TempDir()
	for _, d := range []string{"agents", "workspace/notes"} {
		if err := os.MkdirAll(filepath.Join(data, d), 0o700); err != nil {
			t.Fatal(err)
		}
	}
	outside := t.TempDir()
	os.WriteFile(filepath.Join(outside, "f"), nil, 0o600)
	r := job.New(nil, nil, testkit.Agents{"assistant": testkit.Agent("assistant")}, &job.Options{Dir: data})
	defer r.Close()
	for _, c := range []struct{ path, want string }{
		{"workspace/notes", ""},
		{"workspace", ""},
		{outside, ""},
		{".", "is in agentd's data directory"},
		{data, "is in agentd's data directory"},
		{"agents", "is in agentd's data directory"},
		{"workspace/../agents", "is in agentd's data directory"},
		{"workspace/missing", "no such file or directory"},
		{filepath.Join(outside, "f"), "is not a directory"},
	} {
		spec := `{"agent":"assistant","prompt":"p","triggers":[{"watch":{"path":` + strings.TrimSpace(mustJSON(c.path)) + `}}]}`
		errs := r.Check(context.Background(), &extension.Doc{Type: "job", Name: "w", Spec: json.RawMessage(spec)})
		actErr := r.Activate(context.Background(), &store.Extension{Type: "job", Name: "w", Spec: json.RawMessage(spec)})
		if c.want == "" {
			if len(errs) != 0 || actErr != nil {
				t.Errorf("%s: refused: %v %v", c.path, errs, actErr)
			}
			continue
		}
		if len(errs) != 1 || errs[0].Pointer != "/spec/triggers/0/watch/path" || !strings.Contains(errs[0].Message, c.want) {
			t.Errorf("%s: %v, want %q", c.path, errs, c.want)
		}
		if actErr == nil || !strings.Contains(actErr.Error(), c.want) {
			t.Errorf("%s activated: %v", c.path, actErr)
		}
	}
}

func mustJSON(v any) string {
	b, _ := json.Marshal(v)
	return string(b)
}

// TestWatchFires: while the scheduler runs, changes under the watched
// directory matching the glob fire the job with their relative paths,
// a directory made later included; changes elsewhere do not.
func TestWatchFires(t *testing.T) {
	data := t.TempDir()
	dir := filepath.Join(data, "workspace", "notes")
	if err := os.MkdirAll(dir, 0o700); err != nil {
		t.Fatal(err)
	}
	k := testkit.New(t, nil)
	r := job.New(k.Runtime, k.Store, testkit.Agents{"assistant": testkit.Agent("assistant")}, &job.Options{Dir: data})
	e := &env{k: k, r: r}
	e.put(t, "w", `{"agent":"assistant","prompt":"changed {{payload.paths}}","triggers":[{"watch":{"path":"workspace/notes","glob":"*.md","events":["create","write"],"debounce":"1s"}}]}`)
	s := job.NewScheduler(r, k.Store, nil)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		s.Run(ctx)
		close(done)
	}()
	defer func() {
		cancel()
		<-done
		r.Close()
	}()
	// The watch starts when the scheduler adds the job: write until a
	// run shows it was seen.
	seen := func(p string) func(store.JobRun) bool {
		return func(jr store.JobRun) bool {
			var wp job.WatchPayload
			json.Unmarshal(jr.Payload, &wp)
			return ended(jr) && slices.Contains(wp.Paths, p)
		}
	}
	write := func(rel string) {
		t.Helper()
		p := filepath.Join(dir, filepath.FromSlash(rel))
		if err := os.MkdirAll(filepath.Dir(p), 0o700); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte("x"), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	write("a.md")
	write("skip.txt")
	if err := os.WriteFile(filepath.Join(data, "agents.yaml"), nil, 0o600); err != nil { // outside the watch
		t.Fatal(err)
	}
	first := pollRun(t, k.Store, "w", func() { write("a.md") }, seen("a.md"))
	var wp job.WatchPayload
	if err := json.Unmarshal(first.Payload, &wp); err != nil || slices.Contains(wp.Paths, "skip.txt") || first.Trigger != store.TriggerWatch {
		t.Fatalf("watch run %+v: %v", first, err)
	}
	if !strings.Contains(first.Output, `changed ["`) {
		t.Fatalf("watch run's output %q", first.Output)
	}
	pollRun(t, k.Store, "w", func() { write("sub/deep/b.md") }, seen("sub/deep/b.md"))
}
