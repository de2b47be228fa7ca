package extension_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"testing/fstest"

	"github.com/google/go-cmp/cmp"

	"agentd/internal/extension"
	"agentd/internal/store"
	"agentd/internal/testkit"
)

// recorder is a handler that keeps what is active, and fails to activate
// a spec holding "fail": true.
type recorder struct {
	mu     sync.Mutex
	active map[string]string // name → spec
}

func (r *recorder) Activate(_ context.Context, e *store.Extension) error {
	var v struct{ Fail bool }
	_ = json.Unmarshal(e.Spec, &v)
	if v.Fail {
		return errors.New("cannot activate")
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	r.active[e.Name] = string(e.Spec)
	return nil
}

func (r *recorder) Deactivate(_ context.Context, name string) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	delete(r.active, name)
	return nil
}

func (r *recorder) get(name string) string {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.active[name]
}

const noteSchema = `{"type":"object","properties":{"text":{"type":"string"},"fail":{"type":"boolean"}},"additionalProperties":false}`

type fixture struct {
	m   *extension.Manager
	st  store.ExtensionStore
	rec *recorder
	dir string
}

func newFixture(t *testing.T, builtins fstest.MapFS) *fixture {
	t.Helper()
	f := &fixture{st: testkit.ExtensionStore(t), rec: &recorder{active: map[string]string{}}, dir: t.TempDir()}
	if builtins == nil {
		builtins = fstest.MapFS{}
	}
	f.m = extension.New(f.st, &extension.Options{Dir: f.dir, Builtins: builtins})
	for _, typ := range []extension.Type{
		{Name: "note", Schema: json.RawMessage(noteSchema), Handler: f.rec},
		{Name: "app", Schema: json.RawMessage(noteSchema), Handler: &recorder{active: map[string]string{}}, PersonEnables: true},
	} {
		if err := f.m.Register(typ); err != nil {
			t.Fatal(err)
		}
	}
	if err := f.m.Start(t.Context()); err != nil {
		t.Fatal(err)
	}
	return f
}

var (
	person = extension.Who{Provenance: store.ProvenanceUser, By: "user:test"}
	alice  = extension.Who{Provenance: "agent:alice"}
	bob    = extension.Who{Provenance: "agent:bob"}
)

func doc(typ, name, spec string) extension.Doc {
	return extension.Doc{Type: typ, Name: name, Spec: json.RawMessage(spec)}
}

func TestPutActivatesAndFailureKeepsPrevious(t *testing.T) {
	f := newFixture(t, nil)
	ctx := t.Context()
	s, err := f.m.Put(ctx, doc("note", "a", `{"text": "one"}`), person)
	if err != nil {
		t.Fatal(err)
	}
	if s.Version != 1 || s.Active != 1 || f.rec.get("a") != `{"text":"one"}` {
		t.Fatalf("after put: %+v, active %q", s, f.rec.get("a"))
	}
	s, err = f.m.Put(ctx, doc("note", "a", `{"text":"two","fail":true}`), person)
	if err != nil {
		t.Fatal(err)
	}
	if s.Version != 2 || s.Active != 1 || s.Error == "" || f.rec.get("a") != `{"text":"one"}` {
		t.Fatalf("a failed activation: %+v, active %q", s, f.rec.get("a"))
	}
	// The same document again writes nothing.
	again, err := f.m.Put(ctx, doc("note", "a", `{"fail":true, "text":"two"}`), person)
	if err != nil || again.Version != 2 {
		t.Fatalf("same document: %+v, %v", again, err)
	}
	s, err = f.m.Revert(ctx, "note", "a", 1, person)
	if err != nil {
		t.Fatal(err)
	}
	if s.Version != 3 || s.Active != 3 || s.Error != "" || f.rec.get("a") != `{"text":"one"}` {
		t.Fatalf("after revert: %+v", s)
	}
	h, err := f.m.History(ctx, "note", "a")
	if err != nil {
		t.Fatal(err)
	}
	var ops []string
	for _, c := range h {
		ops = append(ops, fmt.Sprintf("%d %s", c.Version, c.Op))
	}
	if diff := cmp.Diff([]string{"1 put", "2 put", "3 revert"}, ops); diff != "" {
		t.Fatalf("history (-want +got):\n%s", diff)
	}
}

func TestDisableEnableDelete(t *testing.T) {
	f := newFixture(t, nil)
	ctx := t.Context()
	if _, err := f.m.Put(ctx, doc("note", "a", `{"text":"x"}`), person); err != nil {
		t.Fatal(err)
	}
	s, err := f.m.SetEnabled(ctx, "note", "a", false, person)
	if err != nil || s.Enabled || s.Active != 0 || f.rec.get("a") != "" {
		t.Fatalf("disabled: %+v %v active %q", s, err, f.rec.get("a"))
	}
	if s, err = f.m.SetEnabled(ctx, "note", "a", true, person); err != nil || s.Active != s.Version || f.rec.get("a") == "" {
		t.Fatalf("enabled: %+v %v", s, err)
	}
	if err := f.m.Delete(ctx, "note", "a", person); err != nil {
		t.Fatal(err)
	}
	if f.rec.get("a") != "" {
		t.Fatal("a deleted row stays active")
	}
	if _, err := f.m.Get(ctx, "note", "a"); !errors.Is(err, store.ErrNotFound) {
		t.Fatalf("get after delete: %v", err)
	}
}

func TestNameAndTypeChecked(t *testing.T) {
	f := newFixture(t, nil)
	ctx := t.Context()
	for _, name := range []string{"../x", "a/b", "", ".a", "a..b", "a b"} {
		_, err := f.m.Put(ctx, doc("note", name, `{}`), person)
		var ve *extension.ValidationError
		if !errors.As(err, &ve) || ve.Errors[0].Pointer != "/name" {
			t.Errorf("name %q: %v", name, err)
		}
	}
	if _, err := f.m.Put(ctx, doc("nope", "a", `{}`), person); !errors.Is(err, extension.ErrUnknownType) {
		t.Errorf("unknown type: %v", err)
	}
	for _, spec := range []string{``, `[]`, `"x"`, `{`, `{} {}`} {
		_, err := f.m.Put(ctx, doc("note", "a", spec), person)
		var ve *extension.ValidationError
		if !errors.As(err, &ve) || ve.Errors[0].Pointer != "/spec" {
			t.Errorf("spec %q: %v", spec, err)
		}
	}
}

func TestAgentsChangeOnlyTheirRows(t *testing.T) {
	f := newFixture(t, nil)
	ctx := t.Context()
	if _, err := f.m.Put(ctx, doc("note", "mine", `{"text":"a"}`), alice); err != nil {
		t.Fatal(err)
	}
	if _, err := f.m.Put(ctx, doc("note", "mine", `{"text":"b"}`), alice); err != nil {
		t.Fatalf("an agent changes its own row: %v", err)
	}
	if _, err := f.m.Put(ctx, doc("note", "mine", `{"text":"c"}`), bob); !errors.Is(err, extension.ErrForbidden) {
		t.Fatalf("another agent's row: %v", err)
	}
	if _, err := f.m.SetEnabled(ctx, "note", "mine", false, bob); !errors.Is(err, extension.ErrForbidden) {
		t.Fatalf("another agent disables: %v", err)
	}
	any := bob
	any.Any = true
	if _, err := f.m.Put(ctx, doc("note", "mine", `{"text":"c"}`), any); err != nil {
		t.Fatalf("an agent allowed any row: %v", err)
	}
	if _, err := f.m.Put(ctx, doc("note", "theirs", `{"text":"a"}`), person); err != nil {
		t.Fatal(err)
	}
	if err := f.m.Delete(ctx, "note", "theirs", alice); !errors.Is(err, extension.ErrForbidden) {
		t.Fatalf("an agent deletes a person's row: %v", err)
	}
	// A row of a type a person enables is stored disabled when an agent writes it.
	s, err := f.m.Put(ctx, doc("app", "site", `{"text":"a"}`), alice)
	if err != nil || s.Enabled {
		t.Fatalf("an agent's app: %+v %v", s, err)
	}
	if _, err := f.m.SetEnabled(ctx, "app", "site", true, alice); !errors.Is(err, extension.ErrForbidden) {
		t.Fatalf("an agent enables its app: %v", err)
	}
	if s, err := f.m.SetEnabled(ctx, "app", "site", true, person); err != nil || !s.Enabled || s.Active == 0 {
		t.Fatalf("a person enables it: %+v %v", s, err)
	}
	// An agent's change of the enabled app waits for a person too.
	if s, err := f.m.Put(ctx, doc("app", "site", `{"text":"b"}`), alice); err != nil || s.Enabled || s.Active != 0 {
		t.Fatalf("an agent changes an enabled app: %+v %v", s, err)
	}
}

func TestReseed(t *testing.T) {
	builtins := fstest.MapFS{
		"note/b.yaml": {Data: []byte("type: note\nname: b\nspec:\n  text: built in\n")},
		"note/c.yaml": {Data: []byte("spec: {text: c}\n")},
	}
	f := newFixture(t, builtins)
	ctx := t.Context()
	if f.rec.get("b") != `{"text":"built in"}` || f.rec.get("c") == "" {
		t.Fatalf("built-ins not active after start: %v", f.rec.active)
	}
	// A file overrides a built-in of the same name.
	writeSeed(t, f.dir, "note", "b", "spec: {text: from file}\n")
	writeSeed(t, f.dir, "note", "bad", "spec: {text: 3}\n")
	writeSeed(t, f.dir, "note", "wrong", "type: note\nname: other\nspec: {}\n")
	rep, err := f.m.Reseed(ctx, false)
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff([]string{"note/b"}, rep.Updated); diff != "" || len(rep.Errors) != 2 {
		t.Fatalf("report: %+v", rep)
	}
	s, _ := f.m.Get(ctx, "note", "b")
	if s.Provenance != store.ProvenanceFile || s.Seed != store.ProvenanceFile || s.Drift || f.rec.get("b") != `{"text":"from file"}` {
		t.Fatalf("b: %+v", s)
	}
	// A person's change is kept, and shows as drift.
	if _, err := f.m.Put(ctx, doc("note", "b", `{"text":"mine"}`), person); err != nil {
		t.Fatal(err)
	}
	rep, _ = f.m.Reseed(ctx, false)
	s, _ = f.m.Get(ctx, "note", "b")
	if !cmp.Equal([]string{"note/b"}, rep.Kept) || !s.Drift || f.rec.get("b") != `{"text":"mine"}` {
		t.Fatalf("kept: %+v, %+v", rep, s)
	}
	rep, _ = f.m.Reseed(ctx, true)
	s, _ = f.m.Get(ctx, "note", "b")
	if !cmp.Equal([]string{"note/b"}, rep.Updated) || s.Drift || f.rec.get("b") != `{"text":"from file"}` {
		t.Fatalf("forced: %+v, %+v", rep, s)
	}
	// Removing a person's row over a seed document gives the row back to
	// the document.
	if _, err := f.m.Put(ctx, doc("note", "c", `{"text":"mine"}`), person); err != nil {
		t.Fatal(err)
	}
	if err := f.m.Delete(ctx, "note", "c", person); err != nil {
		t.Fatal(err)
	}
	if s, err := f.m.Get(ctx, "note", "c"); err != nil || s.Provenance != store.ProvenanceBuiltin || s.Drift || f.rec.get("c") != `{"text":"c"}` {
		t.Fatalf("c after removing the person's row: %+v %v, active %q", s, err, f.rec.get("c"))
	}
	// A seeded row whose document is gone is removed.
	if err := os.Remove(filepath.Join(f.dir, "extensions", "note", "b.yaml")); err != nil {
		t.Fatal(err)
	}
	delete(builtins, "note/b.yaml")
	rep, _ = f.m.Reseed(ctx, false)
	if !cmp.Equal([]string{"note/b"}, rep.Removed) || f.rec.get("b") != "" {
		t.Fatalf("removed: %+v", rep)
	}
}

func writeSeed(t *testing.T, dir, typ, name, body string) {
	t.Helper()
	d := filepath.Join(dir, "extensions", typ)
	if err := os.MkdirAll(d, 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(d, name+".yaml"), []byte(body), 0o600); err != nil {
		t.Fatal(err)
	}
}

func TestChangedFollowsTheStore(t *testing.T) {
	f := newFixture(t, nil)
	ctx := t.Context()
	// Another node writes the store directly; Changed brings this one in step.
	e, _ := f.st.PutExtension(ctx, store.Extension{Type: "note", Name: "x", Spec: json.RawMessage(`{"text":"n2"}`), Enabled: true,
		Provenance: store.ProvenanceUser}, store.ExtPut, store.NoVersion)
	f.m.Changed(ctx, "note", "x")
	if f.rec.get("x") == "" {
		t.Fatal("a row another node wrote is not active")
	}
	_ = f.st.DeleteExtension(ctx, "note", "x", "user", e.Version)
	f.m.Changed(ctx, "", "")
	if f.rec.get("x") != "" {
		t.Fatal("a row another node removed stays active after a resync")
	}
}

// On a shared store a node lacking a seed document another node has does
// not remove the row that document wrote.
func TestSharedStoreKeepsOthersSeeds(t *testing.T) {
	f := newFixture(t, fstest.MapFS{"note/b.yaml": {Data: []byte("spec: {text: b}\n")}})
	other := extension.New(f.st, &extension.Options{Dir: t.TempDir(), Builtins: fstest.MapFS{}, Shared: true})
	if err := other.Register(extension.Type{Name: "note", Schema: json.RawMessage(noteSchema), Handler: &recorder{active: map[string]string{}}}); err != nil {
		t.Fatal(err)
	}
	rep, err := other.Reseed(t.Context(), false)
	if err != nil || len(rep.Removed) != 0 {
		t.Fatalf("reseed on another node: %+v %v", rep, err)
	}
	if _, err := other.Get(t.Context(), "note", "b"); err != nil {
		t.Fatalf("the row another node's seed wrote: %v", err)
	}
}

// An agent writes a row that starts processes on the machine only when its
// file allows it; a person always may (the API makes that an admin route).
func TestAgentsNeedTheMachineRight(t *testing.T) {
	f := newFixture(t, nil)
	ctx := t.Context()
	if err := f.m.Register(extension.Type{Name: "server", Schema: json.RawMessage(noteSchema), Handler: &recorder{active: map[string]string{}},
		Machine: func(spec json.RawMessage) bool { return strings.Contains(string(spec), "run") }}); err != nil {
		t.Fatal(err)
	}
	if _, err := f.m.Put(ctx, doc("server", "s", `{"text":"run rm -rf"}`), alice); !errors.Is(err, extension.ErrForbidden) {
		t.Fatalf("an agent starting a process: %v", err)
	}
	if _, err := f.m.Put(ctx, doc("server", "s", `{"text":"harmless"}`), alice); err != nil {
		t.Fatalf("a spec that starts nothing: %v", err)
	}
	if _, err := f.m.Revert(ctx, "server", "s", 1, alice); err != nil {
		t.Fatalf("revert to a harmless version: %v", err)
	}
	machine := alice
	machine.Machine = true
	if _, err := f.m.Put(ctx, doc("server", "s", `{"text":"run it"}`), machine); err != nil {
		t.Fatalf("an agent allowed the machine: %v", err)
	}
	if _, err := f.m.Put(ctx, doc("server", "p", `{"text":"run it"}`), person); err != nil {
		t.Fatalf("a person: %v", err)
	}
}

// An agent writes a row that makes an agent act (a job) only for itself,
// unless it may change any row.
func TestAgentsMakeOnlyThemselvesAct(t *testing.T) {
	f := newFixture(t, nil)
	ctx := t.Context()
	if err := f.m.Register(extension.Type{Name: "task", Schema: json.RawMessage(`{"type":"object"}`), Handler: &recorder{active: map[string]string{}},
		Actor: extension.AgentOf}); err != nil {
		t.Fatal(err)
	}
	if _, err := f.m.Put(ctx, doc("task", "t", `{"agent":"root-agent"}`), alice); !errors.Is(err, extension.ErrForbidden) {
		t.Fatalf("a job of another agent: %v", err)
	}
	if _, err := f.m.Put(ctx, doc("task", "t", `{"agent":"alice"}`), alice); err != nil {
		t.Fatalf("a job of its own: %v", err)
	}
	anyRow := alice
	anyRow.Any = true
	if _, err := f.m.Put(ctx, doc("task", "u", `{"agent":"root-agent"}`), anyRow); err != nil {
		t.Fatalf("an agent allowed any row: %v", err)
	}
}
