package gateway

// Where a request on TCP may come from: the Host header (against DNS
// rebinding) and the Origin header (against other sites' pages), and the
// CORS answers for the origins configured to call the API.

import (
	"log/slog"
	"net"
	"net/http"
	"net/netip"
	"strings"

	"agentd/internal/agent"
	"agentd/internal/hostheader"
)

// hostCheck accepts the Host header values the API is meant to be
// reached by.
type hostCheck struct {
	names map[string]bool // lowercase; IPv6 in brackets
	anyIP bool            // a wildcard bind: any IP address literal
}

func newHostCheck(listen string, extra []string, log *slog.Logger) *hostCheck {
	h := &hostCheck{names: map[string]bool{"localhost": true, "127.0.0.1": true, "[::1]": true}}
	if listen != "" {
		host, _, err := net.SplitHostPort(listen)
		if err != nil {
			host = listen
		}
		if a, err := netip.ParseAddr(host); host == "" || (err == nil && a.IsUnspecified()) {
			h.anyIP = true
		} else if n, err := agent.NormalizeHost(host); err == nil {
			h.names[n] = true
		}
	}
	for _, e := range extra {
		n, err := agent.NormalizeHost(e)
		if err != nil {
			log.Warn("gateway: ignoring an allowed host", "host", e, "err", err)
			continue
		}
		h.names[n] = true
	}
	return h
}

func (h *hostCheck) allowed(v string) bool {
	host, _, ok := hostheader.Split(v)
	if !ok || host == "" {
		return false
	}
	if h.names[host] {
		return true
	}
	return h.anyIP && isIPLiteral(host)
}

// isIPLiteral reports whether host (as splitHost returns it) is an IPv4
// address in dotted decimal or a bracketed IPv6 address without a zone.
func isIPLiteral(host string) bool {
	if strings.HasPrefix(host, "[") {
		a, err := netip.ParseAddr(host[1 : len(host)-1])
		return err == nil && a.Is6() && a.Zone() == ""
	}
	a, err := netip.ParseAddr(host)
	return err == nil && a.Is4()
}

// sameOrigin reports whether the normalized origin o is the origin of r
// itself: the same host and port as its Host header. Over TLS the origin
// must be https; over plain HTTP either scheme is accepted, as a TLS proxy
// in front of agentd forwards https pages' requests as http.
func sameOrigin(o string, r *http.Request) bool {
	scheme, hostport, _ := strings.Cut(o, "://")
	if r.TLS != nil && scheme != "https" {
		return false
	}
	oh, op, ok := hostheader.Split(hostport)
	if !ok {
		return false
	}
	hh, hp, ok := hostheader.Split(r.Host)
	if !ok {
		return false
	}
	if (scheme == "http" && hp == "80") || (scheme == "https" && hp == "443") {
		hp = ""
	}
	return oh == hh && op == hp
}

// corsAllowHeaders returns the request headers a configured origin may
// send: those asked for in a preflight that are among the API's own
// (Authorization, Content-Type, Idempotency-Key, X-Agentd-Session) or the
// OpenAI client libraries' (X-Stainless-*).
func corsAllowHeaders(requested string) string {
	allowed := []string{"Authorization", "Content-Type", "Idempotency-Key", "X-Agentd-Session"}
	for _, f := range strings.Split(requested, ",") {
		f = strings.ToLower(strings.TrimSpace(f))
		if strings.HasPrefix(f, "x-stainless-") && len(f) <= 64 && strings.Trim(f, "abcdefghijklmnopqrstuvwxyz0123456789-") == "" {
			allowed = append(allowed, f)
		}
	}
	return strings.Join(allowed, ", ")
}

// corsOrigins normalizes the configured CORS origins, leaving out (and
// logging) those that are not origins.
func corsOrigins(list []string, log *slog.Logger) map[string]bool {
	out := map[string]bool{}
	for _, c := range list {
		n, err := agent.NormalizeOrigin(c)
		if err != nil {
			log.Warn("gateway: ignoring a CORS origin", "origin", c, "err", err)
			continue
		}
		out[n] = true
	}
	return out
}

// host reports whether r's Host header names the API, answering r when it
// does not.
func (a *auth) host(w http.ResponseWriter, r *http.Request) bool {
	if !a.hosts.allowed(r.Host) {
		a.refuse(w, r, say(ErrForbidden, "host not allowed: add it to gateway.allowed_hosts"))
		return false
	}
	return true
}

// origin reports whether r may come from where its Origin header says
// (answering r when it may not), and whether that is a configured CORS
// origin, whose answers then say that it may read them.
func (a *auth) origin(w http.ResponseWriter, r *http.Request) (cors, ok bool) {
	origins := r.Header.Values("Origin")
	switch {
	case len(origins) > 1:
		a.refuse(w, r, say(ErrForbidden, "origin not allowed"))
		return false, false
	case len(origins) == 1:
		o, err := agent.NormalizeOrigin(origins[0])
		if err != nil {
			a.refuse(w, r, say(ErrForbidden, "origin not allowed"))
			return false, false
		}
		cors = a.cors[o]
		if !cors && !sameOrigin(o, r) {
			a.refuse(w, r, say(ErrForbidden, "origin not allowed: add it to gateway.cors_origins"))
			return false, false
		}
	}
	h := w.Header()
	if len(a.cors) > 0 {
		h.Add("Vary", "Origin")
	}
	if cors {
		h.Set("Access-Control-Allow-Origin", origins[0])
		h.Set("Access-Control-Allow-Credentials", "true")
		h.Set("Access-Control-Expose-Headers", "X-Agentd-Session, Retry-After, "+NextHeader)
	}
	return cors, true
}

// preflight answers a CORS preflight — 204 for a configured origin (cors),
// 403 for any other — and reports whether r goes on: whether it was none.
func (a *auth) preflight(w http.ResponseWriter, r *http.Request, cors bool) bool {
	if r.Method != http.MethodOptions || len(r.Header.Values("Origin")) != 1 || r.Header.Get("Access-Control-Request-Method") == "" {
		return true
	}
	if !cors {
		a.refuse(w, r, say(ErrForbidden, "cross-origin requests are not allowed"))
		return false
	}
	h := w.Header()
	h.Set("Access-Control-Allow-Methods", "GET, POST, PUT, PATCH, DELETE")
	h.Set("Access-Control-Allow-Headers", corsAllowHeaders(r.Header.Get("Access-Control-Request-Headers")))
	h.Set("Access-Control-Max-Age", "600")
	w.WriteHeader(http.StatusNoContent)
	return false
}
