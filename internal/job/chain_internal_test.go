package job

import (
	"testing"

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
