package gateway_test

import (
	"fmt"

	"agentd/internal/gateway"
	"agentd/internal/runtime"
)

// The routes that change what runs on the machine: over TCP they need
// gateway.remote_admin besides the token.
func ExampleServer_Routes() {
	for _, rt := range gateway.New(&gateway.Options{}).Routes() {
		if rt.Admin {
			fmt.Println(rt.Pattern)
		}
	}
	// Output:
	// PUT /v1/agents/{id}
	// POST /v1/agents/{id}/key
	// PUT /v1/agents/{id}/key
	// POST /v1/mcp/servers
	// DELETE /v1/mcp/servers/{name}
	// PUT /v1/extensions/{type}/{name}
	// DELETE /v1/extensions/{type}/{name}
	// POST /v1/extensions/{type}/{name}/enable
	// POST /v1/extensions/{type}/{name}/disable
	// POST /v1/extensions/{type}/{name}/revert
	// POST /v1/extensions/reseed
	// POST /v1/connectors/{name}/outbox/{id}/retry
	// POST /v1/connectors/{name}/outbox/{id}/dismiss
	// POST /v1/pairings/{code}/approve
	// POST /v1/pairings/{code}/deny
	// DELETE /v1/pairings/{connector}/{user}
}

// How the API answers a runtime's refusal, wherever it meets it: the
// native routes, the OpenAI-compatible ones (in their shape) and a
// streamed turn's last line say the same.
func ExampleDescribe() {
	f, known := gateway.Describe(fmt.Errorf("%w: assistant/k (reopen it first, or send with reopen)", runtime.ErrSessionClosed))
	fmt.Println(known, f.Status, f.Body.Code)
	fmt.Println(f.Body.Error)
	f, known = gateway.Describe(runtime.ErrClosed)
	fmt.Println(known, f.Status, f.Body.Code, f.RetryAfter)
	// Output:
	// true 409 session_closed
	// session closed: assistant/k (reopen it first, or send with reopen)
	// true 503 shutting_down 5s
}
