// Package hostheader parses the Host header and Origin values that
// agentd's HTTP servers check against DNS rebinding: strictly, so that a
// value it cannot read is refused rather than guessed at.
package hostheader

import (
	"strconv"
	"strings"
)

// Split splits a Host header value into its lowercase host and port. It
// accepts "name", "name:port", "[v6]" and "[v6]:port" with a decimal port
// up to 65535; anything else (a second colon, an empty or non-numeric
// port, characters outside a host name, an IPv6 zone) is not ok. "" is
// ok: no host.
func Split(h string) (host, port string, ok bool) {
	h = strings.ToLower(h)
	if strings.HasPrefix(h, "[") {
		end := strings.IndexByte(h, ']')
		if end < 0 {
			return "", "", false
		}
		host, rest := h[:end+1], h[end+1:]
		for _, c := range host[1:end] {
			if !(c >= '0' && c <= '9' || c >= 'a' && c <= 'f' || c == ':' || c == '.') {
				return "", "", false
			}
		}
		if rest == "" {
			return host, "", true
		}
		if rest[0] != ':' || !isPort(rest[1:]) {
			return "", "", false
		}
		return host, rest[1:], true
	}
	host = h
	if i := strings.IndexByte(h, ':'); i >= 0 {
		host, port = h[:i], h[i+1:]
		if !isPort(port) {
			return "", "", false
		}
	}
	for _, c := range host {
		if !(c >= 'a' && c <= 'z' || c >= '0' && c <= '9' || c == '-' || c == '.' || c == '_') {
			return "", "", false
		}
	}
	if host == "" && port != "" {
		return "", "", false
	}
	return host, port, true
}

func isPort(p string) bool {
	if p == "" || len(p) > 5 {
		return false
	}
	for _, c := range p {
		if c < '0' || c > '9' {
			return false
		}
	}
	n, _ := strconv.Atoi(p)
	return n <= 65535
}

// NormalizeOrigin lowercases an origin and drops surrounding space and a
// trailing slash, so that configured entries compare equal to what
// browsers send.
func NormalizeOrigin(o string) string {
	return strings.TrimSuffix(strings.ToLower(strings.TrimSpace(o)), "/")
}
