package store_test

import (
	"errors"
	"strings"
	"testing"
	"time"
	"unicode/utf8"

	"agentd/internal/store"
)

// Which status a run may move to from which: forward only.
func TestRunTransition(t *testing.T) {
	for _, from := range store.RunStatuses() {
		for _, to := range store.RunStatuses() {
			want := from == store.RunQueued || (from == store.RunRunning && to != store.RunRunning)
			err := store.RunTransition(from, to)
			if (err == nil) != want || (err != nil && !errors.Is(err, store.ErrConflict)) {
				t.Errorf("RunTransition(%s, %s) = %v; allowed: %v", from, to, err, want)
			}
		}
	}
}

// Run ids sort as their runs were scheduled, whatever the time zone
// given, a tag after the time.
func TestRunID(t *testing.T) {
	berlin := time.FixedZone("CET", 3600)
	for _, c := range []struct {
		at   time.Time
		tag  string
		want string
	}{
		{time.Date(2026, 12, 1, 8, 0, 0, 0, time.UTC), "", "20261201T080000.000Z"},
		{time.Date(2026, 12, 1, 9, 0, 0, 123_456_789, berlin), "ab12", "20261201T080000.123Z-ab12"},
	} {
		if got := store.RunID(c.at, c.tag); got != c.want {
			t.Errorf("RunID(%v, %q) = %q, want %q", c.at, c.tag, got, c.want)
		}
	}
	if a, b := store.RunID(time.Date(2026, 9, 1, 0, 0, 0, 0, time.UTC), "ff"), store.RunID(time.Date(2026, 10, 1, 0, 0, 0, 0, time.UTC), ""); a >= b {
		t.Errorf("%q sorts after %q", a, b)
	}
}

// FuzzRunText: what a run keeps of a text is valid UTF-8 without NUL, at
// most its limit, the text itself when it fits and is clean, and starts
// as the text does when it was cut.
func FuzzRunText(f *testing.F) {
	f.Add("Nothing urgent today.", 64)
	f.Add("éééééé", 40)
	f.Add("a\x00b\xffc", 40)
	f.Add(strings.Repeat("日本", 50), 48)
	f.Fuzz(func(t *testing.T, s string, max int) {
		if max < 40 || max > 1<<16 {
			return // the limits are kilobytes; the cut's mark alone is about 30 bytes
		}
		got := store.RunText(s, max)
		if !utf8.ValidString(got) || strings.ContainsRune(got, 0) || len(got) > max {
			t.Fatalf("RunText(%q, %d) = %q: %d bytes, valid %v", s, max, got, len(got), utf8.ValidString(got))
		}
		clean := strings.ReplaceAll(strings.ToValidUTF8(s, "\uFFFD"), "\x00", "\uFFFD")
		if len(clean) <= max && got != clean {
			t.Fatalf("RunText(%q, %d) = %q, want %q", s, max, got, clean)
		}
		if len(clean) > max {
			head, _, ok := strings.Cut(got, "\n[… cut: ")
			if !ok || !strings.HasPrefix(clean, head) {
				t.Fatalf("RunText(%q, %d) = %q: not a marked cut of the text", s, max, got)
			}
		}
	})
}
