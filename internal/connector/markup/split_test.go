package markup

import (
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"agentd/internal/txtar"

	"github.com/google/go-cmp/cmp"
)

// TestSplit cuts each testdata/split archive's in.md at the limits its
// comment gives ("telegram 200" a line) and compares the parts with the
// files "telegram 200 #1", "#2", …; every part is checked for its limit
// and the parts' plain text for the whole's.
func TestSplit(t *testing.T) {
	files, _ := filepath.Glob("testdata/split/*.txtar")
	if len(files) == 0 {
		t.Fatal("no testdata/split archives")
	}
	for _, file := range files {
		t.Run(filepath.Base(file), func(t *testing.T) {
			a, err := txtar.ParseFile(file)
			if err != nil {
				t.Fatal(err)
			}
			in, _ := a.Get("in.md")
			for _, line := range strings.Split(strings.TrimSpace(a.Comment), "\n") {
				f := strings.Fields(line)
				if len(f) != 2 {
					continue
				}
				d := Dialect(f[0])
				max, err := strconv.Atoi(f[1])
				if err != nil {
					t.Fatalf("comment line %q: %v", line, err)
				}
				u := unitOf(d)
				parts := Split(d, in, max, u)
				checkParts(t, d, in, max, u, parts)
				var got []string
				for i, p := range parts {
					name := fmt.Sprintf("%s %d #%d", d, max, i+1)
					got = append(got, p+"\n")
					if *update {
						a.Set(name, p+"\n")
					}
				}
				var want []string
				for i := 1; ; i++ {
					w, ok := a.Get(fmt.Sprintf("%s %d #%d", d, max, i))
					if !ok {
						break
					}
					want = append(want, w)
				}
				if diff := cmp.Diff(want, got); diff != "" && !*update {
					t.Errorf("%s %d (-want +got):\n%s", d, max, diff)
				}
			}
			if *update {
				if err := os.WriteFile(file, a.Format(), 0o644); err != nil {
					t.Fatal(err)
				}
			}
		})
	}
}

func unitOf(d Dialect) Unit {
	if d == Telegram {
		return UTF16
	}
	return Runes
}

// checkParts checks what Split promises: each part within max, rendered in
// d and in Plain (the fallback when a platform refuses markup), none empty,
// Telegram's accepted, and the parts' plain texts joined the whole's (white
// space aside).
func checkParts(t *testing.T, d Dialect, md string, max int, u Unit, parts []string) {
	t.Helper()
	var plain strings.Builder
	for i, p := range parts {
		if strings.TrimSpace(p) == "" {
			t.Errorf("part %d of %d is empty", i+1, len(parts))
		}
		if n := Len(d, p, u); n > max {
			t.Errorf("part %d: length %d over %d:\n%s", i+1, n, max, p)
		}
		if n := Len(Plain, p, u); n > max {
			t.Errorf("part %d: plain length %d over %d:\n%s", i+1, n, max, p)
		}
		if d == Telegram {
			r := Render(d, p)
			text, err := checkMarkdownV2(r)
			if err != nil {
				t.Errorf("part %d: %v\n%s", i+1, err, r)
			}
			if n := count(text, u); n > max {
				t.Errorf("part %d: Telegram counts %d, over %d", i+1, n, max)
			}
		}
		plain.WriteString(Render(Plain, p))
	}
	if got, want := squeeze(plain.String()), squeeze(Render(Plain, md)); got != want {
		t.Errorf("the parts' plain text is not the whole's:\n got: %q\nwant: %q", got, want)
	}
}

func TestSplitShort(t *testing.T) {
	if got := Split(Telegram, "", 10, UTF16); got != nil {
		t.Errorf("Split of nothing = %q", got)
	}
	if got := Split(Telegram, "hello *there*", 4096, UTF16); !cmp.Equal(got, []string{"hello *there*"}) {
		t.Errorf("Split of a short reply = %q", got)
	}
	// Telegram counts the text after parsing: escapes and markers are
	// free, so this fits in 10 although its render is longer.
	if got := Split(Telegram, "**a.b.c.d.e**", 10, UTF16); len(got) != 1 {
		t.Errorf("Split = %q, want one part", got)
	}
	// UTF-16: an emoji is two units.
	if got := Split(Telegram, strings.Repeat("😀", 10), 10, UTF16); len(got) != 2 {
		t.Errorf("Split of 10 emoji at 10 units = %q, want two parts", got)
	}
}

func FuzzSplit(f *testing.F) {
	seed(f)
	f.Fuzz(func(t *testing.T, md string) {
		// A limit from the input's own length keeps every part count
		// reachable; 64 is more than one rune, a fence and a nested list's
		// indent.
		max := 64 + len(md)%200
		for _, d := range dialects {
			checkParts(t, d, md, max, unitOf(d), Split(d, md, max, unitOf(d)))
		}
	})
}
