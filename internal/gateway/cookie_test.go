package gateway

import (
	"strconv"
	"strings"
	"testing"
	"time"
)

// Only a cookie made with the token parses, whatever else arrives.
func FuzzParseCookie(f *testing.F) {
	now := time.Unix(1_800_000_000, 0)
	// A fixed nonce: fuzzing workers each run this setup.
	nonce := "00112233445566778899aabbccddeeff"
	good := "1800000000." + nonce + "." + cookieMAC("the-token-0123456789abcdefghij", "1800000000", nonce)
	if _, _, ok := parseCookie(newCookie("the-token-0123456789abcdefghij", now), "the-token-0123456789abcdefghij", now); !ok {
		f.Fatal("a new cookie does not parse")
	}
	for _, s := range []string{good, "", "..", "1.2.3", good[:len(good)-1], strings.ToUpper(good), "1800000000." + strings.Repeat("0", 32) + "." + strings.Repeat("0", 64)} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, v string) {
		_, _, ok := parseCookie(v, "the-token-0123456789abcdefghij", now)
		if ok && v != good {
			t.Fatalf("accepted %q", v)
		}
		if _, _, ok := parseCookie(v, "another-token-0123456789abcdef", now); ok {
			t.Fatalf("accepted %q with another token", v)
		}
	})
}

func TestRevocationsBounded(t *testing.T) {
	var r revocations
	now := time.Now()
	for i := range maxRevoked {
		r.revoke("n"+strconv.Itoa(i), now.Add(time.Hour), now)
	}
	if r.revoke("one-more", now.Add(time.Hour), now) {
		t.Error("a full set took one more while nothing had expired")
	}
	if !r.revoke("one-more", now.Add(3*time.Hour), now.Add(2*time.Hour)) {
		t.Error("expired entries were not pruned")
	}
	if !r.revoked("one-more") {
		t.Error("not recorded")
	}
}
