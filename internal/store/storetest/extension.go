package storetest

import (
	"encoding/json"
	"errors"
	"fmt"
	"sync"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"

	"agentd/internal/store"
)

// ext is a row to write: type action, the name given, spec {"url": url}.
func ext(name, url string, enabled bool, prov, by string) store.Extension {
	return store.Extension{Type: "action", Name: name, Spec: json.RawMessage(`{ "url" : "` + url + `" }`),
		Enabled: enabled, Provenance: prov, UpdatedBy: by}
}

func mustPutExt(t testing.TB, s Store, e store.Extension, op string, ifVersion int64) store.Extension {
	t.Helper()
	got, err := s.PutExtension(t.Context(), e, op, ifVersion)
	if err != nil {
		t.Fatalf("PutExtension(%s/%s, %s, %d): %v", e.Type, e.Name, op, ifVersion, err)
	}
	return got
}

// ignoreTimes leaves the times out of a comparison: they are checked
// apart.
var ignoreTimes = cmpopts.IgnoreFields(store.Extension{}, "CreatedAt", "UpdatedAt")

// A row is made at version 1, grows by one with every write, keeps who
// made it and when, is stored with its spec compacted and reads back as
// written, after the store is opened again too.
func testExtensionPut(t *testing.T, x *suite) {
	name := x.name()
	s := x.open(t, name)
	ctx := t.Context()
	first := mustPutExt(t, s, ext("weather", "https://a.example", true, store.ProvenanceUser, "user:cli"), store.ExtPut, store.NoVersion)
	want := store.Extension{Type: "action", Name: "weather", Spec: json.RawMessage(`{"url":"https://a.example"}`), Enabled: true,
		Version: 1, Provenance: store.ProvenanceUser, CreatedBy: "user:cli", UpdatedBy: "user:cli"}
	if d := cmp.Diff(want, first, ignoreTimes); d != "" {
		t.Fatalf("the new row (-want +got):\n%s", d)
	}
	if first.CreatedAt.IsZero() || !first.UpdatedAt.Equal(first.CreatedAt) {
		t.Errorf("a new row's times: created %v, updated %v", first.CreatedAt, first.UpdatedAt)
	}
	second := ext("weather", "https://b.example", true, store.ProvenanceAgent+"researcher", "")
	second.SeedHash, second.Version, second.CreatedBy = "abc123", 42, "someone else" // SeedHash kept; the others ignored
	got := mustPutExt(t, s, second, store.ExtPut, 1)
	want.Spec, want.Version, want.Provenance, want.SeedHash, want.UpdatedBy = json.RawMessage(`{"url":"https://b.example"}`), 2,
		store.ProvenanceAgent+"researcher", "abc123", store.ProvenanceAgent+"researcher"
	if d := cmp.Diff(want, got, ignoreTimes); d != "" {
		t.Fatalf("the updated row (-want +got):\n%s", d)
	}
	if !got.CreatedAt.Equal(first.CreatedAt) || got.UpdatedAt.Before(first.UpdatedAt) {
		t.Errorf("updated row's times: created %v (was %v), updated %v (was %v)", got.CreatedAt, first.CreatedAt, got.UpdatedAt, first.UpdatedAt)
	}
	disabled := got
	disabled.Enabled, disabled.Provenance, disabled.UpdatedBy = false, store.ProvenanceUser, "user:console"
	got = mustPutExt(t, s, disabled, store.ExtDisable, store.AnyVersion)
	if got.Version != 3 || got.Enabled || got.CreatedBy != "user:cli" {
		t.Errorf("after disable: %+v; want version 3, disabled, made by user:cli", got)
	}
	read, err := s.Extension(ctx, "action", "weather")
	if err != nil {
		t.Fatal(err)
	}
	if d := cmp.Diff(got, read, cmpopts.EquateApproxTime(0)); d != "" {
		t.Errorf("Extension (-written +read):\n%s", d)
	}
	s.Close()
	s = x.open(t, name)
	again, err := s.Extension(ctx, "action", "weather")
	if err != nil {
		t.Fatal(err)
	}
	if d := cmp.Diff(got, again, cmpopts.EquateApproxTime(0)); d != "" {
		t.Errorf("Extension after reopening (-written +read):\n%s", d)
	}
}

// A write that expects the row at another version than it is writes
// nothing and is ErrConflict; AnyVersion writes whatever the version.
func testExtensionConflict(t *testing.T, x *suite) {
	s := x.newStore(t)
	ctx := t.Context()
	mustPutExt(t, s, ext("w", "v1", true, store.ProvenanceUser, ""), store.ExtPut, store.NoVersion)
	mustPutExt(t, s, ext("w", "v2", true, store.ProvenanceUser, ""), store.ExtPut, 1)
	for _, c := range []struct {
		what      string
		name      string
		ifVersion int64
	}{
		{"NoVersion on an existing row", "w", store.NoVersion},
		{"a stale version", "w", 1},
		{"a version ahead", "w", 3},
		{"a version of a row that does not exist", "none", 1},
	} {
		_, err := s.PutExtension(ctx, ext(c.name, "v-bad", false, store.ProvenanceUser, ""), store.ExtPut, c.ifVersion)
		if !errors.Is(err, store.ErrConflict) {
			t.Errorf("%s: PutExtension = %v, want ErrConflict", c.what, err)
		}
	}
	if err := s.DeleteExtension(ctx, "action", "w", "user", 1); !errors.Is(err, store.ErrConflict) {
		t.Errorf("DeleteExtension at a stale version = %v, want ErrConflict", err)
	}
	if e, err := s.Extension(ctx, "action", "w"); err != nil || e.Version != 2 || string(e.Spec) != `{"url":"v2"}` {
		t.Errorf("after the conflicts: %+v, %v; want version 2 as written", e, err)
	}
	if _, err := s.Extension(ctx, "action", "none"); !errors.Is(err, store.ErrNotFound) {
		t.Errorf("a conflicting write made a row: %v", err)
	}
	if h, err := s.ExtensionHistory(ctx, "action", "w"); err != nil || len(h) != 2 {
		t.Errorf("history after the conflicts: %d changes, %v; want 2", len(h), err)
	}
	if e := mustPutExt(t, s, ext("w", "v3", true, store.ProvenanceUser, ""), store.ExtPut, store.AnyVersion); e.Version != 3 {
		t.Errorf("AnyVersion on an existing row wrote version %d, want 3", e.Version)
	}
	if e := mustPutExt(t, s, ext("new", "v1", true, store.ProvenanceUser, ""), store.ExtPut, store.AnyVersion); e.Version != 1 {
		t.Errorf("AnyVersion on no row wrote version %d, want 1", e.Version)
	}
}

// The history lists every change, oldest first, as it left the row; a
// delete keeps it and adds its own change; a row made again goes on from
// the deleted row's last version, with a new CreatedAt/By.
func testExtensionHistory(t *testing.T, x *suite) {
	s := x.newStore(t)
	ctx := t.Context()
	v1 := mustPutExt(t, s, ext("w", "one", true, store.ProvenanceFile, ""), store.ExtPut, store.NoVersion)
	mustPutExt(t, s, ext("w", "two", true, store.ProvenanceUser, "user:cli"), store.ExtPut, 1)
	mustPutExt(t, s, ext("w", "two", false, store.ProvenanceUser, "user:console"), store.ExtDisable, 2)
	mustPutExt(t, s, ext("w", "two", true, store.ProvenanceAgent+"a1", ""), store.ExtEnable, 3)
	mustPutExt(t, s, ext("w", "one", true, store.ProvenanceUser, "user:cli"), store.ExtRevert, 4)
	if err := s.DeleteExtension(ctx, "action", "w", "user:cli", 5); err != nil {
		t.Fatalf("DeleteExtension: %v", err)
	}
	if _, err := s.Extension(ctx, "action", "w"); !errors.Is(err, store.ErrNotFound) {
		t.Fatalf("Extension after delete = %v, want ErrNotFound", err)
	}
	again := mustPutExt(t, s, ext("w", "three", true, store.ProvenanceAgent+"a2", ""), store.ExtPut, store.NoVersion)
	if again.Version != 7 || again.CreatedBy != store.ProvenanceAgent+"a2" || !again.CreatedAt.Equal(again.UpdatedAt) || again.CreatedAt.Before(v1.CreatedAt) {
		t.Errorf("made again: %+v; want version 7, made by agent:a2 now", again)
	}
	spec := func(u string) json.RawMessage { return json.RawMessage(`{"url":"` + u + `"}`) }
	want := []store.ExtensionChange{
		{Version: 1, Op: store.ExtPut, Spec: spec("one"), Enabled: true, Provenance: store.ProvenanceFile, By: store.ProvenanceFile},
		{Version: 2, Op: store.ExtPut, Spec: spec("two"), Enabled: true, Provenance: store.ProvenanceUser, By: "user:cli"},
		{Version: 3, Op: store.ExtDisable, Spec: spec("two"), Enabled: false, Provenance: store.ProvenanceUser, By: "user:console"},
		{Version: 4, Op: store.ExtEnable, Spec: spec("two"), Enabled: true, Provenance: store.ProvenanceAgent + "a1", By: store.ProvenanceAgent + "a1"},
		{Version: 5, Op: store.ExtRevert, Spec: spec("one"), Enabled: true, Provenance: store.ProvenanceUser, By: "user:cli"},
		{Version: 6, Op: store.ExtDelete, Spec: spec("one"), Enabled: true, Provenance: store.ProvenanceUser, By: "user:cli"},
		{Version: 7, Op: store.ExtPut, Spec: spec("three"), Enabled: true, Provenance: store.ProvenanceAgent + "a2", By: store.ProvenanceAgent + "a2"},
	}
	got, err := s.ExtensionHistory(ctx, "action", "w")
	if err != nil {
		t.Fatal(err)
	}
	if d := cmp.Diff(want, got, cmpopts.IgnoreFields(store.ExtensionChange{}, "At")); d != "" {
		t.Errorf("history (-want +got):\n%s", d)
	}
	for i := range got {
		if got[i].At.IsZero() || i > 0 && got[i].At.Before(got[i-1].At) {
			t.Errorf("change %d at %v, after %v", got[i].Version, got[i].At, got[max(i-1, 0)].At)
		}
	}
	if !got[len(got)-1].At.Equal(again.UpdatedAt) {
		t.Errorf("the last change at %v, the row updated at %v", got[len(got)-1].At, again.UpdatedAt)
	}
}

// Extensions lists rows by type, then name, all types or one.
func testExtensionList(t *testing.T, x *suite) {
	s := x.newStore(t)
	ctx := t.Context()
	if got, err := s.Extensions(ctx, ""); err != nil || len(got) != 0 {
		t.Fatalf("Extensions of a new store = %v, %v", got, err)
	}
	for _, k := range [][2]string{{"widget", "usage"}, {"action", "weather"}, {"command", "standup"}, {"action", "Alpha"}, {"action", "alpha"}, {"action", "beta.2"}, {"agent", "z"}} {
		e := store.Extension{Type: k[0], Name: k[1], Spec: json.RawMessage(`{}`), Enabled: true, Provenance: store.ProvenanceBuiltin}
		mustPutExt(t, s, e, store.ExtPut, store.NoVersion)
	}
	if err := s.DeleteExtension(ctx, "agent", "z", "user", store.AnyVersion); err != nil {
		t.Fatal(err)
	}
	keys := func(typ string) []string {
		t.Helper()
		list, err := s.Extensions(ctx, typ)
		if err != nil {
			t.Fatalf("Extensions(%q): %v", typ, err)
		}
		var out []string
		for _, e := range list {
			out = append(out, e.Type+"/"+e.Name)
		}
		return out
	}
	for _, c := range []struct {
		typ  string
		want []string
	}{
		{"", []string{"action/Alpha", "action/alpha", "action/beta.2", "action/weather", "command/standup", "widget/usage"}},
		{"action", []string{"action/Alpha", "action/alpha", "action/beta.2", "action/weather"}},
		{"widget", []string{"widget/usage"}},
		{"agent", nil},
		{"theme", nil},
	} {
		if d := cmp.Diff(c.want, keys(c.typ)); d != "" {
			t.Errorf("Extensions(%q) (-want +got):\n%s", c.typ, d)
		}
	}
}

// What does not exist is ErrNotFound: a row never made or deleted, its
// deletion, the history of a row that never existed.
func testExtensionNotFound(t *testing.T, x *suite) {
	s := x.newStore(t)
	ctx := t.Context()
	mustPutExt(t, s, ext("gone", "x", true, store.ProvenanceUser, ""), store.ExtPut, store.NoVersion)
	if err := s.DeleteExtension(ctx, "action", "gone", "user", store.AnyVersion); err != nil {
		t.Fatal(err)
	}
	for _, name := range []string{"never", "gone"} {
		if _, err := s.Extension(ctx, "action", name); !errors.Is(err, store.ErrNotFound) {
			t.Errorf("Extension(%s) = %v, want ErrNotFound", name, err)
		}
		if err := s.DeleteExtension(ctx, "action", name, "user", store.AnyVersion); !errors.Is(err, store.ErrNotFound) {
			t.Errorf("DeleteExtension(%s) = %v, want ErrNotFound", name, err)
		}
	}
	if _, err := s.Extension(ctx, "command", "gone"); !errors.Is(err, store.ErrNotFound) {
		t.Errorf("Extension of another type = %v, want ErrNotFound", err)
	}
	if _, err := s.ExtensionHistory(ctx, "action", "never"); !errors.Is(err, store.ErrNotFound) {
		t.Errorf("ExtensionHistory of a row never made = %v, want ErrNotFound", err)
	}
	if h, err := s.ExtensionHistory(ctx, "action", "gone"); err != nil || len(h) != 2 || h[1].Op != store.ExtDelete {
		t.Errorf("ExtensionHistory of a deleted row = %+v, %v; want its put and its delete", h, err)
	}
}

// A row a store refuses is ErrInvalid, and nothing is written.
func testExtensionInvalid(t *testing.T, x *suite) {
	s := x.newStore(t)
	ctx := t.Context()
	good := ext("ok", "x", true, store.ProvenanceUser, "")
	for _, c := range []struct {
		what      string
		change    func(*store.Extension)
		op        string
		ifVersion int64
	}{
		{"spec not JSON", func(e *store.Extension) { e.Spec = json.RawMessage(`{"url":`) }, store.ExtPut, store.NoVersion},
		{"no spec", func(e *store.Extension) { e.Spec = nil }, store.ExtPut, store.NoVersion},
		{"spec not UTF-8", func(e *store.Extension) { e.Spec = json.RawMessage("\"\xff\"") }, store.ExtPut, store.NoVersion},
		{"no type", func(e *store.Extension) { e.Type = "" }, store.ExtPut, store.NoVersion},
		{"no name", func(e *store.Extension) { e.Name = "" }, store.ExtPut, store.NoVersion},
		{"a slash in the name", func(e *store.Extension) { e.Name = "../x" }, store.ExtPut, store.NoVersion},
		{"a control character in the type", func(e *store.Extension) { e.Type = "a\nb" }, store.ExtPut, store.NoVersion},
		{"an unknown provenance", func(e *store.Extension) { e.Provenance = "someone" }, store.ExtPut, store.NoVersion},
		{"an agent without id", func(e *store.Extension) { e.Provenance = store.ProvenanceAgent }, store.ExtPut, store.NoVersion},
		{"delete as a put's op", func(*store.Extension) {}, store.ExtDelete, store.NoVersion},
		{"an unknown op", func(*store.Extension) {}, "rename", store.NoVersion},
		{"a version below AnyVersion", func(*store.Extension) {}, store.ExtPut, -2},
	} {
		e := good
		c.change(&e)
		if _, err := s.PutExtension(ctx, e, c.op, c.ifVersion); !errors.Is(err, store.ErrInvalid) {
			t.Errorf("%s: PutExtension = %v, want ErrInvalid", c.what, err)
		}
	}
	if err := s.DeleteExtension(ctx, "action", "a/b", "user", store.AnyVersion); !errors.Is(err, store.ErrInvalid) {
		t.Errorf("DeleteExtension of a name with a slash = %v, want ErrInvalid", err)
	}
	if err := s.DeleteExtension(ctx, "action", "ok", "", store.AnyVersion); !errors.Is(err, store.ErrInvalid) {
		t.Errorf("DeleteExtension by nobody = %v, want ErrInvalid", err)
	}
	if list, err := s.Extensions(ctx, ""); err != nil || len(list) != 0 {
		t.Errorf("after refused writes: %+v, %v; want no rows", list, err)
	}
}

// Writers racing with the same expected version: exactly one wins, the
// others are ErrConflict; racing AnyVersion writers all win, one version
// each.
func testExtensionConcurrent(t *testing.T, x *suite) {
	s := x.newStore(t)
	ctx := t.Context()
	const n = 8
	race := func(what string, ifVersion int64, put func(i int) error) (won int) {
		t.Helper()
		var wg sync.WaitGroup
		var mu sync.Mutex
		for i := range n {
			wg.Go(func() {
				err := put(i)
				mu.Lock()
				defer mu.Unlock()
				switch {
				case err == nil:
					won++
				case !errors.Is(err, store.ErrConflict):
					t.Errorf("%s: writer %d: %v", what, i, err)
				}
			})
		}
		wg.Wait()
		return won
	}
	created := race("create", store.NoVersion, func(i int) error {
		_, err := s.PutExtension(ctx, ext("race", fmt.Sprint(i), true, store.ProvenanceUser, ""), store.ExtPut, store.NoVersion)
		return err
	})
	updated := race("update", 1, func(i int) error {
		_, err := s.PutExtension(ctx, ext("race", fmt.Sprint(i), true, store.ProvenanceUser, ""), store.ExtPut, 1)
		return err
	})
	if created != 1 || updated != 1 {
		t.Errorf("racing writes: %d created, %d updated; want exactly one each", created, updated)
	}
	if all := race("any", store.AnyVersion, func(i int) error {
		_, err := s.PutExtension(ctx, ext("race", fmt.Sprint(i), true, store.ProvenanceUser, ""), store.ExtPut, store.AnyVersion)
		return err
	}); all != n {
		t.Errorf("racing AnyVersion writes: %d won, want %d", all, n)
	}
	h, err := s.ExtensionHistory(ctx, "action", "race")
	if err != nil {
		t.Fatal(err)
	}
	if len(h) != n+2 {
		t.Errorf("history holds %d changes, want %d", len(h), n+2)
	}
	for i, c := range h {
		if c.Version != int64(i+1) {
			t.Errorf("change %d has version %d", i, c.Version)
		}
	}
	if e, err := s.Extension(ctx, "action", "race"); err != nil || e.Version != n+2 {
		t.Errorf("the row after the races: version %d, %v; want %d", e.Version, err, n+2)
	}
}
