package webext_test

import (
	"encoding/base64"
	"encoding/json"
	"errors"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"agentd/internal/store"
	"agentd/internal/tool"
	"agentd/internal/webext"
)

// pngBytes is a 1×1 PNG.
var pngBytes, _ = base64.StdEncoding.DecodeString("iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNkYPhfDwAChwGA60e6kgAAAABJRU5ErkJggg==")

// call runs the artifact tool as agent in session, through a registry
// (which checks the arguments against the tool's schema).
func call(t *testing.T, reg *tool.Registry, agent, args string) (string, bool) {
	t.Helper()
	out := reg.Run(t.Context(), &tool.Call{ID: "c", Name: webext.ArtifactToolName, Args: json.RawMessage(args),
		Agent: agent, Session: agent + "/chat:1"}, nil)
	return out.Result.Output, out.Result.IsError
}

func TestArtifactTool(t *testing.T) {
	w := newWorld(t, nil)
	ctx := t.Context()
	reg := tool.NewRegistry(nil)
	if err := reg.Register(webext.ArtifactTool(w.m, w.m)); err != nil {
		t.Fatal(err)
	}
	out, isErr := call(t, reg, "alice", `{"action": "create", "name": "notes.md", "title": "Notes", "kind": "markdown", "content": "# one"}`)
	if isErr || !strings.Contains(out, `"version":1`) {
		t.Fatalf("create: %s", out)
	}
	out, isErr = call(t, reg, "alice", `{"action": "update", "name": "notes.md", "content": "# two"}`)
	if isErr || !strings.Contains(out, `"version":2`) {
		t.Fatalf("update: %s", out)
	}
	out, isErr = call(t, reg, "alice", `{"action": "get", "name": "notes.md"}`)
	if isErr || !strings.Contains(out, `"content":"# two"`) || !strings.Contains(out, `"title":"Notes"`) {
		t.Fatalf("get: %s", out)
	}
	st, err := w.m.Get(ctx, "artifact", "notes.md")
	if err != nil {
		t.Fatal(err)
	}
	var a webext.Artifact
	json.Unmarshal(st.Spec, &a)
	want := webext.Artifact{Title: "Notes", Kind: "markdown", Content: "# two", Session: "alice/chat:1", Agent: "alice"}
	if diff := cmp.Diff(want, a); diff != "" || st.Provenance != "agent:alice" || st.CreatedBy != "agent:alice" {
		t.Errorf("row: %+v (-want +got):\n%s", st.Extension, diff)
	}

	// Refusals the model reads as tool errors, nothing written.
	for _, tc := range []struct{ agent, args, want string }{
		{"bob", `{"action": "update", "name": "notes.md", "content": "mine now"}`, "not allowed"},
		{"alice", `{"action": "create", "name": "notes.md", "title": "t", "kind": "text", "content": "x"}`, "exists already"},
		{"alice", `{"action": "update", "name": "nothing", "content": "x"}`, "no artifact named nothing"},
		{"alice", `{"action": "create", "name": "../etc/passwd", "title": "t", "kind": "text", "content": "x"}`, "name"},
		{"alice", `{"action": "create", "name": "n", "title": "t", "kind": "text"}`, "needs a title, a kind and the content"},
		{"alice", `{"action": "create", "name": "big", "title": "t", "kind": "text", "content": "` + strings.Repeat("x", webext.MaxArtifactBytes+1) + `"}`, "at most 1048576"},
		{"alice", `{"action": "create", "name": "img", "title": "t", "kind": "image", "media_type": "image/png", "content": "` + base64.StdEncoding.EncodeToString([]byte("<svg onload=alert(1)>")) + `"}`, "is not image/png"},
		{"alice", `{"action": "create", "name": "img", "title": "t", "kind": "image", "content": "abc"}`, "needs its media type"},
		{"", `{"action": "create", "name": "n", "title": "t", "kind": "text", "content": "x"}`, "only an agent"},
	} {
		out, isErr := call(t, reg, tc.agent, tc.args)
		if !isErr || !strings.Contains(out, tc.want) {
			t.Errorf("%s %.80s: %q, want an error saying %q", tc.agent, tc.args, out, tc.want)
		}
	}
	if st, _ := w.m.Get(ctx, "artifact", "notes.md"); st.Version != 2 {
		t.Errorf("a refused call wrote: %+v", st.Extension)
	}
}

func TestArtifactsRead(t *testing.T) {
	w := newWorld(t, nil)
	ctx := t.Context()
	reg := tool.NewRegistry(nil)
	reg.Register(webext.ArtifactTool(w.m, w.m))
	for _, args := range []string{
		`{"action": "create", "name": "page", "title": "Page", "kind": "html", "content": "<script>alert(1)</script>"}`,
		`{"action": "update", "name": "page", "content": "<p>two</p>"}`,
		`{"action": "create", "name": "dot", "title": "Dot", "kind": "image", "media_type": "image/png", "content": "` + base64.StdEncoding.EncodeToString(pngBytes) + `"}`,
		`{"action": "create", "name": "fib", "title": "fib", "kind": "code", "language": "python", "content": "def fib(): pass"}`,
	} {
		if out, isErr := call(t, reg, "alice", args); isErr {
			t.Fatal(out)
		}
	}
	if _, err := w.m.Put(ctx, doc("artifact", "other", `{"title": "o", "kind": "text", "content": "x", "session": "bob/chat:1"}`), person); err != nil {
		t.Fatal(err)
	}
	r := webext.NewArtifacts(w.m, w.m)
	list, err := r.Artifacts(ctx, "alice/chat:1")
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, a := range list {
		names = append(names, a.Name)
	}
	if diff := cmp.Diff([]string{"dot", "fib", "page"}, names); diff != "" {
		t.Errorf("alice's session's artifacts (-want +got):\n%s", diff)
	}
	if all, _ := r.Artifacts(ctx, ""); len(all) != 4 {
		t.Errorf("every artifact: %d", len(all))
	}

	v1, err := r.Artifact(ctx, "page", 1)
	if err != nil || v1.Content != "<script>alert(1)</script>" || v1.Version != 1 {
		t.Errorf("version 1: %+v, %v", v1, err)
	}
	cur, err := r.Artifact(ctx, "page", 0)
	if err != nil || cur.Content != "<p>two</p>" || cur.Version != 2 {
		t.Errorf("current: %+v, %v", cur, err)
	}
	if _, err := r.Artifact(ctx, "page", 9); !errors.Is(err, webext.ErrNotFound) {
		t.Errorf("version 9: %v", err)
	}
	img, err := r.Artifact(ctx, "dot", 0)
	if err != nil || !strings.HasPrefix(img.Content, "data:image/png;base64,iVBOR") {
		t.Errorf("image: %.60s, %v", img.Content, err)
	}

	for _, tc := range []struct {
		name, file, ctype string
		body              []byte
	}{
		{"page", "page.html", "text/plain; charset=utf-8", []byte("<p>two</p>")},
		{"dot", "dot.png", "image/png", pngBytes},
		{"fib", "fib.py", "text/plain; charset=utf-8", []byte("def fib(): pass")},
	} {
		d, err := r.Download(ctx, tc.name, 0)
		if err != nil || d.Filename != tc.file || d.ContentType != tc.ctype || string(d.Body) != string(tc.body) {
			t.Errorf("download %s: %+v, %v", tc.name, d, err)
		}
	}

	// A disabled artifact is gone from the API.
	if _, err := w.m.SetEnabled(ctx, "artifact", "page", false, person); err != nil {
		t.Fatal(err)
	}
	if _, err := r.Artifact(ctx, "page", 1); !errors.Is(err, webext.ErrNotFound) {
		t.Errorf("disabled: %v", err)
	}
	if _, err := r.Download(ctx, "nothing", 0); !errors.Is(err, webext.ErrNotFound) {
		t.Errorf("missing: %v", err)
	}
	if _, err := w.m.Get(ctx, "artifact", "nothing"); !errors.Is(err, store.ErrNotFound) {
		t.Fatal(err)
	}
}
