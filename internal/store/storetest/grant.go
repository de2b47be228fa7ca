package storetest

import (
	"errors"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"agentd/internal/store"
)

// testGrants: grants read back as written (an exact call with a NUL in
// it too), by agent or all, oldest first, after a reopen; a revoked one
// is gone, and revoking it again or one never made is ErrNotFound.
func testGrants(t *testing.T, x *suite) {
	ctx := t.Context()
	name := x.name()
	s := x.open(t, name)
	at := time.Date(2026, 11, 26, 14, 0, 0, 123456789, time.UTC)
	grants := []store.Grant{
		{ID: "g1", Agent: "coder", Session: "coder/main", Tool: "exec", Approval: "a1", By: "alice", CreatedAt: at},
		{ID: "g2", Agent: "coder", Tool: "exec", Exact: "go test ./...\x00in src", Approval: "a2", By: "bob", CreatedAt: at.Add(time.Second)},
		{ID: "g3", Agent: "writer", Tool: "web_fetch", Exact: "https://example.com/a b", Approval: "a3", CreatedAt: at.Add(2 * time.Second)},
	}
	for i := range grants {
		if err := s.PutGrant(ctx, &grants[i]); err != nil {
			t.Fatalf("PutGrant(%s): %v", grants[i].ID, err)
		}
	}
	check := func(what, agent string, want []store.Grant) {
		t.Helper()
		got, err := s.Grants(ctx, agent)
		if err != nil {
			t.Fatalf("%s: Grants(%q): %v", what, agent, err)
		}
		if want == nil {
			want = []store.Grant{}
		}
		if d := cmp.Diff(want, got); d != "" {
			t.Errorf("%s: Grants(%q) (-want +got):\n%s", what, agent, d)
		}
	}
	check("written", "", grants)
	check("written", "coder", grants[:2])
	check("written", "nobody", nil)
	_ = s.Close()
	s = x.open(t, name)
	check("reopened", "", grants)
	if err := s.DeleteGrant(ctx, "g1"); err != nil {
		t.Fatalf("DeleteGrant(g1): %v", err)
	}
	check("revoked", "coder", grants[1:2])
	for _, id := range []string{"g1", "never", ""} {
		if err := s.DeleteGrant(ctx, id); !errors.Is(err, store.ErrNotFound) {
			t.Errorf("DeleteGrant(%q) = %v; want ErrNotFound", id, err)
		}
	}
}

// testGrantInvalid: a grant without an id, agent or tool, or with a NUL
// in a short field, is refused and nothing is written; an id taken is an
// error too.
func testGrantInvalid(t *testing.T, x *suite) {
	ctx := t.Context()
	s := x.newStore(t)
	ok := store.Grant{ID: "g1", Agent: "a", Tool: "exec", CreatedAt: time.Unix(1, 0).UTC()}
	for _, g := range []store.Grant{
		{Agent: "a", Tool: "exec"}, {ID: "x", Tool: "exec"}, {ID: "x", Agent: "a"},
		{ID: "x\x00", Agent: "a", Tool: "exec"}, {ID: "x", Agent: "a", Tool: "exec", Session: "a/\x00"},
		{ID: "x", Agent: "a", Tool: "exec", Exact: "\xff"},
	} {
		if err := s.PutGrant(ctx, &g); err == nil {
			t.Errorf("PutGrant(%+v) = nil; want an error", g)
		}
	}
	if err := s.PutGrant(ctx, &ok); err != nil {
		t.Fatal(err)
	}
	if err := s.PutGrant(ctx, &ok); err == nil {
		t.Error("PutGrant of an id taken = nil; want an error")
	}
	if got, err := s.Grants(ctx, ""); err != nil || len(got) != 1 {
		t.Errorf("Grants = %v, %v; want the one valid grant", got, err)
	}
}
