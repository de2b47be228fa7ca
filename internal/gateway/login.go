package gateway

// The console's login and logout, answered by Protect in front of the
// routes: a login trades the token for a cookie (cookie.go), a logout
// revokes the cookie it is sent with.

import (
	"crypto/sha256"
	"crypto/subtle"
	"encoding/json"
	"io"
	"net/http"
	"time"
)

// loginBody bounds the body of a login.
const loginBody = 4 << 10

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
		a.refuse(w, r, say(ErrBadRequest, `body: want {"token": "..."}`))
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
		a.refuse(w, r, say(errUnauthorized, "invalid token"))
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
