package gateway_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"sync"
	"testing"
	"testing/fstest"
	"time"

	"github.com/google/go-cmp/cmp"

	"agentd/internal/extension"
	"agentd/internal/gateway"
	"agentd/internal/schema"
	"agentd/internal/store"
)

// extMemStore is an in-memory store.ExtensionStore: the routes' tests
// hold the API, the stores' own tests hold the stores.
type extMemStore struct {
	mu   sync.Mutex
	rows map[string]store.Extension
	hist map[string][]store.ExtensionChange
}

func (s *extMemStore) Extensions(_ context.Context, typ string) ([]store.Extension, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	var out []store.Extension
	for _, e := range s.rows {
		if typ == "" || e.Type == typ {
			out = append(out, e)
		}
	}
	slices.SortFunc(out, func(a, b store.Extension) int { return strings.Compare(a.Type+"/"+a.Name, b.Type+"/"+b.Name) })
	return out, nil
}

func (s *extMemStore) Extension(_ context.Context, typ, name string) (store.Extension, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	e, ok := s.rows[typ+"/"+name]
	if !ok {
		return e, store.ErrNotFound
	}
	return e, nil
}

func (s *extMemStore) PutExtension(_ context.Context, e store.Extension, op string, ifv int64) (store.Extension, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	k := e.Type + "/" + e.Name
	old, exists := s.rows[k]
	if (ifv == store.NoVersion && exists) || (ifv > 0 && (!exists || old.Version != ifv)) {
		return e, store.ErrConflict
	}
	now := time.Now()
	e.Version = int64(len(s.hist[k]) + 1)
	e.CreatedAt, e.UpdatedAt = now, now
	if exists {
		e.CreatedAt, e.CreatedBy = old.CreatedAt, old.CreatedBy
	}
	s.rows[k] = e
	s.hist[k] = append(s.hist[k], store.ExtensionChange{Version: e.Version, Op: op, Spec: e.Spec, Enabled: e.Enabled,
		Provenance: e.Provenance, By: e.UpdatedBy, At: now})
	return e, nil
}

func (s *extMemStore) DeleteExtension(_ context.Context, typ, name, by string, ifv int64) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	k := typ + "/" + name
	old, ok := s.rows[k]
	if !ok {
		return store.ErrNotFound
	}
	if ifv > 0 && old.Version != ifv {
		return store.ErrConflict
	}
	delete(s.rows, k)
	s.hist[k] = append(s.hist[k], store.ExtensionChange{Version: old.Version + 1, Op: store.ExtDelete, Spec: old.Spec,
		Provenance: old.Provenance, By: by, At: time.Now()})
	return nil
}

func (s *extMemStore) ExtensionHistory(_ context.Context, typ, name string) ([]store.ExtensionChange, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	h, ok := s.hist[typ+"/"+name]
	if !ok {
		return nil, store.ErrNotFound
	}
	return slices.Clone(h), nil
}

// noteHandler activates nothing, and checks a note's spec itself (every
// problem, with its pointer), whatever its schema says.
type noteHandler struct{}

func (noteHandler) Activate(context.Context, *store.Extension) error { return nil }
func (noteHandler) Deactivate(context.Context, string) error         { return nil }

func (noteHandler) Check(_ context.Context, d *extension.Doc) []schema.Error {
	var spec map[string]any
	json.Unmarshal(d.Spec, &spec)
	var errs []schema.Error
	if _, ok := spec["text"].(string); !ok {
		errs = append(errs, schema.Error{Pointer: "/spec/text", Message: "must be a string"})
	}
	if u, ok := spec["url"]; ok {
		if _, ok := u.(string); !ok {
			errs = append(errs, schema.Error{Pointer: "/spec/url", Message: "must be a string"})
		}
	}
	return errs
}

// newExtManager is a started manager with the type note, over an
// in-memory store, seeded with the built-in note/welcome.
func newExtManager(t *testing.T) *extension.Manager {
	t.Helper()
	st := &extMemStore{rows: map[string]store.Extension{}, hist: map[string][]store.ExtensionChange{}}
	m := extension.New(st, &extension.Options{Dir: t.TempDir(), Builtins: fstest.MapFS{
		"note/welcome.yaml": {Data: []byte("type: note\nname: welcome\nspec:\n  text: hello\n")},
	}})
	if err := m.Register(extension.Type{Name: "note", Summary: "a note", Schema: json.RawMessage(`{"type":"object"}`), Handler: noteHandler{}}); err != nil {
		t.Fatal(err)
	}
	if err := m.Start(t.Context()); err != nil {
		t.Fatal(err)
	}
	return m
}

// newExtEnv serves the API with the extension manager m.
func newExtEnv(t *testing.T, m *extension.Manager) *env {
	return newToolEnv(t, gateway.Options{Extensions: m})
}

// extDo sends a request with headers (name, value, …) and returns the
// status, the headers and the body.
func extDo(t *testing.T, base, method, path, body string, hdr ...string) (int, http.Header, []byte) {
	t.Helper()
	var rd io.Reader
	if body != "" {
		rd = strings.NewReader(body)
	}
	req, err := http.NewRequestWithContext(t.Context(), method, base+path, rd)
	if err != nil {
		t.Fatal(err)
	}
	for i := 0; i+1 < len(hdr); i += 2 {
		req.Header.Set(hdr[i], hdr[i+1])
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatalf("%s %s: %v", method, path, err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, resp.Header, b
}

// decodeAs decodes a JSON body, every field known.
func decodeAs[T any](t *testing.T, what string, b []byte) T {
	t.Helper()
	var v T
	dec := json.NewDecoder(strings.NewReader(string(b)))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&v); err != nil {
		t.Fatalf("%s: %v in %s", what, err, b)
	}
	return v
}

// Every extension route answers as docs/api.md says: a row is written
// (JSON or YAML), read, listed, disabled, enabled, reverted, its history
// read, removed; the types and schemas listed; a reseed reports.
func TestExtensionRoutes(t *testing.T) {
	e := newExtEnv(t, newExtManager(t))
	base := e.http.URL

	status, hdr, b := extDo(t, base, "PUT", "/v1/extensions/note/todo", `{"spec":{"text":"buy milk"}}`)
	if status != 200 {
		t.Fatalf("PUT: %d %s", status, b)
	}
	put := decodeAs[extension.Status](t, "PUT", b)
	if put.Type != "note" || put.Name != "todo" || put.Version != 1 || !put.Enabled || put.Active != 1 ||
		put.Provenance != store.ProvenanceUser || put.CreatedBy != "user:socket" || put.UpdatedBy != "user:socket" ||
		string(put.Spec) != `{"text":"buy milk"}` || hdr.Get("ETag") != `"1"` {
		t.Errorf("PUT: %+v, ETag %s", put, hdr.Get("ETag"))
	}

	// YAML, with the type and name in the body agreeing with the URL.
	status, hdr, b = extDo(t, base, "PUT", "/v1/extensions/note/todo", "type: note\nname: todo\nspec:\n  text: buy bread # and milk\n",
		"Content-Type", "application/yaml")
	if got := decodeAs[extension.Status](t, "PUT YAML", b); status != 200 || got.Version != 2 || string(got.Spec) != `{"text":"buy bread"}` || hdr.Get("ETag") != `"2"` {
		t.Errorf("PUT YAML: %d %+v", status, got)
	}

	status, _, b = extDo(t, base, "GET", "/v1/extensions/note/todo", "")
	if got := decodeAs[extension.Status](t, "GET", b); status != 200 || got.Version != 2 || got.Seed != "" || got.Drift {
		t.Errorf("GET: %d %+v", status, got)
	}

	for _, path := range []string{"/v1/extensions", "/v1/extensions?type=note"} {
		status, _, b = extDo(t, base, "GET", path, "")
		var names []string
		for _, x := range decodeAs[gateway.ExtensionList](t, path, b).Extensions {
			names = append(names, x.Type+"/"+x.Name+":"+x.Provenance)
		}
		if want := []string{"note/todo:user", "note/welcome:builtin"}; status != 200 || !slices.Equal(names, want) {
			t.Errorf("GET %s: %d %v, want %v", path, status, names, want)
		}
	}

	status, _, b = extDo(t, base, "GET", "/v1/extensions/schemas", "")
	if got := decodeAs[gateway.ExtensionTypes](t, "types", b); status != 200 || !cmp.Equal(got.Types, []gateway.ExtensionType{{Name: "note", Summary: "a note"}}) {
		t.Errorf("GET schemas: %d %+v", status, got)
	}
	status, hdr, b = extDo(t, base, "GET", "/v1/extensions/schemas/note", "")
	if status != 200 || string(b) != `{"type":"object"}` || hdr.Get("Content-Type") != "application/schema+json" {
		t.Errorf("GET schemas/note: %d %s %s", status, hdr.Get("Content-Type"), b)
	}

	status, _, b = extDo(t, base, "POST", "/v1/extensions/note/todo/disable", "")
	if got := decodeAs[extension.Status](t, "disable", b); status != 200 || got.Enabled || got.Active != 0 || got.Version != 3 {
		t.Errorf("disable: %d %+v", status, got)
	}
	status, _, b = extDo(t, base, "POST", "/v1/extensions/note/todo/enable", "")
	if got := decodeAs[extension.Status](t, "enable", b); status != 200 || !got.Enabled || got.Active != 4 {
		t.Errorf("enable: %d %+v", status, got)
	}
	status, _, b = extDo(t, base, "POST", "/v1/extensions/note/todo/revert", `{"version":1}`)
	if got := decodeAs[extension.Status](t, "revert", b); status != 200 || got.Version != 5 || string(got.Spec) != `{"text":"buy milk"}` {
		t.Errorf("revert to 1: %d %+v", status, got)
	}
	// No body: the version before the current (4: buy bread).
	status, _, b = extDo(t, base, "POST", "/v1/extensions/note/todo/revert", "")
	if got := decodeAs[extension.Status](t, "revert", b); status != 200 || got.Version != 6 || string(got.Spec) != `{"text":"buy bread"}` {
		t.Errorf("revert: %d %+v", status, got)
	}

	status, _, b = extDo(t, base, "GET", "/v1/extensions/note/todo/history", "")
	var ops []string
	for _, c := range decodeAs[gateway.ExtensionHistory](t, "history", b).History {
		if c.By != "user:socket" || c.Provenance != "user" || c.At.IsZero() {
			t.Errorf("history: change %+v", c)
		}
		ops = append(ops, c.Op)
	}
	if want := []string{"put", "put", "disable", "enable", "revert", "revert"}; status != 200 || !slices.Equal(ops, want) {
		t.Errorf("history: %d %v, want %v", status, ops, want)
	}

	if status, _, b = extDo(t, base, "DELETE", "/v1/extensions/note/todo", ""); status != 204 || len(b) != 0 {
		t.Errorf("DELETE: %d %s", status, b)
	}
	checkError(t, e, "GET", "/v1/extensions/note/todo", "", 404, "not_found")
	checkError(t, e, "DELETE", "/v1/extensions/note/todo", "", 404, "not_found")
	status, _, b = extDo(t, base, "GET", "/v1/extensions/note/todo/history", "")
	if h := decodeAs[gateway.ExtensionHistory](t, "history", b).History; status != 200 || len(h) != 7 || h[6].Op != "delete" {
		t.Errorf("history after delete: %d %+v", status, h)
	}

	// The built-in row, changed by a person, is kept by a reseed unless
	// forced.
	extDo(t, base, "PUT", "/v1/extensions/note/welcome", `{"spec":{"text":"hi"}}`)
	status, _, b = extDo(t, base, "GET", "/v1/extensions/note/welcome", "")
	if got := decodeAs[extension.Status](t, "GET welcome", b); got.Seed != "builtin" || !got.Drift {
		t.Errorf("welcome after a change: %+v, want seed builtin with drift", got)
	}
	for _, c := range []struct {
		body string
		want extension.Report
	}{
		{"", extension.Report{Created: []string{}, Updated: []string{}, Unchanged: []string{}, Kept: []string{"note/welcome"}, Removed: []string{}, Errors: []string{}}},
		{`{"force":true}`, extension.Report{Created: []string{}, Updated: []string{"note/welcome"}, Unchanged: []string{}, Kept: []string{}, Removed: []string{}, Errors: []string{}}},
	} {
		status, _, b = extDo(t, base, "POST", "/v1/extensions/reseed", c.body)
		if got := decodeAs[extension.Report](t, "reseed", b); status != 200 || !cmp.Equal(got, c.want) {
			t.Errorf("reseed %s: %d %s", c.body, status, cmp.Diff(c.want, got))
		}
	}
}

// invalidBody checks a 400 whose body lists the problems want, in the
// error table's envelope.
func invalidBody(t *testing.T, what string, status int, b []byte, want []string) {
	t.Helper()
	got := decodeAs[gateway.InvalidError](t, what, b)
	if status != 400 || got.Code != "bad_request" || got.Error.Error == "" || !cmp.Equal(got.Errors, want) {
		t.Errorf("%s: %d %s\nwant 400 bad_request listing %q", what, status, b, want)
	}
}

// A document that is wrong in several ways is answered 400 with every
// problem, each with its JSON pointer, and writes nothing; so are a body
// whose type or name is not the URL's, a name that is a path, and a body
// that is not a document.
func TestExtensionPutInvalid(t *testing.T) {
	m := newExtManager(t)
	e := newExtEnv(t, m)
	base := e.http.URL
	for _, c := range []struct {
		name, path, body, ct string
		want                 []string
	}{
		{"the spec's problems", "/v1/extensions/note/x", `{"spec":{"text":3,"url":false}}`, "",
			[]string{"/spec/text: must be a string", "/spec/url: must be a string"}},
		{"the spec's problems, YAML", "/v1/extensions/note/x", "spec:\n  text: [1]\n  url: 7\n", "application/yaml",
			[]string{"/spec/text: must be a string", "/spec/url: must be a string"}},
		{"the body's shape", "/v1/extensions/note/x", `{"type":"other","name":"y","enabled":"yes","extra":1,"more":2}`, "",
			[]string{"line 1: enabled: must be true or false", "line 1: extra: unknown field (a document has type, name, spec or enabled)",
				"line 1: more: unknown field (a document has type, name, spec or enabled)", "line 1: spec: is required"}},
		{"the body's shape, YAML", "/v1/extensions/note/x", "type: note\nspec:\n  text: t\nspec2: 1\nenabled: maybe\n", "application/yaml",
			[]string{"line 4: spec2: unknown field (a document has type, name, spec or enabled)", `line 5: enabled: must be true or false, not "maybe"`}},
		{"not the URL's", "/v1/extensions/note/x", `{"type":"other","name":"y","spec":{"text":"t"}}`, "",
			[]string{`/type: "other", where the URL says "note"`, `/name: "y", where the URL says "x"`}},
		{"a path for a name", "/v1/extensions/note/..%2F..%2Fetc", `{"spec":{"text":"t"}}`, "",
			[]string{`/name: "../../etc" is not a valid name: use up to 64 letters, digits, '-', '_' and inner dots`}},
		{"a name with a slash", "/v1/extensions/note/a%2Fb", `{"spec":{"text":"t"}}`, "",
			[]string{`/name: "a/b" is not a valid name: use up to 64 letters, digits, '-', '_' and inner dots`}},
		{"a dot name", "/v1/extensions/note/.hidden", `{"spec":{"text":"t"}}`, "",
			[]string{`/name: ".hidden" is not a valid name: use up to 64 letters, digits, '-', '_' and inner dots`}},
		{"an array", "/v1/extensions/note/x", `[1,2]`, "",
			[]string{`line 1: must be one document (an object with type, name and spec), not a list`}},
	} {
		for _, dry := range []string{"", "?dry_run=true"} {
			var hdr []string
			if c.ct != "" {
				hdr = []string{"Content-Type", c.ct}
			}
			status, _, b := extDo(t, base, "PUT", c.path+dry, c.body, hdr...)
			invalidBody(t, c.name+dry, status, b, c.want)
		}
	}
	list, err := m.List(t.Context(), "")
	if err != nil || len(list) != 1 {
		t.Errorf("rows after invalid PUTs: %+v %v, want the built-in alone", list, err)
	}

	// Not a document at all: 400 saying why, 415 for another media type.
	for _, c := range []struct{ body, ct string }{{`{"spec":`, ""}, {"spec: [\n", "application/yaml"}, {"", ""}, {"a: 1\n---\nb: 2\n", "text/yaml"}} {
		var hdr []string
		if c.ct != "" {
			hdr = []string{"Content-Type", c.ct}
		}
		if status, _, b := extDo(t, base, "PUT", "/v1/extensions/note/x", c.body, hdr...); status != 400 {
			t.Errorf("PUT %q: %d %s, want 400", c.body, status, b)
		}
	}
	status, _, b := extDo(t, base, "GET", "/v1/extensions/note/..%2Fx", "")
	invalidBody(t, "GET of a path", status, b, []string{`/name: "../x" is not a valid name: use up to 64 letters, digits, '-', '_' and inner dots`})
	if status, _, b := extDo(t, base, "PUT", "/v1/extensions/note/x", `{"spec":{}}`, "Content-Type", "text/html"); status != 415 {
		t.Errorf("PUT text/html: %d %s, want 415", status, b)
	}
}

// A valid document with ?dry_run=true is checked and not written.
func TestExtensionDryRun(t *testing.T) {
	m := newExtManager(t)
	e := newExtEnv(t, m)
	status, _, b := extDo(t, e.http.URL, "PUT", "/v1/extensions/note/x?dry_run=true", `{"spec":{"text":"t"}}`)
	if got := decodeAs[gateway.ExtensionCheck](t, "dry run", b); status != 200 || got != (gateway.ExtensionCheck{Type: "note", Name: "x", Valid: true}) {
		t.Errorf("dry run: %d %+v", status, got)
	}
	if _, err := m.Get(t.Context(), "note", "x"); !errors.Is(err, store.ErrNotFound) {
		t.Errorf("after a dry run: %v, want no row", err)
	}
	checkError(t, e, "PUT", "/v1/extensions/note/x?dry_run=maybe", `{"spec":{"text":"t"}}`, 400, "bad_request")
}

// If-Match: a write to a row at another version is 409 and writes
// nothing; at its version, it is written.
func TestExtensionIfMatch(t *testing.T) {
	m := newExtManager(t)
	e := newExtEnv(t, m)
	base := e.http.URL
	extDo(t, base, "PUT", "/v1/extensions/note/x", `{"spec":{"text":"one"}}`)
	extDo(t, base, "PUT", "/v1/extensions/note/x", `{"spec":{"text":"two"}}`)
	for _, im := range []string{`"1"`, "1", `"7"`} {
		status, _, b := extDo(t, base, "PUT", "/v1/extensions/note/x", `{"spec":{"text":"three"}}`, "If-Match", im)
		if er := decodeAs[gateway.Error](t, "If-Match", b); status != 409 || er.Code != "conflict" || !strings.Contains(er.Error, "If-Match") {
			t.Errorf("If-Match %s at version 2: %d %+v, want 409 conflict", im, status, er)
		}
	}
	if st, _ := m.Get(t.Context(), "note", "x"); st.Version != 2 {
		t.Errorf("after conflicts: version %d, want 2", st.Version)
	}
	status, hdr, b := extDo(t, base, "PUT", "/v1/extensions/note/x", `{"spec":{"text":"three"}}`, "If-Match", `"2"`)
	if got := decodeAs[extension.Status](t, "If-Match 2", b); status != 200 || got.Version != 3 || hdr.Get("ETag") != `"3"` {
		t.Errorf("If-Match 2: %d %+v", status, got)
	}
	for _, im := range []string{"x", "0", "-1", `W/"3"`} {
		status, _, b := extDo(t, base, "PUT", "/v1/extensions/note/x", `{"spec":{"text":"four"}}`, "If-Match", im)
		if status != 400 {
			t.Errorf("If-Match %s: %d %s, want 400", im, status, b)
		}
	}
}

// An unknown type is 404 naming the types, on every route of a row; an
// unknown type in ?type= is 400; without the substrate every route is 501.
func TestExtensionUnknownType(t *testing.T) {
	e := newExtEnv(t, newExtManager(t))
	for _, r := range []struct{ method, path, body string }{
		{"GET", "/v1/extensions/nope/x", ""},
		{"PUT", "/v1/extensions/nope/x", `{"spec":{}}`},
		{"PUT", "/v1/extensions/nope/x?dry_run=true", `{"spec":{}}`},
		{"DELETE", "/v1/extensions/nope/x", ""},
		{"POST", "/v1/extensions/nope/x/enable", ""},
		{"POST", "/v1/extensions/nope/x/disable", ""},
		{"POST", "/v1/extensions/nope/x/revert", `{"version":1}`},
		{"GET", "/v1/extensions/nope/x/history", ""},
		{"GET", "/v1/extensions/schemas/nope", ""},
	} {
		if er := checkError(t, e, r.method, r.path, r.body, 404, "not_found"); !strings.Contains(er.Error, "the types are note") {
			t.Errorf("%s %s: %q, want the types named", r.method, r.path, er.Error)
		}
	}
	checkError(t, e, "GET", "/v1/extensions?type=nope", "", 400, "bad_request")
	extDo(t, e.http.URL, "PUT", "/v1/extensions/note/one", `{"spec":{"text":"t"}}`)
	if er := checkError(t, e, "POST", "/v1/extensions/note/one/revert", `{"version":9}`, 404, "not_found"); !strings.Contains(er.Error, "no version 9") {
		t.Errorf("revert to a version that never was: %q, want it named", er.Error)
	}
	if er := checkError(t, e, "POST", "/v1/extensions/note/none/revert", "", 404, "not_found"); !strings.Contains(er.Error, "no extension note/none") {
		t.Errorf("revert of a row that never was: %q, want it named", er.Error)
	}
	for _, r := range []string{"GET /v1/extensions/note/none", "GET /v1/extensions/note/none/history", "POST /v1/extensions/note/none/enable"} {
		method, path, _ := strings.Cut(r, " ")
		if er := checkError(t, e, method, path, "", 404, "not_found"); !strings.Contains(er.Error, "note/none") {
			t.Errorf("%s: %q, want the row named", r, er.Error)
		}
	}

	none := newToolEnv(t, gateway.Options{})
	for _, r := range []string{"GET /v1/extensions", "GET /v1/extensions/schemas", "GET /v1/extensions/note/x", "POST /v1/extensions/reseed"} {
		method, path, _ := strings.Cut(r, " ")
		checkError(t, none, method, path, "", 501, "not_available")
	}
}

// Over TCP, reading takes the token and writing remote_admin too; a write
// is recorded as by the credential it came with.
func TestExtensionsOverTCP(t *testing.T) {
	m := newExtManager(t)
	if err := m.Register(extension.Type{Name: "control", Schema: json.RawMessage(`{"type":"object"}`), Handler: noteHandler{}}); err != nil {
		t.Fatal(err)
	}
	srv := gateway.New(&gateway.Options{Extensions: m})
	tk, tok := authTokens(t)
	off := httptest.NewServer(srv.Protect(&gateway.AuthOptions{Tokens: tk, Listen: "127.0.0.1:7420"}))
	t.Cleanup(off.Close)
	on := httptest.NewServer(srv.Protect(&gateway.AuthOptions{Tokens: tk, Listen: "127.0.0.1:7420", RemoteAdmin: true}))
	t.Cleanup(on.Close)
	bearer := "Bearer " + tok
	body := `{"spec":{"text":"t"}}`

	if status, _, _ := extDo(t, off.URL, "GET", "/v1/extensions", ""); status != 401 {
		t.Errorf("GET without the token: %d, want 401", status)
	}
	if status, _, b := extDo(t, off.URL, "GET", "/v1/extensions", "", "Authorization", bearer); status != 200 {
		t.Errorf("GET with the token: %d %s", status, b)
	}
	for _, r := range []string{"PUT /v1/extensions/note/x", "PUT /v1/extensions/note/x?dry_run=true", "DELETE /v1/extensions/note/welcome",
		"POST /v1/extensions/note/welcome/disable", "POST /v1/extensions/note/welcome/enable", "POST /v1/extensions/note/welcome/revert",
		"POST /v1/extensions/reseed"} {
		method, path, _ := strings.Cut(r, " ")
		if status, _, b := extDo(t, off.URL, method, path, body, "Authorization", bearer); status != 403 || !strings.Contains(string(b), "remote_admin") {
			t.Errorf("%s without remote_admin: %d %s, want 403", r, status, b)
		}
	}
	if _, err := m.Get(t.Context(), "note", "x"); !errors.Is(err, store.ErrNotFound) {
		t.Errorf("after refused writes: %v, want no row", err)
	}
	// A control is flipped with the token alone; its route writes no other
	// type, whatever the body says.
	if status, _, b := extDo(t, off.URL, "PUT", "/v1/extensions/control/hold", body, "Authorization", bearer); status != 200 {
		t.Errorf("PUT a control without remote_admin: %d %s, want 200", status, b)
	}
	if status, _, b := extDo(t, off.URL, "PUT", "/v1/extensions/control/x", `{"type":"note","name":"x","spec":{}}`, "Authorization", bearer); status != 400 {
		t.Errorf("a note through the control route: %d %s, want 400", status, b)
	}
	if _, err := m.Get(t.Context(), "note", "x"); !errors.Is(err, store.ErrNotFound) {
		t.Errorf("the control route wrote a note: %v", err)
	}

	status, _, b := extDo(t, on.URL, "PUT", "/v1/extensions/note/x", body, "Authorization", bearer)
	if got := decodeAs[extension.Status](t, "PUT", b); status != 200 || got.UpdatedBy != "user:token" {
		t.Errorf("PUT with remote_admin: %d %+v, want it by user:token", status, got)
	}
	cookie := gateway.CookieName + "=" + cookieFor(tok)
	status, _, b = extDo(t, on.URL, "POST", "/v1/extensions/note/x/disable", "", "Cookie", cookie, "Sec-Fetch-Site", "same-origin")
	if got := decodeAs[extension.Status](t, "disable", b); status != 200 || got.UpdatedBy != "user:console" {
		t.Errorf("disable from the console: %d %+v, want it by user:console", status, got)
	}
}

// The client says every problem of an invalid document, and writes,
// reads and lists rows.
func TestExtensionClient(t *testing.T) {
	m := newExtManager(t)
	c, stop := gateway.Pipe(gateway.New(&gateway.Options{Extensions: m}))
	defer stop()
	ctx := t.Context()
	bad := extension.Doc{Type: "note", Name: "x", Spec: json.RawMessage(`{"text":1,"url":2}`)}
	err := c.CheckExtension(ctx, bad)
	var ae *gateway.APIError
	if !errors.As(err, &ae) || ae.Status != 400 || !slices.Equal(ae.Errors, []string{"/spec/text: must be a string", "/spec/url: must be a string"}) {
		t.Fatalf("CheckExtension: %#v", err)
	}
	good := extension.Doc{Type: "note", Name: "x", Spec: json.RawMessage(`{"text":"t"}`)}
	if err := c.CheckExtension(ctx, good); err != nil {
		t.Fatalf("CheckExtension: %v", err)
	}
	st, err := c.PutExtension(ctx, good, nil)
	if err != nil || st.Version != 1 {
		t.Fatalf("PutExtension: %+v %v", st, err)
	}
	good.Spec = json.RawMessage(`{"text":"u"}`)
	if _, err := c.PutExtension(ctx, good, &gateway.PutOptions{IfVersion: 5}); !errors.As(err, &ae) || ae.Status != 409 {
		t.Errorf("PutExtension at the wrong version: %v, want 409", err)
	}
	if st, err = c.PutExtension(ctx, good, &gateway.PutOptions{IfVersion: 1}); err != nil || st.Version != 2 {
		t.Errorf("PutExtension If-Match 1: %+v %v", st, err)
	}
	if st, err = c.SetExtensionEnabled(ctx, "note", "x", false); err != nil || st.Enabled {
		t.Errorf("disable: %+v %v", st, err)
	}
	if st, err = c.RevertExtension(ctx, "note", "x", 1); err != nil || string(st.Spec) != `{"text":"t"}` {
		t.Errorf("revert: %+v %v", st, err)
	}
	if h, err := c.ExtensionHistory(ctx, "note", "x"); err != nil || len(h) != 4 {
		t.Errorf("history: %+v %v", h, err)
	}
	if l, err := c.Extensions(ctx, "note"); err != nil || len(l) != 2 {
		t.Errorf("list: %+v %v", l, err)
	}
	if ts, err := c.ExtensionTypes(ctx); err != nil || len(ts) != 1 || ts[0].Name != "note" {
		t.Errorf("types: %+v %v", ts, err)
	}
	if sc, err := c.ExtensionSchema(ctx, "note"); err != nil || string(sc) != `{"type":"object"}` {
		t.Errorf("schema: %s %v", sc, err)
	}
	if rep, err := c.Reseed(ctx, false); err != nil || !slices.Equal(rep.Unchanged, []string{"note/welcome"}) {
		t.Errorf("reseed: %+v %v", rep, err)
	}
	if err := c.DeleteExtension(ctx, "note", "x"); err != nil {
		t.Errorf("delete: %v", err)
	}
	if _, err := c.Extension(ctx, "note", "x"); !errors.As(err, &ae) || ae.Status != 404 {
		t.Errorf("get after delete: %v, want 404", err)
	}
}

// A client validates a document before it writes it: an invalid one is
// an *APIError listing every problem with its JSON pointer.
func ExampleClient_CheckExtension() {
	ctx := context.Background()
	st := &extMemStore{rows: map[string]store.Extension{}, hist: map[string][]store.ExtensionChange{}}
	m := extension.New(st, &extension.Options{Builtins: fstest.MapFS{}})
	m.Register(extension.Type{Name: "note", Schema: json.RawMessage(`{"type":"object","properties":{"text":{"type":"string"},"url":{"type":"string"}}}`)})
	m.Start(ctx)
	c, stop := gateway.Pipe(gateway.New(&gateway.Options{Extensions: m}))
	defer stop()

	doc := extension.Doc{Type: "note", Name: "todo", Spec: json.RawMessage(`{"text":7,"url":false}`)}
	var ae *gateway.APIError
	if err := c.CheckExtension(ctx, doc); errors.As(err, &ae) {
		fmt.Println(ae.Status, ae.Errors)
	}
	doc.Spec = json.RawMessage(`{"text":"buy milk"}`)
	if err := c.CheckExtension(ctx, doc); err == nil {
		row, _ := c.PutExtension(ctx, doc, nil)
		fmt.Println(row.Type+"/"+row.Name, row.Version, row.UpdatedBy)
	}
	// Output:
	// 400 [/spec/text: must be a string /spec/url: must be a string]
	// note/todo 1 user:socket
}
