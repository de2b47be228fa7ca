package gateway_test

import (
	"crypto/rand"
	"encoding/base64"
	"encoding/hex"
	"errors"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"agentd/internal/gateway"
)

// Off loopback a token needs an estimated 128 bits: strings that look
// random by length and variety but are sequences, repeats, keyboard runs
// or words are refused, and the refusal says how to make a good one.
func TestCheckRemoteToken(t *testing.T) {
	random := func(n int) []byte {
		b := make([]byte, n)
		rand.Read(b)
		return b
	}
	for _, tc := range []struct {
		tok string
		ok  bool
	}{
		{"abcdefghijklmnopqrstuvwx", false}, // passes CheckToken
		{"ABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789abcdef", false},
		{"zyxwvutsrqponmlkjihgfedcba9876543210ZYXWVU", false},
		{"acegikmoqsuwy02468bdfhjlnprtvxz13579ACEGIK", false},
		{"qwertyuiopasdfghjklzxcvbnm1234567890QWERTY", false},
		{"1qaz2wsx3edc4rfv5tgb6yhn7ujm8ik9ol0p-=[];',./", false},
		{strings.Repeat("Xk9#mP2$qZ", 5), false},
		{"Xk9#mP2$", false},
		{strings.Repeat("0123456789abcdef", 4), false},
		{"Password123!Password123!Password123!", false},
		{"correct-horse-battery-staple-orange-tokens", false},
		{"letmein-Welcome-admin-secret-agentd-token-2024", false},
		{"Tr0ub4dor&3-Tr0ub4dor&3-Tr0ub4dor&3-Tr0ub4dor&3", false},
		{gateway.NewToken(), true},
		{base64.StdEncoding.EncodeToString(random(32)), true}, // openssl rand -base64 32
		{hex.EncodeToString(random(32)), true},                // openssl rand -hex 32
		{"7Hq2vRx9LmT4pZc8WnYb3KsJd6FgA5eQ", true},            // 32 characters typed from a generator
	} {
		err := gateway.CheckRemoteToken(tc.tok)
		if (err == nil) != tc.ok {
			t.Errorf("CheckRemoteToken(%q) = %v (%.0f bits), want ok %v", tc.tok, err, gateway.TokenBits(tc.tok), tc.ok)
		}
		if err != nil && (!errors.Is(err, gateway.ErrWeakToken) || !strings.Contains(err.Error(), "openssl rand -base64 32") ||
			gateway.CheckToken(tc.tok) == nil && !strings.Contains(err.Error(), "needs 128")) {
			t.Errorf("CheckRemoteToken(%q): the refusal does not name the rule and a remedy: %v", tc.tok, err)
		}
	}
	for range 200 {
		if tok := gateway.NewToken(); gateway.CheckRemoteToken(tok) != nil {
			t.Fatalf("a generated token is refused: %q", tok)
		}
	}
}

// FuzzTokenBits: the estimate is never negative, never more than the
// string's length at the richest alphabet, and does not fall when
// characters are appended.
func FuzzTokenBits(f *testing.F) {
	for _, s := range []string{"", "a", "abcabcabc", "Password", "qwerty", gateway.NewToken()} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		if len(s) > 512 {
			return
		}
		bits := gateway.TokenBits(s)
		if bits < 0 || bits > float64(len(s))*math.Log2(95)+1e-9 || math.IsNaN(bits) {
			t.Fatalf("TokenBits(%q) = %v", s, bits)
		}
	})
}

// Tokens opened for an address other machines reach hold the token file to
// the same rule, whenever it changes; a weak AGENTD_TOKEN is refused.
func TestTokensOffLoopback(t *testing.T) {
	dir := t.TempDir()
	weak := "abcdefghijklmnopqrstuvwx"
	if _, err := gateway.OpenTokens(dir, &gateway.TokenOptions{Fixed: weak}); err != nil {
		t.Errorf("a weak-looking token on loopback: %v", err)
	}
	if _, err := gateway.OpenTokens(dir, &gateway.TokenOptions{Fixed: weak, OffLoopback: true}); !errors.Is(err, gateway.ErrWeakToken) || !strings.Contains(err.Error(), gateway.TokenEnv) {
		t.Errorf("a weak AGENTD_TOKEN off loopback: %v", err)
	}
	tk, err := gateway.OpenTokens(dir, &gateway.TokenOptions{Create: true, OffLoopback: true})
	if err != nil {
		t.Fatal(err)
	}
	if err := gateway.CheckBind("0.0.0.0:7420", tk); err != nil {
		t.Errorf("a generated token on 0.0.0.0: %v", err)
	}
	if err := os.WriteFile(filepath.Join(dir, gateway.TokenFile), []byte(weak+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := tk.Token(); !errors.Is(err, gateway.ErrWeakToken) {
		t.Errorf("token file changed to a weak token: %v", err)
	}
	if _, err := gateway.OpenTokens(dir, &gateway.TokenOptions{OffLoopback: true}); !errors.Is(err, gateway.ErrWeakToken) {
		t.Errorf("a weak token file off loopback: %v", err)
	}
	loop, err := gateway.OpenTokens(dir, nil)
	if err != nil {
		t.Fatal(err)
	}
	if err := gateway.CheckBind("127.0.0.1:7420", loop); err != nil {
		t.Errorf("loopback: %v", err)
	}
	if err := gateway.CheckBind("0.0.0.0:7420", loop); !errors.Is(err, gateway.ErrWeakToken) {
		t.Errorf("tokens for loopback served on 0.0.0.0: %v", err)
	}
}
