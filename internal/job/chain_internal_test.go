package job

import (
	"context"
	"encoding/json"
	"fmt"
	"testing"

	"github.com/google/go-cmp/cmp"

	"agentd/internal/store"
)

func TestChainMatches(t *testing.T) {
	for _, c := range []struct {
		on     string
		status string
		want   bool
	}{
		{"", store.RunDone, true},
		{OnSuccess, store.RunDone, true},
		{OnSuccess, store.RunError, false},
		{OnFailure, store.RunError, true},
		{OnFailure, store.RunDone, false},
		{OnEither, store.RunDone, true},
		{OnEither, store.RunError, true},
		{OnEither, store.RunSkipped, false},
		{OnEither, store.RunCancelled, false},
		{OnFailure, store.RunCancelled, false},
	} {
		if got := chainMatches(c.on, c.status); got != c.want {
			t.Errorf("chainMatches(%q, %q) = %v, want %v", c.on, c.status, got, c.want)
		}
	}
}

// A run's end finds the jobs chained after its job among the active
// ones as they are activated, changed and removed, without reading
// every job: 1,000 jobs fire none, and looking costs no allocation.
func TestChildrenFollowActivations(t *testing.T) {
	ctx := context.Background()
	r := New(nil, nil, nil, nil)
	defer r.Close()
	put := func(name, spec string) {
		t.Helper()
		if err := r.Activate(ctx, &store.Extension{Type: TypeName, Name: name, Spec: json.RawMessage(spec)}); err != nil {
			t.Fatal(err)
		}
	}
	after := func(parent, on string) string {
		return fmt.Sprintf(`{"agent": "a", "prompt": "p", "triggers": [{"chain": {"after": %q, "on": %q}}]}`, parent, on)
	}
	for i := range 1000 {
		put(fmt.Sprintf("j%04d", i), `{"agent": "a", "prompt": "p", "triggers": [{"every": "1h"}]}`)
	}
	put("b", after("j0000", OnSuccess))
	put("c", after("j0000", OnFailure))
	put("d", after("j0000", OnEither))
	put("e", after("b", OnSuccess))
	put("c", after("b", OnSuccess)) // changed: now after b
	if err := r.Deactivate(ctx, "d"); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		parent, status string
		want           []string
	}{
		{"j0000", store.RunDone, []string{"b"}},
		{"j0000", store.RunError, nil},
		{"b", store.RunDone, []string{"c", "e"}},
		{"b", store.RunError, nil},
		{"j0001", store.RunDone, nil},
	} {
		if diff := cmp.Diff(c.want, r.children(c.parent, c.status)); diff != "" {
			t.Errorf("children(%q, %q) (-want +got):\n%s", c.parent, c.status, diff)
		}
	}
	if n := testing.AllocsPerRun(10, func() { r.children("j0001", store.RunDone) }); n != 0 {
		t.Errorf("children of a job nothing follows: %v allocations, want 0", n)
	}
}
