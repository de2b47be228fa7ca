package engine

import (
	"testing"

	"github.com/google/go-cmp/cmp"

	"agentd/internal/model"
)

// The output bound lowers the limits an agent's params set, in extra too
// (which the providers send in place of max_tokens), without changing the
// agent's own map; where none is set, it sets one only as high as every
// model accepts.
func TestBoundOutput(t *testing.T) {
	extra := map[string]any{"max_completion_tokens": 4000, "max_output_tokens": 10.0, "seed": 1}
	for _, tc := range []struct {
		req       model.Request
		n         int
		max       int
		wantExtra map[string]any
	}{
		{model.Request{}, 50, 50, nil},
		{model.Request{}, 5000, 0, nil}, // more than a model may accept: the provider's default stands
		{model.Request{MaxTokens: 8000}, 5000, 5000, nil},
		{model.Request{MaxTokens: 20}, 50, 20, nil},
		{model.Request{MaxTokens: 80}, 50, 50, nil},
		{model.Request{Extra: extra}, 50, 50, map[string]any{"max_completion_tokens": 50, "max_output_tokens": 10.0, "seed": 1}},
		{model.Request{Extra: map[string]any{"max_tokens": "lots"}}, 5, 5, map[string]any{"max_tokens": 5}},
	} {
		boundOutput(&tc.req, tc.n)
		if tc.req.MaxTokens != tc.max || !cmp.Equal(tc.wantExtra, tc.req.Extra) {
			t.Errorf("bound %d: max_tokens %d, extra %v", tc.n, tc.req.MaxTokens, tc.req.Extra)
		}
	}
	if extra["max_completion_tokens"] != 4000 {
		t.Errorf("the agent's extra was changed: %v", extra)
	}
}
