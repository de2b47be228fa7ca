package gateway

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"sync"
	"time"

	"golang.org/x/sync/semaphore"
)

// Large request bodies (a message's may be MaxMessageBody) are admitted
// against a budget of bytes being received at once, so that many large
// requests together cannot take the node's memory: past the budget a
// request waits its turn, and one that waits longer than Options.BodyWait
// is answered 503 busy with Retry-After.
const (
	// DefaultBodyBytesInFlight is the default budget: four bodies of the
	// largest size.
	DefaultBodyBytesInFlight = 4 * MaxMessageBody
	// smallBody is the size up to which a body is not counted: small
	// requests never wait behind large ones.
	smallBody = 64 << 10
	// defaultBodyWait is the default Options.BodyWait.
	defaultBodyWait = 30 * time.Second
	// loadRetryAfter is the Retry-After of a request that waited too long.
	loadRetryAfter = 5 * time.Second
)

// errLoad refuses a large request that waited too long for its turn.
var errLoad = errors.New("too many large requests are being received at once")

// admission is the budget of bytes of large bodies being received.
type admission struct {
	sem   *semaphore.Weighted
	total int64
	wait  time.Duration
}

func newAdmission(total int64, wait time.Duration) *admission {
	if total <= 0 {
		total = DefaultBodyBytesInFlight
	}
	if wait <= 0 {
		wait = defaultBodyWait
	}
	return &admission{sem: semaphore.NewWeighted(total), total: total, wait: wait}
}

// admit takes r's share of the budget: its declared length, or limit when
// it declares none. The share is given back when the body has been read to
// its end or closed, or at the latest by release, which the caller defers.
func (a *admission) admit(r *http.Request, limit int64) (release func(), err error) {
	n := r.ContentLength
	if n < 0 || n > limit {
		n = limit
	}
	if n <= smallBody || r.Body == nil || r.Body == http.NoBody {
		return func() {}, nil
	}
	n = min(n, a.total)
	ctx, cancel := context.WithTimeout(r.Context(), a.wait)
	defer cancel()
	if err := a.sem.Acquire(ctx, n); err != nil {
		if r.Context().Err() != nil {
			return nil, r.Context().Err()
		}
		return nil, fmt.Errorf("%w: retry in a few seconds", errLoad)
	}
	once := sync.OnceFunc(func() { a.sem.Release(n) })
	r.Body = &admittedBody{ReadCloser: r.Body, done: once}
	return once, nil
}

// admittedBody gives its share of the budget back once read to its end.
type admittedBody struct {
	io.ReadCloser
	done func()
}

func (b *admittedBody) Read(p []byte) (int, error) {
	n, err := b.ReadCloser.Read(p)
	if err != nil {
		b.done()
	}
	return n, err
}

func (b *admittedBody) Close() error {
	b.done()
	return b.ReadCloser.Close()
}
