package model

import (
	"fmt"
	"testing"
)

func TestKindAndRetryable(t *testing.T) {
	for _, tc := range []struct {
		kind      error
		name      string
		retryable bool
	}{
		{ErrRateLimited, "rate_limited", true},
		{ErrOverloaded, "overloaded", true},
		{ErrServer, "server_error", true},
		{ErrTransport, "transport", true},
		{ErrProtocol, "protocol", true},
		{ErrAuth, "auth", false},
		{ErrContextOverflow, "context_overflow", false},
		{ErrBadRequest, "bad_request", false},
	} {
		err := fmt.Errorf("every model failed; last: %w", &Error{Kind: tc.kind, Provider: "p", Status: 500, Message: "m"})
		if Kind(err) != tc.name || Retryable(err) != tc.retryable {
			t.Errorf("%v: kind %q retryable %v, want %q %v", tc.kind, Kind(err), Retryable(err), tc.name, tc.retryable)
		}
	}
	if e := (&Error{Kind: ErrServer, Provider: "openai", Status: 500, Message: "Cannot load model"}); e.Error() != "openai: server error (HTTP 500): Cannot load model" {
		t.Errorf("Error() = %q", e.Error())
	}
}
