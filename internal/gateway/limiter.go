package gateway

// The limit on failed authentication: a token bucket per client network,
// so that nobody can guess the token, and one address's failures cannot
// lock out another network.

import (
	"math"
	"net"
	"net/http"
	"net/netip"
	"strconv"
	"sync"
	"time"
)

// Default limits of failed authentication.
const (
	defaultFailRate  = 10
	defaultFailBurst = 20
	// maxBuckets bounds the addresses tracked; past it, new addresses
	// share one bucket.
	maxBuckets = 4096
)

// newLimiter returns the limiter of AuthOptions' FailRate and FailBurst
// (0: the defaults).
func newLimiter(rate float64, burst int) *limiter {
	if rate <= 0 {
		rate = defaultFailRate
	}
	if burst <= 0 {
		burst = defaultFailBurst
	}
	return &limiter{rate: rate, burst: float64(burst), m: map[string]*bucket{}}
}

func (a *auth) tooMany(w http.ResponseWriter, r *http.Request, retry time.Duration) {
	w.Header().Set("Retry-After", strconv.Itoa(int(math.Ceil(retry.Seconds()))))
	a.refuse(w, r, say(errRateLimited, "too many failed attempts; try again later"))
}

func (a *auth) failed(ip string) {
	if a.limit.fail(ip, time.Now()) {
		a.log.Warn("gateway: failed authentication attempts are now limited", "client", ip)
	}
}

// check reports whether r carries the token (or the cookie made from it),

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
