package store_test

import (
	"fmt"
	"strings"
	"testing"
	"unicode"
	"unicode/utf8"

	"agentd/internal/store"
)

func TestTitleOf(t *testing.T) {
	for _, tc := range []struct{ in, want string }{
		{"", ""},
		{" \n\t\n", ""},
		{"hello", "hello"},
		{"\n\n  first line  \nsecond", "first line"},
		{"tab\tand\x1b[31mcolour\x07", "tab and[31mcolour"},
		{"Please summarize the quarterly report and list every action item we agreed on", "Please summarize the quarterly report and list every action…"},
		{strings.Repeat("a", 71), strings.Repeat("a", 60) + "…"},
		{"日本語のメッセージ", "日本語のメッセージ"},
	} {
		if got := store.TitleOf(tc.in); got != tc.want {
			t.Errorf("TitleOf(%q) = %q, want %q", tc.in, got, tc.want)
		}
	}
	if got := store.CleanTitle(" a\r\nb\u0085c\u0000"); got != "a b c" {
		t.Errorf("CleanTitle = %q, want %q", got, "a b c")
	}
}

// A title is one line of valid UTF-8 without control characters or
// doubled or surrounding space, of at most TitleLen characters and an
// ellipsis, that CleanTitle leaves as it is.
func FuzzTitleOf(f *testing.F) {
	for _, s := range []string{"", "hello", " a \n b", "\x1b[2J\x07bell", "\xff\xfe bad utf-8", strings.Repeat("word ", 30), "日本語"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		got := store.TitleOf(s)
		if !utf8.ValidString(got) {
			t.Fatalf("TitleOf(%q) = %q: not UTF-8", s, got)
		}
		if n := utf8.RuneCountInString(got); n > store.TitleLen+1 {
			t.Fatalf("TitleOf(%q) = %q: %d characters", s, got, n)
		}
		if strings.TrimSpace(got) != got || strings.Contains(got, "  ") {
			t.Fatalf("TitleOf(%q) = %q: space not folded", s, got)
		}
		for _, r := range got {
			if unicode.IsControl(r) {
				t.Fatalf("TitleOf(%q) = %q: control character %U", s, got, r)
			}
		}
		if store.CleanTitle(got) != got {
			t.Fatalf("TitleOf(%q) = %q: CleanTitle changes it", s, got)
		}
	})
}

func ExampleTitleOf() {
	fmt.Println(store.TitleOf("  Plan my trip to Lisbon\nin May, on a budget"))
	fmt.Println(store.TitleOf("Please summarize the quarterly report and list every action item we agreed on"))
	// Output:
	// Plan my trip to Lisbon
	// Please summarize the quarterly report and list every action…
}
