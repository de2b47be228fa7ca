package gateway

// Authentication of the API on TCP. The unix socket needs none (its file
// mode is the access control); everything served on TCP goes through
// Protect, whose ServeHTTP takes these steps in this order, each a
// function that reports whether the request goes on, having answered it
// when it does not:
//
//  1. host: the Host header names the API (DNS rebinding; origin.go).
//  2. origin: an Origin header, when present, is the page's own origin or
//     a configured one (origin.go).
//  3. preflight: a CORS preflight from a configured origin is answered.
//  4. limitBody: the body size.
//  5. public: public paths pass (health, the console's static files), and
//     login and logout are answered (login.go).
//  6. authenticate: the token, as Authorization: Bearer <token> or the
//     console's cookie (cookie.go), and a cookie only from the same site.
//     Failed attempts are limited per client network (limiter.go).
//  7. adminAllowed: a route that changes what runs on the machine needs
//     AuthOptions.RemoteAdmin.
//
// Where the token comes from is tokens.go's.

import (
	"context"
	"crypto/sha256"
	"crypto/subtle"
	"log/slog"
	"net/http"
	"strings"
	"time"
)

// AuthOptions configure Protect.
type AuthOptions struct {
	// Tokens is the token; nil refuses every request that needs one.
	Tokens *Tokens
	// Listen is the address served (host:port). Its host is accepted in
	// the Host header; for a wildcard bind (0.0.0.0, ::, "") any IP
	// address is.
	Listen string
	// AllowedHosts are more names accepted in the Host header (see
	// agent.Gateway). Entries that are not host names are ignored.
	AllowedHosts []string
	// CORSOrigins may call the API from pages on other sites; nil: none.
	CORSOrigins []string
	// MaxBody bounds a request body (0: MaxBody). The API's own limit,
	// MaxBody, applies as well.
	MaxBody int64
	// FailRate and FailBurst limit failed authentication attempts per
	// client network (an IPv4 /24, an IPv6 /64, all of loopback):
	// FailBurst at once, then FailRate per second (0: 10 per second,
	// burst 20).
	FailRate  float64
	FailBurst int
	// PreAuthTimeout bounds how long a request may take to arrive, body
	// included, before it is authenticated (0: 10s).
	PreAuthTimeout time.Duration
	// RemoteAdmin serves the routes that change what runs on this machine
	// (the admin routes of the table, Route.Admin); without it they answer
	// 403 over TCP.
	RemoteAdmin bool
}

// Protect returns the API behind authentication, for serving on TCP. The
// handler passes requests on unwrapped (WebSocket upgrades work), with the
// Authorization header and the login cookie removed, so nothing behind it
// can log or echo the token.
func (s *Server) Protect(o *AuthOptions) http.Handler {
	var opts AuthOptions
	if o != nil {
		opts = *o
	}
	a := &auth{next: s, srv: s, tokens: opts.Tokens, log: s.log, maxBody: opts.MaxBody,
		hosts: newHostCheck(opts.Listen, opts.AllowedHosts, s.log), cors: corsOrigins(opts.CORSOrigins, s.log),
		limit: newLimiter(opts.FailRate, opts.FailBurst), remoteAdmin: opts.RemoteAdmin, preAuth: opts.PreAuthTimeout}
	if a.maxBody <= 0 || a.maxBody > MaxBody {
		a.maxBody = MaxBody
	}
	if a.preAuth <= 0 {
		a.preAuth = preAuthRead
	}
	return a
}

// auth is the handler Protect returns.
type auth struct {
	next        http.Handler
	srv         *Server // answers the refusals
	tokens      *Tokens
	log         *slog.Logger
	hosts       *hostCheck
	cors        map[string]bool
	maxBody     int64
	preAuth     time.Duration
	limit       *limiter
	revoked     revocations
	remoteAdmin bool
}

// state is the current token, nil if there is none.
func (a *auth) state() *tokenState {
	if a.tokens == nil {
		return nil
	}
	return a.tokens.state()
}

// refuse answers r with err, in the shape of the API r is for.
func (a *auth) refuse(w http.ResponseWriter, r *http.Request, err error) {
	a.srv.answer(w, r, a.srv.describe(err))
}

// preAuthRead is the default AuthOptions.PreAuthTimeout: nobody without
// the token can hold a connection open by sending slowly.
const preAuthRead = 10 * time.Second

func (a *auth) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	w.Header().Set("X-Content-Type-Options", "nosniff")
	rc := http.NewResponseController(w)
	rc.SetReadDeadline(time.Now().Add(a.preAuth))
	if !a.host(w, r) {
		return
	}
	cors, ok := a.origin(w, r)
	if !ok || !a.preflight(w, r, cors) || !a.limitBody(w, r) || !a.public(w, r) {
		return
	}
	r, ok = a.authenticate(w, r)
	if !ok || !a.adminAllowed(w, r) {
		return
	}
	if a.remoteAdmin {
		r = r.WithContext(context.WithValue(r.Context(), remoteAdminKey{}, true))
	}
	// Authenticated: uploads and streams take as long as they take.
	rc.SetReadDeadline(time.Time{})
	a.next.ServeHTTP(w, stripCredentials(r))
}

// limitBody refuses a body declared larger than r's limit and bounds the
// body it reads to it; it reports whether r goes on.
func (a *auth) limitBody(w http.ResponseWriter, r *http.Request) bool {
	limit := a.srv.bodyLimit(r, a.maxBody)
	if r.ContentLength > limit {
		err := say(errTooLarge, "body larger than %d bytes", limit)
		a.srv.refusedEarly(r, err)
		a.refuse(w, r, err)
		return false
	}
	if r.Body != nil && r.Body != http.NoBody {
		r.Body = http.MaxBytesReader(w, r.Body, limit)
	}
	return true
}

// public serves r if it needs no token; it reports whether r goes on to
// the token.
func (a *auth) public(w http.ResponseWriter, r *http.Request) bool {
	rt := publicRoute(r)
	switch {
	case rt == nil:
		return true
	case rt.front != nil:
		rt.front(a, w, r)
	default:
		a.next.ServeHTTP(w, stripCredentials(r))
	}
	return false
}

// authenticate reports whether r carries the token, answering it when it
// does not. The right credential is never refused, even from an address
// that is being limited (everyone behind one proxy shares an address);
// wrong ones from it are answered 429 without being told apart. A cookie
// counts only in a request from the same site. It returns r marked with
// the credential it carried (CallerOf).
func (a *auth) authenticate(w http.ResponseWriter, r *http.Request) (*http.Request, bool) {
	ok, presented, viaCookie := a.check(r)
	if !ok {
		ip := clientKey(r.RemoteAddr)
		if retry, allowed := a.limit.allow(ip, time.Now()); !allowed {
			a.tooMany(w, r, retry)
			return r, false
		}
		if presented {
			a.failed(ip)
		}
		w.Header().Set("WWW-Authenticate", `Bearer realm="agentd"`)
		a.refuse(w, r, say(errUnauthorized, "missing or invalid token: send the header Authorization: Bearer followed by the token (agentd token prints it)"))
		return r, false
	}
	if viaCookie && r.Header.Get("Sec-Fetch-Site") == "cross-site" {
		a.refuse(w, r, say(ErrForbidden, "cross-site request refused"))
		return r, false
	}
	if viaCookie {
		return withCaller(r, CallerConsole), true
	}
	return withCaller(r, CallerToken), true
}

// adminAllowed reports whether r may be served as far as remote_admin is
// concerned, answering it when it may not.
func (a *auth) adminAllowed(w http.ResponseWriter, r *http.Request) bool {
	if a.remoteAdmin {
		return true
	}
	if rt := a.srv.route(r); rt != nil && rt.access == admin {
		a.refuse(w, r, say(ErrForbidden, "this route changes what runs on the machine: use the local socket (agentd on that host), or set gateway.remote_admin: true"))
		return false
	}
	return true
}

// whether it carries any credential at all, and whether it was the cookie.
// A request with an Authorization header is judged by it alone. The token
// is never taken from the URL.
func (a *auth) check(r *http.Request) (ok, presented, viaCookie bool) {
	var st *tokenState
	if a.tokens != nil {
		st = a.tokens.state()
	}
	valid := st != nil && st.err == nil
	if hs := r.Header.Values("Authorization"); len(hs) > 0 {
		if len(hs) != 1 || !valid {
			return false, true, false
		}
		scheme, tok, found := strings.Cut(hs[0], " ")
		if !found || !strings.EqualFold(scheme, "Bearer") {
			return false, true, false
		}
		sum := sha256.Sum256([]byte(tok))
		return subtle.ConstantTimeCompare(sum[:], st.sum[:]) == 1, true, false
	}
	now := time.Now()
	for _, c := range r.CookiesNamed(CookieName) {
		presented = true
		if !valid {
			continue
		}
		if nonce, _, ok := parseCookie(c.Value, st.token, now); ok && !a.revoked.revoked(nonce) {
			return true, true, true
		}
	}
	return false, presented, false
}

// stripCredentials returns r without its Authorization header and login
// cookie (r itself if it has neither).
func stripCredentials(r *http.Request) *http.Request {
	_, hasAuth := r.Header["Authorization"]
	cookies := r.Header.Values("Cookie")
	hasCookie := false
	for _, c := range cookies {
		if strings.Contains(c, CookieName) {
			hasCookie = true
		}
	}
	if !hasAuth && !hasCookie {
		return r
	}
	r2 := r.WithContext(r.Context())
	r2.Header = r.Header.Clone()
	r2.Header.Del("Authorization")
	if hasCookie {
		r2.Header.Del("Cookie")
		for _, c := range r.Cookies() {
			if c.Name != CookieName {
				r2.AddCookie(c)
			}
		}
	}
	return r2
}

// How a request reached the API, as CallerOf says it: who changed an
// extension is recorded as "user:" and one of these.
const (
	CallerSocket  = "socket"  // the unix socket, or a command run in process: no credential
	CallerToken   = "token"   // TCP, with the token in Authorization
	CallerConsole = "console" // TCP, with the console's login cookie
)

// callerKey is the context key of the caller Protect found.
type callerKey struct{}

// withCaller returns r marked as having come with the credential c.
func withCaller(r *http.Request, c string) *http.Request {
	return r.WithContext(context.WithValue(r.Context(), callerKey{}, c))
}

// remoteAdminKey marks a request Protect served with
// AuthOptions.RemoteAdmin.
type remoteAdminKey struct{}

// adminAccess reports whether r has the access the admin routes need: it
// came through the socket (or in process), or through Protect with
// AuthOptions.RemoteAdmin. A route open to the token checks it for what
// it does only with that access (an "always" grant).
func adminAccess(r *http.Request) bool {
	ok, _ := r.Context().Value(remoteAdminKey{}).(bool)
	return ok || CallerOf(r) == CallerSocket
}

// CallerOf says how r reached the API: CallerToken or CallerConsole
// through Protect, CallerSocket otherwise (the socket's file mode is its
// access control; nothing a client sends can set the mark).
func CallerOf(r *http.Request) string {
	if c, ok := r.Context().Value(callerKey{}).(string); ok {
		return c
	}
	return CallerSocket
}
