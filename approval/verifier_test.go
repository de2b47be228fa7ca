package approval

import (
	"crypto/ed25519"
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"
)

// clock is a settable time source.
type clock struct {
	mu sync.Mutex
	t  time.Time
}

func newClock() *clock { return &clock{t: time.Date(2025, 6, 1, 12, 0, 0, 0, time.UTC)} }

func (c *clock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.t
}

func (c *clock) Set(t time.Time) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.t = t
}

func (c *clock) Add(d time.Duration) { c.Set(c.Now().Add(d)) }

func pubOf(key ed25519.PrivateKey) string {
	return EncodePublicKey(key.Public().(ed25519.PublicKey))
}

// newV is a verifier for the audience "srv" with options o.
func newV(o VerifierOptions) *Verifier {
	o.Audience = append(o.Audience, "srv")
	return NewVerifier(&o)
}

// signAt signs a test approval of a message that came in at created, for
// a call made at signed.
func signAt(tb testing.TB, key ed25519.PrivateKey, created, signed time.Time, id string) *Approval {
	tb.Helper()
	a, err := Sign(key, Message{Text: "m", CreatedAt: created, ID: id, ChannelID: "ch"}, signed, "srv", "t", nil)
	if err != nil {
		tb.Fatal(err)
	}
	return a
}

// Freshness is the time the approval was signed, as its call was made;
// the message's createdAt, a day earlier here, does not count.
func TestVerifyTime(t *testing.T) {
	key := testKey(1)
	tests := []struct {
		name    string
		opts    VerifierOptions
		offset  time.Duration // signedAt - now
		wantErr error
	}{
		{"now", VerifierOptions{}, 0, nil},
		{"default max age", VerifierOptions{}, -5 * time.Minute, nil},
		{"past default max age", VerifierOptions{}, -5*time.Minute - time.Millisecond, ErrExpired},
		{"default skew", VerifierOptions{}, 30 * time.Second, nil},
		{"past default skew", VerifierOptions{}, 30*time.Second + time.Millisecond, ErrExpired},
		{"max age", VerifierOptions{MaxAge: time.Hour}, -time.Hour, nil},
		{"past max age", VerifierOptions{MaxAge: time.Hour}, -time.Hour - time.Millisecond, ErrExpired},
		{"skew", VerifierOptions{MaxSkew: 2 * time.Second}, 2 * time.Second, nil},
		{"past skew", VerifierOptions{MaxSkew: 2 * time.Second}, 2*time.Second + time.Millisecond, ErrExpired},
		{"negative options mean defaults", VerifierOptions{MaxAge: -1, MaxSkew: -1}, -4 * time.Minute, nil},
		{"far past", VerifierOptions{}, -100 * 365 * 24 * time.Hour, ErrExpired},
		{"far future", VerifierOptions{}, 100 * 365 * 24 * time.Hour, ErrExpired},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			c := newClock()
			o := tc.opts
			o.Now = c.Now
			v := newV(o)
			signed := c.Now().Add(tc.offset)
			a := signAt(t, key, signed.Add(-24*time.Hour), signed, "id")
			if err := v.Verify(a, "t", nil); !errors.Is(err, tc.wantErr) {
				t.Errorf("Verify = %v, want %v", err, tc.wantErr)
			}
		})
	}
}

// A call made long after its message came in (a person approved it an
// hour later, or the message waited in a queue) is accepted, once; the
// same approval presented again is refused, and once MaxAge has passed
// since it was signed, refused as expired.
func TestVerifyLateCall(t *testing.T) {
	c := newClock()
	v := newV(VerifierOptions{Now: c.Now})
	key := testKey(1)
	created := c.Now()
	c.Add(time.Hour)
	late := signAt(t, key, created, c.Now(), "late")
	c.Add(2 * time.Second)
	if err := v.Verify(late, "t", nil); err != nil {
		t.Fatalf("a call an hour after its message: Verify = %v", err)
	}
	if err := v.Verify(late, "t", nil); !errors.Is(err, ErrReplayed) {
		t.Errorf("the same approval again: Verify = %v, want ErrReplayed", err)
	}
	c.Add(DefaultMaxAge)
	if err := v.Verify(late, "t", nil); !errors.Is(err, ErrExpired) {
		t.Errorf("the same approval after MaxAge: Verify = %v, want ErrExpired", err)
	}
	// An approval signed as its message came in, presented an hour later.
	old := signAt(t, key, created, created, "old")
	if err := NewVerifier(&VerifierOptions{Now: c.Now, Audience: []string{"srv"}}).Verify(old, "t", nil); !errors.Is(err, ErrExpired) {
		t.Errorf("an old approval: Verify = %v, want ErrExpired", err)
	}
}

func TestVerifyZeroTime(t *testing.T) {
	a := sign(t, testKey(1), "m", time.Unix(1700000000, 0), "id", "", "t", nil)
	a.SignedAt = time.Time{}
	if err := newV(VerifierOptions{}).Verify(a, "t", nil); !errors.Is(err, ErrMalformed) {
		t.Errorf("Verify(zero signedAt) = %v, want ErrMalformed", err)
	}
}

// The verifier checks the call it is given against the approval's, before
// anything else but its form and key: an approval is good for one server,
// one tool and one set of arguments.
func TestVerifyCall(t *testing.T) {
	c := newClock()
	key := testKey(1)
	m := Message{Text: "deploy", CreatedAt: c.Now(), ID: "1", ChannelID: "ops"}
	a, err := Sign(key, m, c.Now(), "https://deploy.example/mcp", "deploy", `{"env":"staging"}`)
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name     string
		audience []string
		tool     string
		args     any
		wantErr  error
	}{
		{"no audience", nil, "deploy", `{"env":"staging"}`, ErrMismatch},
		{"another audience", []string{"https://other.example/mcp"}, "deploy", `{"env":"staging"}`, ErrMismatch},
		{"another tool", []string{"https://deploy.example/mcp"}, "destroy", `{"env":"staging"}`, ErrMismatch},
		{"other arguments", []string{"https://deploy.example/mcp"}, "deploy", `{"env":"production"}`, ErrMismatch},
		{"more arguments", []string{"https://deploy.example/mcp"}, "deploy", map[string]any{"env": "staging", "force": true}, ErrMismatch},
		{"bad arguments", []string{"https://deploy.example/mcp"}, "deploy", `{"env":`, ErrMalformed},
		{"this call", []string{"deploy", "https://deploy.example/mcp"}, "deploy", map[string]any{"env": "staging"}, nil},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			v := NewVerifier(&VerifierOptions{Now: c.Now, Audience: tc.audience})
			if err := v.Verify(a, tc.tool, tc.args); !errors.Is(err, tc.wantErr) {
				t.Errorf("Verify = %v, want %v", err, tc.wantErr)
			}
		})
	}
}

func TestVerifyReplay(t *testing.T) {
	c := newClock()
	v := newV(VerifierOptions{Now: c.Now})
	keyA, keyB := testKey(1), testKey(2)
	steps := []struct {
		name    string
		a       *Approval
		tool    string
		args    string
		wantErr error
	}{
		{"first", sign(t, keyA, "m", c.Now(), "42", "chat", "t", `{"n":1}`), "t", `{"n":1}`, nil},
		{"same approval again", sign(t, keyA, "m", c.Now(), "42", "chat", "t", `{"n":1}`), "t", `{"n":1}`, ErrReplayed},
		{"same call signed later", sign(t, keyA, "m", c.Now().Add(time.Second), "42", "chat", "t", `{"n":1}`), "t", `{"n":1}`, ErrReplayed},
		{"same call other text", sign(t, keyA, "other", c.Now(), "42", "chat", "t", `{"n":1}`), "t", `{"n":1}`, ErrReplayed},
		{"same call arguments written otherwise", sign(t, keyA, "m", c.Now(), "42", "chat", "t", `{ "n": 1.0 }`), "t", `{"n":1}`, ErrReplayed},
		{"same message other arguments", sign(t, keyA, "m", c.Now(), "42", "chat", "t", `{"n":2}`), "t", `{"n":2}`, nil},
		{"same message other tool", sign(t, keyA, "m", c.Now(), "42", "chat", "u", `{"n":1}`), "u", `{"n":1}`, nil},
		{"same id other channel", sign(t, keyA, "m", c.Now(), "42", "chat2", "t", `{"n":1}`), "t", `{"n":1}`, nil},
		{"same id no channel", sign(t, keyA, "m", c.Now(), "42", "", "t", `{"n":1}`), "t", `{"n":1}`, nil},
		{"same id other key", sign(t, keyB, "m", c.Now(), "42", "chat", "t", `{"n":1}`), "t", `{"n":1}`, nil},
		{"other id", sign(t, keyA, "m", c.Now(), "43", "chat", "t", `{"n":1}`), "t", `{"n":1}`, nil},
		{"ids that concatenate alike", sign(t, keyA, "m", c.Now(), "2", "chat4", "t", `{"n":1}`), "t", `{"n":1}`, nil},
	}
	for _, s := range steps {
		if err := v.Verify(s.a, s.tool, s.args); !errors.Is(err, s.wantErr) {
			t.Errorf("%s: Verify = %v, want %v", s.name, err, s.wantErr)
		}
	}
	if got := v.Len(); got != 8 {
		t.Errorf("Len = %d, want 8", got)
	}
}

func TestVerifyRejectedNotRecorded(t *testing.T) {
	c := newClock()
	v := newV(VerifierOptions{Now: c.Now})
	good := sign(t, testKey(1), "m", c.Now(), "1", "", "t", nil)
	bad := *good
	bad.Message = "tampered"
	if err := v.Verify(&bad, "t", nil); !errors.Is(err, ErrSignature) {
		t.Fatalf("Verify(tampered) = %v, want ErrSignature", err)
	}
	if err := v.Verify(good, "u", nil); !errors.Is(err, ErrMismatch) {
		t.Fatalf("Verify(another tool) = %v, want ErrMismatch", err)
	}
	if err := v.Verify(good, "t", nil); err != nil {
		t.Errorf("Verify(good) after refused copies = %v, want nil", err)
	}
}

func TestVerifyPrunes(t *testing.T) {
	c := newClock()
	v := newV(VerifierOptions{Now: c.Now, MaxAge: time.Minute})
	start := c.Now()
	first := sign(t, testKey(1), "m", start, "1", "", "t", nil)
	if err := v.Verify(first, "t", nil); err != nil {
		t.Fatal(err)
	}
	c.Add(30 * time.Second)
	if err := v.Verify(sign(t, testKey(1), "m", c.Now(), "2", "", "t", nil), "t", nil); err != nil {
		t.Fatal(err)
	}
	if err := v.Verify(first, "t", nil); !errors.Is(err, ErrReplayed) {
		t.Errorf("replay within MaxAge: Verify = %v, want ErrReplayed", err)
	}
	c.Add(31 * time.Second)
	if err := v.Verify(first, "t", nil); !errors.Is(err, ErrExpired) {
		t.Errorf("replay after MaxAge: Verify = %v, want ErrExpired", err)
	}
	if err := v.Verify(sign(t, testKey(1), "m", c.Now(), "3", "", "t", nil), "t", nil); err != nil {
		t.Fatal(err)
	}
	if got := v.Len(); got != 2 {
		t.Errorf("Len = %d, want 2 (the first approval pruned)", got)
	}
	// The clock goes back: the forgotten approval must still be refused.
	c.Set(start)
	if err := v.Verify(first, "t", nil); !errors.Is(err, ErrExpired) {
		t.Errorf("replay after the clock went back: Verify = %v, want ErrExpired", err)
	}
}

func TestVerifyCacheFull(t *testing.T) {
	c := newClock()
	v := newV(VerifierOptions{Now: c.Now, MaxAge: time.Minute, MaxEntries: 3})
	key := testKey(1)
	for i := range 3 {
		if err := v.Verify(sign(t, key, "m", c.Now().Add(time.Duration(i)*time.Second), fmt.Sprint(i), "", "t", nil), "t", nil); err != nil {
			t.Fatal(err)
		}
	}
	next := sign(t, key, "m", c.Now().Add(10*time.Second), "next", "", "t", nil)
	if err := v.Verify(next, "t", nil); !errors.Is(err, ErrCacheFull) {
		t.Fatalf("Verify with a full cache = %v, want ErrCacheFull", err)
	}
	// A replay is still reported as one when the cache is full.
	if err := v.Verify(sign(t, key, "m", c.Now(), "0", "", "t", nil), "t", nil); !errors.Is(err, ErrReplayed) {
		t.Errorf("replay with a full cache = %v, want ErrReplayed", err)
	}
	// Once the oldest expires, there is room again.
	c.Add(time.Minute + time.Millisecond)
	if err := v.Verify(next, "t", nil); err != nil {
		t.Errorf("Verify after the oldest expired = %v, want nil", err)
	}
	if got := v.Len(); got != 3 {
		t.Errorf("Len = %d, want 3", got)
	}
}

func TestVerifyTrusted(t *testing.T) {
	c := newClock()
	keyA, keyB := testKey(1), testKey(2)
	tests := []struct {
		name    string
		trusted []string
		key     ed25519.PrivateKey
		wantErr error
	}{
		{"any key", nil, keyB, nil},
		{"trusted", []string{pubOf(keyB), pubOf(keyA)}, keyA, nil},
		{"untrusted", []string{pubOf(keyA)}, keyB, ErrUntrusted},
		{"invalid entries match nothing", []string{"not-base58!", ""}, keyA, ErrUntrusted},
		{"invalid entries ignored", []string{"zzz", pubOf(keyA)}, keyA, nil},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			v := newV(VerifierOptions{Now: c.Now, Trusted: tc.trusted})
			if err := v.Verify(sign(t, tc.key, "m", c.Now(), "1", "", "t", nil), "t", nil); !errors.Is(err, tc.wantErr) {
				t.Errorf("Verify = %v, want %v", err, tc.wantErr)
			}
		})
	}
}

func TestVerifyMalformed(t *testing.T) {
	c := newClock()
	v := newV(VerifierOptions{Now: c.Now})
	good := sign(t, testKey(1), "m", c.Now(), "1", "", "t", nil)
	tests := []struct {
		name   string
		change func(a *Approval)
	}{
		{"no message id", func(a *Approval) { a.MessageID = "" }},
		{"no audience", func(a *Approval) { a.Audience = "" }},
		{"no tool", func(a *Approval) { a.Tool = "" }},
		{"version 1", func(a *Approval) { a.Version = 1 }},
		{"pubkey", func(a *Approval) { a.Pubkey = "11" }},
		{"signature", func(a *Approval) { a.Signature = "abc" }},
	}
	for _, tc := range tests {
		a := *good
		tc.change(&a)
		if err := v.Verify(&a, a.Tool, nil); !errors.Is(err, ErrMalformed) {
			t.Errorf("%s: Verify = %v, want ErrMalformed", tc.name, err)
		}
	}
	if err := v.Verify(nil, "t", nil); !errors.Is(err, ErrMalformed) {
		t.Errorf("Verify(nil) = %v, want ErrMalformed", err)
	}
	if err := v.Verify(good, "t", nil); err != nil {
		t.Errorf("Verify(good) = %v", err)
	}
}

func TestVerifyConcurrent(t *testing.T) {
	c := newClock()
	v := newV(VerifierOptions{Now: c.Now})
	key := testKey(1)
	same := sign(t, key, "m", c.Now(), "same", "", "t", nil)
	const workers = 32
	var (
		wg       sync.WaitGroup
		mu       sync.Mutex
		accepted int
		errs     []error
	)
	for i := range workers {
		wg.Go(func() {
			a, err := Sign(key, Message{Text: "m", CreatedAt: c.Now(), ID: fmt.Sprint("own-", i)}, c.Now(), "srv", "t", nil)
			if err == nil {
				err = v.Verify(a, "t", nil)
			}
			if err != nil {
				mu.Lock()
				errs = append(errs, err)
				mu.Unlock()
			}
			err = v.Verify(same, "t", nil)
			mu.Lock()
			defer mu.Unlock()
			switch {
			case err == nil:
				accepted++
			case !errors.Is(err, ErrReplayed):
				errs = append(errs, err)
			}
		})
	}
	wg.Wait()
	if len(errs) > 0 {
		t.Errorf("unexpected errors: %v", errs)
	}
	if accepted != 1 {
		t.Errorf("the same approval was accepted %d times, want once", accepted)
	}
	if got := v.Len(); got != workers+1 {
		t.Errorf("Len = %d, want %d", got, workers+1)
	}
}

func BenchmarkVerify(b *testing.B) {
	c := newClock()
	key := testKey(1)
	v := newV(VerifierOptions{Now: c.Now, MaxEntries: b.N + 1})
	as := make([]*Approval, b.N)
	for i := range as {
		as[i] = sign(b, key, "deploy the staging build", c.Now(), fmt.Sprint("msg-", i), "telegram:1", "deploy", benchArgs)
	}
	b.ReportAllocs()
	b.ResetTimer()
	for i := range b.N {
		if err := v.Verify(as[i], "deploy", benchArgs); err != nil {
			b.Fatal(err)
		}
	}
}
