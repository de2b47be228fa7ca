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

func TestVerifyTime(t *testing.T) {
	key := testKey(1)
	tests := []struct {
		name    string
		opts    VerifierOptions
		offset  time.Duration // createdAt - now
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
			v := NewVerifier(&o)
			a := Sign(key, "m", c.Now().Add(tc.offset), "id", "ch")
			if err := v.Verify(a); !errors.Is(err, tc.wantErr) {
				t.Errorf("Verify = %v, want %v", err, tc.wantErr)
			}
		})
	}
}

func TestVerifyZeroTime(t *testing.T) {
	a := Sign(testKey(1), "m", time.Time{}, "id", "")
	if err := NewVerifier(nil).Verify(a); !errors.Is(err, ErrExpired) {
		t.Errorf("Verify(zero createdAt) = %v, want ErrExpired", err)
	}
}

func TestVerifyReplay(t *testing.T) {
	c := newClock()
	v := NewVerifier(&VerifierOptions{Now: c.Now})
	keyA, keyB := testKey(1), testKey(2)
	steps := []struct {
		name    string
		a       *Approval
		wantErr error
	}{
		{"first", Sign(keyA, "m", c.Now(), "42", "chat"), nil},
		{"same approval again", Sign(keyA, "m", c.Now(), "42", "chat"), ErrReplayed},
		{"same message signed later", Sign(keyA, "m", c.Now().Add(time.Second), "42", "chat"), ErrReplayed},
		{"same message other text", Sign(keyA, "other", c.Now(), "42", "chat"), ErrReplayed},
		{"same id other channel", Sign(keyA, "m", c.Now(), "42", "chat2"), nil},
		{"same id no channel", Sign(keyA, "m", c.Now(), "42", ""), nil},
		{"same id other key", Sign(keyB, "m", c.Now(), "42", "chat"), nil},
		{"other id", Sign(keyA, "m", c.Now(), "43", "chat"), nil},
		{"ids that concatenate alike", Sign(keyA, "m", c.Now(), "2", "chat4"), nil},
	}
	for _, s := range steps {
		if err := v.Verify(s.a); !errors.Is(err, s.wantErr) {
			t.Errorf("%s: Verify = %v, want %v", s.name, err, s.wantErr)
		}
	}
	if got := v.Len(); got != 6 {
		t.Errorf("Len = %d, want 6", got)
	}
}

func TestVerifyRejectedNotRecorded(t *testing.T) {
	c := newClock()
	v := NewVerifier(&VerifierOptions{Now: c.Now})
	good := Sign(testKey(1), "m", c.Now(), "1", "")
	bad := *good
	bad.Message = "tampered"
	if err := v.Verify(&bad); !errors.Is(err, ErrSignature) {
		t.Fatalf("Verify(tampered) = %v, want ErrSignature", err)
	}
	if err := v.Verify(good); err != nil {
		t.Errorf("Verify(good) after a forged copy = %v, want nil", err)
	}
}

func TestVerifyPrunes(t *testing.T) {
	c := newClock()
	v := NewVerifier(&VerifierOptions{Now: c.Now, MaxAge: time.Minute})
	start := c.Now()
	first := Sign(testKey(1), "m", start, "1", "")
	if err := v.Verify(first); err != nil {
		t.Fatal(err)
	}
	c.Add(30 * time.Second)
	if err := v.Verify(Sign(testKey(1), "m", c.Now(), "2", "")); err != nil {
		t.Fatal(err)
	}
	if err := v.Verify(first); !errors.Is(err, ErrReplayed) {
		t.Errorf("replay within MaxAge: Verify = %v, want ErrReplayed", err)
	}
	c.Add(31 * time.Second)
	if err := v.Verify(first); !errors.Is(err, ErrExpired) {
		t.Errorf("replay after MaxAge: Verify = %v, want ErrExpired", err)
	}
	if err := v.Verify(Sign(testKey(1), "m", c.Now(), "3", "")); err != nil {
		t.Fatal(err)
	}
	if got := v.Len(); got != 2 {
		t.Errorf("Len = %d, want 2 (the first approval pruned)", got)
	}
	// The clock goes back: the forgotten approval must still be refused.
	c.Set(start)
	if err := v.Verify(first); !errors.Is(err, ErrExpired) {
		t.Errorf("replay after the clock went back: Verify = %v, want ErrExpired", err)
	}
}

func TestVerifyCacheFull(t *testing.T) {
	c := newClock()
	v := NewVerifier(&VerifierOptions{Now: c.Now, MaxAge: time.Minute, MaxEntries: 3})
	key := testKey(1)
	for i := range 3 {
		if err := v.Verify(Sign(key, "m", c.Now().Add(time.Duration(i)*time.Second), fmt.Sprint(i), "")); err != nil {
			t.Fatal(err)
		}
	}
	next := Sign(key, "m", c.Now().Add(10*time.Second), "next", "")
	if err := v.Verify(next); !errors.Is(err, ErrCacheFull) {
		t.Fatalf("Verify with a full cache = %v, want ErrCacheFull", err)
	}
	// A replay is still reported as one when the cache is full.
	if err := v.Verify(Sign(key, "m", c.Now(), "0", "")); !errors.Is(err, ErrReplayed) {
		t.Errorf("replay with a full cache = %v, want ErrReplayed", err)
	}
	// Once the oldest expires, there is room again.
	c.Add(time.Minute + time.Millisecond)
	if err := v.Verify(next); err != nil {
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
			v := NewVerifier(&VerifierOptions{Now: c.Now, Trusted: tc.trusted})
			if err := v.Verify(Sign(tc.key, "m", c.Now(), "1", "")); !errors.Is(err, tc.wantErr) {
				t.Errorf("Verify = %v, want %v", err, tc.wantErr)
			}
		})
	}
}

func TestVerifyMalformed(t *testing.T) {
	c := newClock()
	v := NewVerifier(&VerifierOptions{Now: c.Now})
	good := Sign(testKey(1), "m", c.Now(), "1", "")
	tests := []struct {
		name   string
		change func(a *Approval)
	}{
		{"no message id", func(a *Approval) { a.MessageID = "" }},
		{"version", func(a *Approval) { a.Version = 2 }},
		{"pubkey", func(a *Approval) { a.Pubkey = "11" }},
		{"signature", func(a *Approval) { a.Signature = "abc" }},
	}
	for _, tc := range tests {
		a := *good
		tc.change(&a)
		if err := v.Verify(&a); !errors.Is(err, ErrMalformed) {
			t.Errorf("%s: Verify = %v, want ErrMalformed", tc.name, err)
		}
	}
	if err := v.Verify(nil); !errors.Is(err, ErrMalformed) {
		t.Errorf("Verify(nil) = %v, want ErrMalformed", err)
	}
	if err := v.Verify(good); err != nil {
		t.Errorf("Verify(good) = %v", err)
	}
}

func TestVerifyConcurrent(t *testing.T) {
	c := newClock()
	v := NewVerifier(&VerifierOptions{Now: c.Now})
	key := testKey(1)
	same := Sign(key, "m", c.Now(), "same", "")
	const workers = 32
	var (
		wg       sync.WaitGroup
		mu       sync.Mutex
		accepted int
		errs     []error
	)
	for i := range workers {
		wg.Go(func() {
			if err := v.Verify(Sign(key, "m", c.Now(), fmt.Sprint("own-", i), "")); err != nil {
				mu.Lock()
				errs = append(errs, err)
				mu.Unlock()
			}
			err := v.Verify(same)
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
	v := NewVerifier(&VerifierOptions{Now: c.Now, MaxEntries: b.N + 1})
	as := make([]*Approval, b.N)
	for i := range as {
		as[i] = Sign(key, "deploy the staging build", c.Now(), fmt.Sprint("msg-", i), "telegram:1")
	}
	b.ReportAllocs()
	b.ResetTimer()
	for i := range b.N {
		if err := v.Verify(as[i]); err != nil {
			b.Fatal(err)
		}
	}
}
