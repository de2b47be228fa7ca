package embed

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"agentd/internal/vector"
)

var update = flag.Bool("update", false, "rewrite the golden files in testdata")

func embedAll(t testing.TB, e Embedder, texts ...string) [][]float32 {
	t.Helper()
	v, err := e.Embed(context.Background(), texts)
	if err != nil {
		t.Fatal(err)
	}
	if len(v) != len(texts) {
		t.Fatalf("%d vectors for %d texts", len(v), len(texts))
	}
	return v
}

func norm(v []float32) float64 {
	var s float64
	for _, x := range v {
		s += float64(x) * float64(x)
	}
	return math.Sqrt(s)
}

func TestHashedNameDim(t *testing.T) {
	tests := []struct {
		dim      int
		wantDim  int
		wantName string
	}{
		{0, 384, "hashed-ngram-384"},
		{-5, 384, "hashed-ngram-384"},
		{64, 64, "hashed-ngram-64"},
	}
	for _, tt := range tests {
		h := NewHashed(tt.dim)
		if h.Dim() != tt.wantDim || h.Name() != tt.wantName {
			t.Errorf("NewHashed(%d): Dim %d Name %q, want %d %q", tt.dim, h.Dim(), h.Name(), tt.wantDim, tt.wantName)
		}
	}
}

// TestHashedGolden pins the exact vectors, so that a change to tokenising,
// hashing or weighting, which would make stored vectors incomparable with
// new ones, shows up as a failing test.
func TestHashedGolden(t *testing.T) {
	texts := []string{
		"The user prefers dark mode.",
		"Deployment failed: missing DATABASE_URL",
		"Grüße aus München — 東京は日本の首都です",
		"a",
	}
	got := embedAll(t, NewHashed(32), texts...)
	path := filepath.Join("testdata", "hashed32.golden.json")
	if *update {
		b, err := json.MarshalIndent(got, "", " ")
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, append(b, '\n'), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var want [][]float32
	if err := json.Unmarshal(b, &want); err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("vectors differ from %s (-want +got):\n%s", path, diff)
	}
}

func TestHashedDeterministic(t *testing.T) {
	text := "Remember: the staging database lives on db-2, port 5433."
	a := embedAll(t, NewHashed(0), text, text)
	b := embedAll(t, NewHashed(0), text)
	if diff := cmp.Diff(a[0], a[1]); diff != "" {
		t.Errorf("same text, same call differs:\n%s", diff)
	}
	if diff := cmp.Diff(a[0], b[0]); diff != "" {
		t.Errorf("same text, another embedder differs:\n%s", diff)
	}
	if n := norm(a[0]); math.Abs(n-1) > 1e-6 {
		t.Errorf("norm = %v, want 1", n)
	}
}

func TestHashedSimilarity(t *testing.T) {
	tests := []struct {
		name              string
		anchor, near, far string
	}{
		{"shared words", "the user prefers dark mode in the editor", "user likes dark mode for the editor", "quarterly revenue grew by ten percent"},
		{"typo and inflection", "deployment failed because of a missing env var", "deplyoment failure: missing environment variable", "the user prefers dark mode"},
		{"word order", "alice manages the billing service", "the billing service is managed by alice", "bob likes hiking in the alps"},
		{"cyrillic", "встреча с клиентом перенесена на пятницу", "встречу с клиентом перенесли на пятницу", "the meeting moved to friday"},
		{"japanese", "東京は日本の首都です", "日本の首都は東京", "the capital of france is paris"},
	}
	h := NewHashed(0)
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			v := embedAll(t, h, tt.anchor, tt.near, tt.far)
			near, far := vector.Dot(v[0], v[1]), vector.Dot(v[0], v[2])
			if near <= far {
				t.Errorf("near %.3f <= far %.3f", near, far)
			}
			if near < 0.2 {
				t.Errorf("near = %.3f, want a clear match (>= 0.2)", near)
			}
		})
	}
}

func TestHashedUnicodeFolding(t *testing.T) {
	tests := []struct{ a, b string }{
		{"Привет мир", "привет, МИР!"},
		{"Café CRÈME", "café crème"},
		{"ÆSIR Ω", "æsir ω"},
		{"hello\tworld\n", "  hello   world  "},
	}
	h := NewHashed(0)
	for _, tt := range tests {
		v := embedAll(t, h, tt.a, tt.b)
		if diff := cmp.Diff(v[0], v[1]); diff != "" {
			t.Errorf("%q and %q differ:\n%s", tt.a, tt.b, diff)
		}
	}
}

func TestHashedEmpty(t *testing.T) {
	h := NewHashed(16)
	for _, text := range []string{"", "   ", "?!… —", "\x00\xff"} {
		v := embedAll(t, h, text, "something")
		if diff := cmp.Diff(make([]float32, 16), v[0]); diff != "" {
			t.Errorf("%q: want a zero vector:\n%s", text, diff)
		}
		if d := vector.Dot(v[0], v[1]); d != 0 {
			t.Errorf("%q: dot with a text = %v, want 0", text, d)
		}
	}
	if v := embedAll(t, h); len(v) != 0 {
		t.Errorf("no texts: %d vectors", len(v))
	}
}

func TestHashedCancelled(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := NewHashed(0).Embed(ctx, []string{"x"}); !errors.Is(err, context.Canceled) {
		t.Errorf("err = %v, want context.Canceled", err)
	}
}

func FuzzHashed(f *testing.F) {
	f.Add("The user prefers dark mode.")
	f.Add("東京は日本の首都です")
	f.Add("a\u0301\u0301 \xff\xfe x")
	f.Add("")
	h := NewHashed(24)
	f.Fuzz(func(t *testing.T, s string) {
		v := embedAll(t, h, s)[0]
		if len(v) != 24 {
			t.Fatalf("len = %d", len(v))
		}
		if n := norm(v); n != 0 && math.Abs(n-1) > 1e-5 {
			t.Fatalf("norm = %v", n)
		}
	})
}

func BenchmarkHashed200(b *testing.B) {
	text := strings.Repeat("Alice said the staging deploy broke after the migration; ", 4)[:200]
	h := NewHashed(0)
	ctx := context.Background()
	texts := []string{text}
	b.ReportAllocs()
	b.SetBytes(int64(len(text)))
	for b.Loop() {
		if _, err := h.Embed(ctx, texts); err != nil {
			b.Fatal(err)
		}
	}
}
