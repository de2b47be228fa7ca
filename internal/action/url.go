package action

import (
	"errors"
	"fmt"
	"net/url"
	"slices"
	"strings"
)

// urlTemplate is a URL whose path segments and query values may hold
// argument references. Its scheme and host are fixed text, so no argument
// can send a request elsewhere; each value is escaped for the part it is
// in, so none can add a path segment, a query parameter or a fragment.
type urlTemplate struct {
	base  string       // scheme://host[:port], as written
	host  string       // the URL's host name, lower case, without brackets
	port  string       // its port: written, else the scheme's
	path  []template   // the segments after base, each after a '/'
	query []queryParam // from the URL's query and the spec's query, in order
}

// queryParam is one name=value of the query, or a name alone when bare.
type queryParam struct {
	name  template
	value template
	bare  bool
}

// parseURL parses a URL template, with the spec's query parameters (name
// → value template) put after the URL's own.
func parseURL(raw string, query map[string]string) (*urlTemplate, error) {
	if strings.ContainsAny(raw, " \t\r\n") {
		return nil, errors.New("a URL has no white space")
	}
	if strings.Contains(raw, "${") {
		return nil, errors.New("secret references go in headers, not in the URL")
	}
	scheme, rest, ok := strings.Cut(raw, "://")
	if !ok {
		return nil, errors.New("want an absolute http:// or https:// URL")
	}
	if scheme = strings.ToLower(scheme); scheme != "http" && scheme != "https" {
		return nil, fmt.Errorf("scheme %q is not supported; use http or https", scheme)
	}
	end := strings.IndexAny(rest, "/?#")
	if end < 0 {
		end = len(rest)
	}
	authority := rest[:end]
	if strings.Contains(authority, "{{") {
		return nil, errors.New("the host cannot hold a {{…}} reference: it is fixed, so that arguments cannot send the request elsewhere")
	}
	u, err := url.Parse(scheme + "://" + authority)
	if err != nil {
		return nil, fmt.Errorf("bad host: %v", errors.Unwrap(err))
	}
	if u.User != nil {
		return nil, errors.New("user names and passwords in URLs are not allowed; put credentials in a header")
	}
	if u.Hostname() == "" {
		return nil, errors.New("the URL has no host")
	}
	ut := &urlTemplate{base: scheme + "://" + authority, host: strings.ToLower(u.Hostname()), port: u.Port()}
	if ut.port == "" {
		ut.port = map[string]string{"http": "80", "https": "443"}[scheme]
	}
	rest = rest[end:]
	if strings.Contains(rest, "#") {
		return nil, errors.New("a URL template has no fragment (#…)")
	}
	p, q, _ := strings.Cut(rest, "?")
	if p != "" {
		for _, seg := range strings.Split(p[1:], "/") {
			t, err := parseTemplate(seg)
			if err != nil {
				return nil, err
			}
			ut.path = append(ut.path, t)
		}
	}
	if q != "" {
		for _, kv := range strings.Split(q, "&") {
			k, v, hasValue := strings.Cut(kv, "=")
			if err := ut.addParam(k, v, !hasValue); err != nil {
				return nil, err
			}
		}
	}
	names := make([]string, 0, len(query))
	for k := range query {
		names = append(names, k)
	}
	slices.Sort(names)
	for _, k := range names {
		if err := ut.addParam(url.QueryEscape(k), query[k], false); err != nil {
			return nil, fmt.Errorf("query %s: %w", k, err)
		}
	}
	// The literal text must make a valid URL.
	if _, err := url.Parse(ut.fill(nil)); err != nil {
		return nil, fmt.Errorf("not a valid URL: %v", errors.Unwrap(err))
	}
	return ut, nil
}

func (ut *urlTemplate) addParam(k, v string, bare bool) error {
	kt, err := parseTemplate(k)
	if err != nil {
		return err
	}
	vt, err := parseTemplate(v)
	if err != nil {
		return err
	}
	ut.query = append(ut.query, queryParam{kt, vt, bare})
	return nil
}

// refs returns every reference of the URL.
func (ut *urlTemplate) refs() []path {
	var out []path
	for _, t := range ut.path {
		out = append(out, t.refs()...)
	}
	for _, q := range ut.query {
		out = append(out, q.name.refs()...)
		out = append(out, q.value.refs()...)
	}
	return out
}

// fill returns the URL for the arguments args. A query parameter whose
// value is one reference to an argument that is absent or null is left
// out (an optional argument); see check for the path.
func (ut *urlTemplate) fill(args any) string {
	var b strings.Builder
	b.WriteString(ut.base)
	for _, seg := range ut.path {
		b.WriteByte('/')
		seg.fill(&b, args, url.PathEscape)
	}
	sep := byte('?')
	for _, q := range ut.query {
		if r, ok := q.value.whole(); ok {
			if v, _ := r.lookup(args); v == nil {
				continue
			}
		}
		b.WriteByte(sep)
		sep = '&'
		q.name.fill(&b, args, url.QueryEscape)
		if !q.bare {
			b.WriteByte('=')
			q.value.fill(&b, args, url.QueryEscape)
		}
	}
	return b.String()
}

// check refuses arguments that would change the path's structure though
// escaped: a segment made only of a reference must not come out empty,
// "." or ".." (which servers read as a step up), and a reference in the
// path must name an argument that is there.
func (ut *urlTemplate) check(args any) error {
	for _, seg := range ut.path {
		if seg.refs() == nil {
			continue
		}
		for _, r := range seg.refs() {
			if v, _ := r.lookup(args); v == nil {
				return fmt.Errorf("argument %s is needed for the URL's path", r)
			}
		}
		switch s := seg.String(args); s {
		case "", ".", "..":
			return fmt.Errorf("a URL path segment cannot be %q", s)
		}
	}
	return nil
}

// allows reports whether host (and port) is one of an allow_hosts list's
// entries: "name" allows every port, "name:port" only that one.
func allows(list []hostPort, host, port string) bool {
	for _, h := range list {
		if h.host == host && (h.port == "" || h.port == port) {
			return true
		}
	}
	return false
}

// hostPort is an allow_hosts entry.
type hostPort struct{ host, port string }

// parseHost parses an allow_hosts entry: a host name or IP address, with
// an optional ":port" (an IPv6 address with a port in brackets).
func parseHost(s string) (hostPort, error) {
	u, err := url.Parse("http://" + s)
	if err != nil || u.Host != s || u.Hostname() == "" || u.User != nil || u.Path != "" {
		return hostPort{}, errors.New("want a host name or address, with an optional :port")
	}
	if strings.HasSuffix(s, ":") {
		return hostPort{}, errors.New("a port is missing after ':'")
	}
	return hostPort{strings.ToLower(u.Hostname()), u.Port()}, nil
}
