package gateway

import (
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"strconv"
	"strings"
	"sync"
	"time"
)

// The console's login cookie is "<issued unix>.<nonce>.<mac>", mac being
// hex HMAC-SHA256 keyed with the token over cookieMessage, the issue time
// and the nonce. It is good for CookieMaxAge from its issue, until the
// token changes (every browser is logged out), or until its own logout
// (the nonce is revoked). Browsers send a host's cookies to every port of
// it, so a cookie must not be a credential for ever.

// CookieName is the console's login cookie.
const CookieName = "agentd_console"

// cookieMessage is what the cookie value is the HMAC of, keyed with the
// token: rotating the token logs every browser out.
const cookieMessage = "agentd-console-v1"

// CookieMaxAge is how long a console login lasts.
const CookieMaxAge = 12 * time.Hour

// maxRevoked bounds the revoked nonces kept (each until its cookie would
// have expired anyway).
const maxRevoked = 100_000

// cookieMAC returns the mac of a cookie issued at issued with nonce.
func cookieMAC(token, issued, nonce string) string {
	m := hmac.New(sha256.New, []byte(token))
	m.Write([]byte(cookieMessage + "|" + issued + "|" + nonce))
	return hex.EncodeToString(m.Sum(nil))
}

// newCookie returns a fresh cookie value for token.
func newCookie(token string, now time.Time) string {
	var n [16]byte
	rand.Read(n[:])
	issued, nonce := strconv.FormatInt(now.Unix(), 10), hex.EncodeToString(n[:])
	return issued + "." + nonce + "." + cookieMAC(token, issued, nonce)
}

// parseCookie checks a cookie value against token at now and returns its
// nonce and when it expires; ok is false for anything forged, expired,
// issued in the future or malformed.
func parseCookie(v, token string, now time.Time) (nonce string, expires time.Time, ok bool) {
	issued, rest, found := strings.Cut(v, ".")
	if !found {
		return "", time.Time{}, false
	}
	nonce, mac, found := strings.Cut(rest, ".")
	if !found || len(nonce) != 32 || len(mac) != 2*sha256.Size {
		return "", time.Time{}, false
	}
	at, err := strconv.ParseInt(issued, 10, 64)
	if err != nil {
		return "", time.Time{}, false
	}
	if !hmac.Equal([]byte(mac), []byte(cookieMAC(token, issued, nonce))) {
		return "", time.Time{}, false
	}
	t := time.Unix(at, 0)
	if t.After(now.Add(time.Minute)) || now.Sub(t) > CookieMaxAge {
		return "", time.Time{}, false
	}
	return nonce, t.Add(CookieMaxAge), true
}

// revocations are the nonces of cookies logged out before they expired.
type revocations struct {
	mu sync.Mutex
	m  map[string]time.Time // nonce → when its cookie expires
}

func (r *revocations) revoked(nonce string) bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	_, ok := r.m[nonce]
	return ok
}

// revoke records nonce until expires. When the bound is reached with
// nothing expired, it reports false: the logout cannot be recorded.
func (r *revocations) revoke(nonce string, expires, now time.Time) bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.m == nil {
		r.m = make(map[string]time.Time)
	}
	if len(r.m) >= maxRevoked {
		for n, exp := range r.m {
			if now.After(exp) {
				delete(r.m, n)
			}
		}
		if len(r.m) >= maxRevoked {
			return false
		}
	}
	r.m[nonce] = expires
	return true
}
