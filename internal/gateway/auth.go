package gateway

// Authentication of the API on TCP. The unix socket needs none (its file
// mode is the access control); everything served on TCP goes through
// Protect, which checks, in this order:
//
//  1. Host: a name the API is meant to be reached by (DNS rebinding).
//  2. Origin, when present: the page's own origin, or a configured one.
//  3. A CORS preflight from a configured origin is answered.
//  4. The body size.
//  5. Public paths pass (health, login, the console's static files).
//  6. The token: Authorization: Bearer <token>, or the console's cookie.
//     Failed attempts are rate-limited per client network (clientKey).

import (
	"agentd/internal/hostheader"
	"crypto/rand"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"log/slog"
	"math"
	"net"
	"net/http"
	"net/netip"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/mr-tron/base58"

	"agentd/internal/agent"
)

// Token settings.
const (
	// TokenFile is the file in the data directory holding the token.
	TokenFile = "gateway.token"
	// TokenEnv is the environment variable that may hold the token
	// instead (agentd serve), or the token of a remote gateway (the CLI's
	// --remote).
	TokenEnv = "AGENTD_TOKEN"
	// MinTokenLen is the shortest token accepted.
	MinTokenLen = 24
	// minTokenDistinct is the fewest different characters a token may have.
	minTokenDistinct = 10
	// maxTokenLen bounds a token (and so what is read of the file).
	maxTokenLen = 512
	// CookieName is the console's login cookie.
	CookieName = "agentd_console"
	// cookieMessage is what the cookie value is the HMAC of, keyed with
	// the token: rotating the token logs every browser out.
	cookieMessage = "agentd-console-v1"
)

// Errors about tokens.
var (
	// ErrWeakToken: a token is too short or too uniform.
	ErrWeakToken = errors.New("token too weak")
	// ErrNoToken: the token file is missing or unreadable.
	ErrNoToken = errors.New("no token")
	// ErrFixedToken: the token comes from AGENTD_TOKEN and so cannot be
	// rotated here.
	ErrFixedToken = errors.New("the token comes from " + TokenEnv)
)

// CheckToken reports why s cannot be a gateway token: it must be at least
// MinTokenLen printable ASCII characters without spaces, with at least 10
// different ones.
func CheckToken(s string) error {
	if len(s) < MinTokenLen {
		return fmt.Errorf("%w: %d characters, want at least %d random ones", ErrWeakToken, len(s), MinTokenLen)
	}
	if len(s) > maxTokenLen {
		return fmt.Errorf("%w: longer than %d characters", ErrWeakToken, maxTokenLen)
	}
	var seen [128]bool
	distinct := 0
	for i := 0; i < len(s); i++ {
		c := s[i]
		if c <= ' ' || c > '~' {
			return fmt.Errorf("%w: only printable ASCII characters without spaces are allowed", ErrWeakToken)
		}
		if !seen[c] {
			seen[c] = true
			distinct++
		}
	}
	if distinct < minTokenDistinct {
		return fmt.Errorf("%w: only %d different characters, want at least %d (a random string)", ErrWeakToken, distinct, minTokenDistinct)
	}
	return nil
}

// NewToken returns a new random token: 32 bytes from crypto/rand in
// base58 (about 44 characters), which CheckRemoteToken accepts.
func NewToken() string {
	for {
		var b [32]byte
		rand.Read(b[:])
		if t := base58.Encode(b[:]); CheckRemoteToken(t) == nil {
			return t
		}
	}
}

// TokenOptions configure OpenTokens.
type TokenOptions struct {
	// Fixed, if not "", is the token (from AGENTD_TOKEN); the file is then
	// neither read nor written.
	Fixed string
	// Create makes the token file with a new token when it is missing.
	Create bool
	// OffLoopback says the API is served where other machines can reach
	// it: the token, fixed or read from the file whenever it changes,
	// must then pass CheckRemoteToken rather than CheckToken alone.
	OffLoopback bool
	Logger      *slog.Logger
}

// Tokens is the gateway token. It re-reads the token file when the file
// changes (a cheap stat per request), so a rotated or replaced token takes
// effect at the next request, without a restart. A file that is missing,
// unreadable, readable by others or holds a weak token lets no request in.
type Tokens struct {
	path   string
	fixed  bool
	remote bool // the token must pass CheckRemoteToken (TokenOptions.OffLoopback)
	log    *slog.Logger
	cur    atomic.Pointer[tokenState]
	mu     sync.Mutex // serializes reloads
}

// tokenState is one version of the token.
type tokenState struct {
	token string
	sum   [sha256.Size]byte // of token, for comparisons that do not leak its length
	fi    fs.FileInfo       // the file this was read from; nil for a fixed token
	err   error             // not nil: no valid token, every request is refused
}

func newTokenState(token string, fi fs.FileInfo) *tokenState {
	return &tokenState{token: token, sum: sha256.Sum256([]byte(token)), fi: fi}
}

// OpenTokens returns the token of the data directory dataDir: o.Fixed, or
// the content of dataDir/gateway.token, made with a new token when missing
// if o.Create is set. A weak fixed token is an error (ErrWeakToken).
func OpenTokens(dataDir string, o *TokenOptions) (*Tokens, error) {
	var opts TokenOptions
	if o != nil {
		opts = *o
	}
	t := &Tokens{path: filepath.Join(dataDir, TokenFile), log: opts.Logger, remote: opts.OffLoopback}
	if t.log == nil {
		t.log = slog.New(slog.DiscardHandler)
	}
	if opts.Fixed != "" {
		if err := t.checkToken(opts.Fixed); err != nil {
			return nil, fmt.Errorf("gateway: %s: %w", TokenEnv, err)
		}
		t.fixed = true
		t.cur.Store(newTokenState(opts.Fixed, nil))
		return t, nil
	}
	if opts.Create {
		if err := createTokenFile(t.path); err != nil {
			return nil, err
		}
	}
	if st := t.state(); st.err != nil {
		return nil, fmt.Errorf("gateway: %w", st.err)
	}
	return t, nil
}

// Path is the token file.
func (t *Tokens) Path() string { return t.path }

// Fixed reports whether the token comes from AGENTD_TOKEN.
func (t *Tokens) Fixed() bool { return t.fixed }

// Token returns the current token, or why there is none.
func (t *Tokens) Token() (string, error) {
	st := t.state()
	if st.err != nil {
		return "", fmt.Errorf("gateway: %w", st.err)
	}
	return st.token, nil
}

// Rotate writes a new token to the file, replacing the old one at once
// (atomically: a reader sees the old token or the new one), and returns it.
func (t *Tokens) Rotate() (string, error) {
	if t.fixed {
		return "", fmt.Errorf("gateway: rotate: %w: set the variable to a new value and restart agentd", ErrFixedToken)
	}
	tok := NewToken()
	if err := writeTokenFile(t.path, tok, true); err != nil {
		return "", err
	}
	if st := t.state(); st.err != nil || st.token != tok {
		if st.err != nil {
			return "", fmt.Errorf("gateway: rotate: %w", st.err)
		}
		return "", fmt.Errorf("gateway: rotate: %s changed while it was written", t.path)
	}
	return tok, nil
}

// RotateToken writes a new token to dataDir/gateway.token, whatever the
// file held (nothing, a weak token, the wrong mode), and returns it. A
// running agentd uses it from its next request.
func RotateToken(dataDir string) (string, error) {
	t := &Tokens{path: filepath.Join(dataDir, TokenFile), log: slog.New(slog.DiscardHandler)}
	return t.Rotate()
}

// state returns the current token, reloading the file if it changed.
func (t *Tokens) state() *tokenState {
	cur := t.cur.Load()
	if t.fixed {
		return cur
	}
	fi, err := os.Stat(t.path)
	if unchanged(cur, fi, err) {
		return cur
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	if c := t.cur.Load(); c != cur && unchanged(c, fi, err) {
		return c // another request reloaded it
	}
	st := t.load()
	t.cur.Store(st)
	switch {
	case cur == nil: // the first load: its error goes to the caller
	case st.err != nil:
		t.log.Error("gateway: no valid token: every request on TCP is refused", "err", st.err)
	default:
		t.log.Info("gateway: token file changed; using the new token", "file", t.path)
	}
	return st
}

// unchanged reports whether st was loaded from the file that a stat now
// finds (fi, or err): the same file, or still no file.
func unchanged(st *tokenState, fi fs.FileInfo, err error) bool {
	switch {
	case st == nil:
		return false
	case err != nil:
		return st.fi == nil && st.err != nil
	}
	return st.fi != nil && sameFile(st.fi, fi)
}

func sameFile(a, b fs.FileInfo) bool {
	return os.SameFile(a, b) && a.Size() == b.Size() && a.ModTime().Equal(b.ModTime()) && a.Mode() == b.Mode()
}

// load reads the token file. A failed load keeps the file's FileInfo when
// it has one, so the file is read again only once it changes.
func (t *Tokens) load() *tokenState {
	var fi fs.FileInfo
	fail := func(err error) *tokenState { return &tokenState{err: err, fi: fi} }
	f, err := os.Open(t.path)
	if errors.Is(err, fs.ErrNotExist) {
		return fail(fmt.Errorf("%w: %s is missing (agentd token makes one)", ErrNoToken, t.path))
	}
	if err != nil {
		return fail(fmt.Errorf("%w: %v", ErrNoToken, err))
	}
	defer f.Close()
	fi, err = f.Stat()
	if err != nil {
		return fail(fmt.Errorf("%w: %v", ErrNoToken, err))
	}
	if !fi.Mode().IsRegular() {
		return fail(fmt.Errorf("%w: %s is not a regular file", ErrNoToken, t.path))
	}
	if fi.Mode().Perm()&0o077 != 0 {
		return fail(fmt.Errorf("%w: %s is readable by others (mode %04o); chmod 600 it, or agentd token rotate", ErrNoToken, t.path, fi.Mode().Perm()))
	}
	b, err := io.ReadAll(io.LimitReader(f, maxTokenLen+16))
	if err != nil {
		return fail(fmt.Errorf("%w: %v", ErrNoToken, err))
	}
	tok := strings.TrimSpace(string(b))
	if err := t.checkToken(tok); err != nil {
		return fail(fmt.Errorf("%s: %w", t.path, err))
	}
	return newTokenState(tok, fi)
}

// createTokenFile writes a new token to path unless the file exists. An
// existing file is not written to at all (so serve starts on a full disk).
func createTokenFile(path string) error {
	if _, err := os.Lstat(path); err == nil {
		return nil
	}
	err := writeTokenFile(path, NewToken(), false)
	if errors.Is(err, fs.ErrExist) {
		return nil
	}
	return err
}

// writeTokenFile writes tok to path with mode 0600 through a temporary
// file, replacing an existing file if replace is set (else fs.ErrExist).
func writeTokenFile(path, tok string, replace bool) error {
	dir := filepath.Dir(path)
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return fmt.Errorf("gateway: token: %w", err)
	}
	f, err := os.CreateTemp(dir, "."+TokenFile+".*")
	if err != nil {
		return fmt.Errorf("gateway: token: %w", err)
	}
	tmp := f.Name()
	defer os.Remove(tmp)
	// CreateTemp makes the file 0600; say so in case the umask differs.
	if err := f.Chmod(0o600); err != nil {
		f.Close()
		return fmt.Errorf("gateway: token: %w", err)
	}
	if _, err := f.WriteString(tok + "\n"); err != nil {
		f.Close()
		return fmt.Errorf("gateway: token: %w", err)
	}
	if err := f.Sync(); err != nil {
		f.Close()
		return fmt.Errorf("gateway: token: %w", err)
	}
	if err := f.Close(); err != nil {
		return fmt.Errorf("gateway: token: %w", err)
	}
	if replace {
		err = os.Rename(tmp, path)
	} else {
		err = os.Link(tmp, path) // fails if path exists: never overwrite
	}
	if err != nil {
		if errors.Is(err, fs.ErrExist) {
			return err
		}
		return fmt.Errorf("gateway: token: %w", err)
	}
	if d, err := os.Open(dir); err == nil {
		d.Sync()
		d.Close()
	}
	return nil
}

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
	// (AdminRoutes); without it they answer 403 over TCP.
	RemoteAdmin bool
}

// AdminRoutes change what runs on this machine: agent definitions (which
// name MCP server commands), MCP servers, agents' keys. Over TCP they need
// AuthOptions.RemoteAdmin besides the token.
var AdminRoutes = []string{
	"PUT /v1/agents/{id}",
	"POST /v1/agents/{id}/key",
	"PUT /v1/agents/{id}/key",
	"POST /v1/mcp/servers",
	"DELETE /v1/mcp/servers/{name}",
}

// Default limits of failed authentication.
const (
	defaultFailRate  = 10
	defaultFailBurst = 20
	// maxBuckets bounds the addresses tracked; past it, new addresses
	// share one bucket.
	maxBuckets = 4096
	loginBody  = 4 << 10
)

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
		hosts: newHostCheck(opts.Listen, opts.AllowedHosts, s.log), cors: map[string]bool{}}
	if a.maxBody <= 0 || a.maxBody > MaxBody {
		a.maxBody = MaxBody
	}
	a.admin, a.mux = opts.RemoteAdmin, s.mux
	a.preAuth = opts.PreAuthTimeout
	if a.preAuth <= 0 {
		a.preAuth = preAuthRead
	}
	for _, c := range opts.CORSOrigins {
		n, err := agent.NormalizeOrigin(c)
		if err != nil {
			s.log.Warn("gateway: ignoring a CORS origin", "origin", c, "err", err)
			continue
		}
		a.cors[n] = true
	}
	rate, burst := opts.FailRate, float64(opts.FailBurst)
	if rate <= 0 {
		rate = defaultFailRate
	}
	if burst <= 0 {
		burst = defaultFailBurst
	}
	a.limit = &limiter{rate: rate, burst: burst, m: map[string]*bucket{}}
	return a
}

// auth is the handler Protect returns.
type auth struct {
	next    http.Handler
	srv     *Server // answers the refusals
	tokens  *Tokens
	log     *slog.Logger
	hosts   *hostCheck
	cors    map[string]bool
	maxBody int64
	preAuth time.Duration
	limit   *limiter
	revoked revocations
	admin   bool
	mux     *routeMux
}

// state is the current token, nil if there is none.
func (a *auth) state() *tokenState {
	if a.tokens == nil {
		return nil
	}
	return a.tokens.state()
}

// refuse answers r with an error, in the shape of the API r is for.
func (a *auth) refuse(w http.ResponseWriter, r *http.Request, status int, code, msg string) {
	a.srv.answer(w, r, Failure{Status: status, Body: Error{Error: msg, Code: code}})
}

// preAuthRead is the default AuthOptions.PreAuthTimeout: nobody without
// the token can hold a connection open by sending slowly.
const preAuthRead = 10 * time.Second

func (a *auth) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	h := w.Header()
	h.Set("X-Content-Type-Options", "nosniff")
	rc := http.NewResponseController(w)
	rc.SetReadDeadline(time.Now().Add(a.preAuth))
	if !a.hosts.allowed(r.Host) {
		a.refuse(w, r, http.StatusForbidden, "forbidden", "host not allowed: add it to gateway.allowed_hosts")
		return
	}
	origins := r.Header.Values("Origin")
	cors := false
	switch {
	case len(origins) > 1:
		a.refuse(w, r, http.StatusForbidden, "forbidden", "origin not allowed")
		return
	case len(origins) == 1:
		o, err := agent.NormalizeOrigin(origins[0])
		if err != nil {
			a.refuse(w, r, http.StatusForbidden, "forbidden", "origin not allowed")
			return
		}
		cors = a.cors[o]
		if !cors && !sameOrigin(o, r) {
			a.refuse(w, r, http.StatusForbidden, "forbidden", "origin not allowed: add it to gateway.cors_origins")
			return
		}
	}
	if len(a.cors) > 0 {
		h.Add("Vary", "Origin")
	}
	if cors {
		h.Set("Access-Control-Allow-Origin", origins[0])
		h.Set("Access-Control-Allow-Credentials", "true")
		h.Set("Access-Control-Expose-Headers", "X-Agentd-Session, Retry-After")
	}
	if r.Method == http.MethodOptions && len(origins) == 1 && r.Header.Get("Access-Control-Request-Method") != "" {
		if !cors {
			a.refuse(w, r, http.StatusForbidden, "forbidden", "cross-origin requests are not allowed")
			return
		}
		h.Set("Access-Control-Allow-Methods", "GET, POST, PUT, PATCH, DELETE")
		h.Set("Access-Control-Allow-Headers", corsAllowHeaders(r.Header.Get("Access-Control-Request-Headers")))
		h.Set("Access-Control-Max-Age", "600")
		w.WriteHeader(http.StatusNoContent)
		return
	}
	limit := bodyLimit(r, a.maxBody)
	if r.ContentLength > limit {
		a.refuse(w, r, http.StatusRequestEntityTooLarge, "too_large", fmt.Sprintf("body larger than %d bytes", limit))
		return
	}
	if r.Body != nil && r.Body != http.NoBody {
		r.Body = http.MaxBytesReader(w, r.Body, limit)
	}

	switch publicPath(r) {
	case pathLogin:
		a.login(w, r)
		return
	case pathLogout:
		a.logout(w, r)
		return
	case pathPublic:
		a.next.ServeHTTP(w, stripCredentials(r))
		return
	}

	// The right credential is never refused, even from an address that is
	// being limited (everyone behind one proxy shares an address); wrong
	// ones from it are answered 429 without being told apart.
	ok, presented, viaCookie := a.check(r)
	if !ok {
		ip := clientKey(r.RemoteAddr)
		if retry, allowed := a.limit.allow(ip, time.Now()); !allowed {
			a.tooMany(w, r, retry)
			return
		}
		if presented {
			a.failed(ip)
		}
		h.Set("WWW-Authenticate", `Bearer realm="agentd"`)
		a.refuse(w, r, http.StatusUnauthorized, "unauthorized", "missing or invalid token: send the header Authorization: Bearer followed by the token (agentd token prints it)")
		return
	}
	if viaCookie && r.Header.Get("Sec-Fetch-Site") == "cross-site" {
		a.refuse(w, r, http.StatusForbidden, "forbidden", "cross-site request refused")
		return
	}
	if !a.admin {
		if _, pattern := a.mux.Handler(r); slices.Contains(AdminRoutes, pattern) {
			a.refuse(w, r, http.StatusForbidden, "forbidden", "this route changes what runs on the machine: use the local socket (agentd on that host), or set gateway.remote_admin: true")
			return
		}
	}
	// Authenticated: uploads and streams take as long as they take.
	rc.SetReadDeadline(time.Time{})
	a.next.ServeHTTP(w, stripCredentials(r))
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

func (a *auth) tooMany(w http.ResponseWriter, r *http.Request, retry time.Duration) {
	w.Header().Set("Retry-After", strconv.Itoa(int(math.Ceil(retry.Seconds()))))
	a.refuse(w, r, http.StatusTooManyRequests, "rate_limited", "too many failed attempts; try again later")
}

func (a *auth) failed(ip string) {
	if a.limit.fail(ip, time.Now()) {
		a.log.Warn("gateway: failed authentication attempts are now limited", "client", ip)
	}
}

// check reports whether r carries the token (or the cookie made from it),
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

// LoginRequest is the body of POST /v1/auth/login.
type LoginRequest struct {
	Token string `json:"token"`
}

func (a *auth) login(w http.ResponseWriter, r *http.Request) {
	ip := clientKey(r.RemoteAddr)
	var req LoginRequest
	dec := json.NewDecoder(io.LimitReader(r.Body, loginBody))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&req); err != nil || req.Token == "" {
		a.refuse(w, r, http.StatusBadRequest, "bad_request", `body: want {"token": "..."}`)
		return
	}
	var st *tokenState
	if a.tokens != nil {
		st = a.tokens.state()
	}
	sum := sha256.Sum256([]byte(req.Token))
	if st == nil || st.err != nil || subtle.ConstantTimeCompare(sum[:], st.sum[:]) != 1 {
		if retry, ok := a.limit.allow(ip, time.Now()); !ok {
			a.tooMany(w, r, retry)
			return
		}
		a.failed(ip)
		a.refuse(w, r, http.StatusUnauthorized, "unauthorized", "invalid token")
		return
	}
	http.SetCookie(w, &http.Cookie{Name: CookieName, Value: newCookie(st.token, time.Now()), Path: "/", HttpOnly: true,
		SameSite: http.SameSiteStrictMode, Secure: r.TLS != nil, MaxAge: int(CookieMaxAge / time.Second)})
	w.Header().Set("Cache-Control", "no-store")
	writeJSON(w, http.StatusOK, map[string]bool{"ok": true})
}

func (a *auth) logout(w http.ResponseWriter, r *http.Request) {
	// The cookie stops working here, not only in this browser.
	if st := a.state(); st != nil && st.err == nil {
		now := time.Now()
		for _, c := range r.CookiesNamed(CookieName) {
			if nonce, exp, ok := parseCookie(c.Value, st.token, now); ok && !a.revoked.revoke(nonce, exp, now) {
				a.log.Warn("gateway: too many console logouts to remember; this one lasts until the cookie expires")
			}
		}
	}
	http.SetCookie(w, &http.Cookie{Name: CookieName, Value: "", Path: "/", HttpOnly: true,
		SameSite: http.SameSiteStrictMode, Secure: r.TLS != nil, MaxAge: -1})
	writeJSON(w, http.StatusOK, map[string]bool{"ok": true})
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

// Kinds of path, for authentication.
const (
	pathPrivate = iota
	pathPublic
	pathLogin
	pathLogout
)

// publicPath says whether r may be served without the token. Only exact,
// clean paths are public: anything with dot segments, doubled slashes or
// escapes needs the token.
func publicPath(r *http.Request) int {
	p := r.URL.Path
	if r.URL.RawPath != "" || strings.Contains(p, "//") || strings.Contains(p, "/.") || strings.ContainsAny(p, "%\\") {
		return pathPrivate
	}
	get := r.Method == http.MethodGet || r.Method == http.MethodHead
	switch {
	case r.Method == http.MethodPost && p == "/v1/auth/login":
		return pathLogin
	case r.Method == http.MethodPost && p == "/v1/auth/logout":
		return pathLogout
	case get && (p == "/healthz" || p == "/" || p == "/console" || strings.HasPrefix(p, "/console/")):
		return pathPublic
	}
	return pathPrivate
}

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

// clientKey is the rate-limit key of a remote address: the /24 for IPv4
// and the /64 for IPv6 (whoever holds one address usually holds its
// neighbours too), and one key for every loopback address (127.0.0.0/8 and
// ::1: any local user can use them all).
func clientKey(remote string) string {
	host, _, err := net.SplitHostPort(remote)
	if err != nil {
		host = remote
	}
	a, err := netip.ParseAddr(host)
	if err != nil {
		return host
	}
	a = a.WithZone("").Unmap()
	bits := 24
	switch {
	case a.IsLoopback():
		return "loopback"
	case a.Is6():
		bits = 64
	}
	p, _ := a.Prefix(bits)
	return p.String()
}

// limiter is a token bucket per client: each failed attempt takes one;
// an empty bucket refuses every attempt of that client, right or wrong,
// until it refills.
type limiter struct {
	mu          sync.Mutex
	rate, burst float64
	m           map[string]*bucket
}

type bucket struct {
	tokens float64
	last   time.Time
}

const overflowKey = "overflow"

// get returns key's bucket, refilled to now. l.mu is held.
func (l *limiter) get(key string, now time.Time) *bucket {
	b := l.m[key]
	if b == nil && len(l.m) >= maxBuckets {
		for k, v := range l.m { // full buckets are as good as none
			if v.tokens+now.Sub(v.last).Seconds()*l.rate >= l.burst {
				delete(l.m, k)
			}
		}
		if len(l.m) >= maxBuckets {
			key = overflowKey
			b = l.m[key]
		}
	}
	if b == nil {
		b = &bucket{tokens: l.burst, last: now}
		l.m[key] = b
		return b
	}
	b.tokens = math.Min(l.burst, b.tokens+now.Sub(b.last).Seconds()*l.rate)
	b.last = now
	return b
}

// allow reports whether key may try to authenticate now, and if not, how
// long until it may.
func (l *limiter) allow(key string, now time.Time) (time.Duration, bool) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if _, ok := l.m[key]; !ok && len(l.m) < maxBuckets {
		return 0, true // never failed
	}
	b := l.get(key, now)
	if b.tokens >= 1 {
		return 0, true
	}
	return time.Duration((1 - b.tokens) / l.rate * float64(time.Second)), false
}

// fail takes one attempt from key's bucket; it reports whether the bucket
// has just run empty.
func (l *limiter) fail(key string, now time.Time) bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	b := l.get(key, now)
	b.tokens--
	return b.tokens < 1 && b.tokens >= 0
}
