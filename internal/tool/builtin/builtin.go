// Package builtin provides agentd's built-in tools, written in Go and
// registered like any other tool:
//
//   - clock: the current date and time in a time zone.
//   - calculator: arithmetic expressions, with the usual functions.
//   - http_fetch: HTTP GET, POST and HEAD through an SSRF guard (Risky, so
//     it is off unless an agent's policy names it).
//
// The clock resolves IANA zone names from the system's zoneinfo; a binary
// that must run without one imports time/tzdata.
package builtin

import (
	"net/netip"
	"time"

	"agentd/internal/tool"
)

// Options configures the built-in tools. The zero value is usable.
type Options struct {
	// Now is the clock tool's time source; nil means time.Now.
	Now func() time.Time

	// AllowPrefixes are address ranges http_fetch may reach although they
	// are blocked by default (loopback, private, link-local ...), such as a
	// trusted service on the local network.
	AllowPrefixes []netip.Prefix
	// FetchTimeout bounds one http_fetch exchange, redirects and body
	// included; default 30s.
	FetchTimeout time.Duration
	// FetchMaxBytes caps the response body http_fetch returns; default
	// 1 MiB. The agent's tools.max_output_bytes caps it too: the body is
	// read no further.
	FetchMaxBytes int64
}

// Tools returns the built-in tools. opts may be nil.
func Tools(opts *Options) []tool.Tool {
	var o Options
	if opts != nil {
		o = *opts
	}
	return []tool.Tool{
		newClock(o.Now),
		calculator{},
		newFetch(&o),
	}
}
