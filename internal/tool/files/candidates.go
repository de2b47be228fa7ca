package files

import (
	"errors"
	"fmt"
	"sort"
	"strconv"
	"strings"
)

// ErrNoMatch and ErrManyMatches are edit_file's errors when old does not
// say one place of the file; their messages show the model where to look.
var (
	ErrNoMatch     = errors.New("old does not occur")
	ErrManyMatches = errors.New("old occurs more than once")
)

// maxCandidates is how many places an edit error lists.
const maxCandidates = 10

// occurrences returns the byte offsets of old in text, not overlapping.
func occurrences(text, old string) []int {
	var at []int
	for i := 0; ; {
		j := strings.Index(text[i:], old)
		if j < 0 {
			return at
		}
		at = append(at, i+j)
		i += j + len(old)
	}
}

// lineNumbers maps byte offsets (ascending) to 1-based line numbers.
func lineNumbers(text string, at []int) []int {
	out := make([]int, len(at))
	line, from := 1, 0
	for i, off := range at {
		line += strings.Count(text[from:off], "\n")
		from = off
		out[i] = line
	}
	return out
}

func joinInts(xs []int) string {
	s := make([]string, len(xs))
	for i, x := range xs {
		s[i] = strconv.Itoa(x)
	}
	switch len(s) {
	case 0:
		return ""
	case 1:
		return s[0]
	}
	return strings.Join(s[:len(s)-1], ", ") + " and " + s[len(s)-1]
}

// manyMatches lists each place old occurs, by its first line.
func manyMatches(path, text string, at []int) error {
	lines := strings.Split(text, "\n")
	nums := lineNumbers(text, at)
	var sb strings.Builder
	fmt.Fprintf(&sb, "%d times in %s, at lines %s:\n", len(at), path, joinInts(nums))
	for i, n := range nums {
		if i == maxCandidates {
			fmt.Fprintf(&sb, "  … %d more\n", len(nums)-i)
			break
		}
		fmt.Fprintf(&sb, "%6d: %s\n", n, clip(lines[n-1]))
	}
	sb.WriteString("Put more of the lines around the one you mean in old to make it unique, or set replace_all to replace every one.")
	return fmt.Errorf("%w: %s", ErrManyMatches, sb.String())
}

// noMatch says where old nearly occurs: the same lines but for their
// whitespace, or else the lines most like old's first line.
func noMatch(path, text, old string) error {
	lines := strings.Split(text, "\n")
	var sb strings.Builder
	fmt.Fprintf(&sb, "in %s", path)
	if start, n, ok := matchTrimmed(lines, strings.Split(strings.TrimSuffix(old, "\n"), "\n")); ok {
		fmt.Fprintf(&sb, "; it matches lines %d–%d but for whitespace (indentation, tabs or trailing spaces). Those lines are:\n", start+1, start+n)
		for i := start; i < start+n && i < start+maxCandidates; i++ {
			fmt.Fprintf(&sb, "%6d: %s\n", i+1, clip(lines[i]))
		}
		sb.WriteString("Copy them exactly into old.")
		return fmt.Errorf("%w %s", ErrNoMatch, sb.String())
	}
	first := firstNonBlank(old)
	close := closest(lines, first, 5)
	if len(close) == 0 {
		sb.WriteString("; no line resembles its first line.\nRead the file with read_file and copy the text exactly.")
		return fmt.Errorf("%w %s", ErrNoMatch, sb.String())
	}
	fmt.Fprintf(&sb, ". The lines most like %q are:\n", clip(first))
	for _, i := range close {
		fmt.Fprintf(&sb, "%6d: %s\n", i+1, clip(lines[i]))
	}
	sb.WriteString("Read the file with read_file around them and copy the text exactly, with its indentation.")
	return fmt.Errorf("%w %s", ErrNoMatch, sb.String())
}

// matchTrimmed finds want in lines, comparing lines with their leading
// and trailing whitespace removed.
func matchTrimmed(lines, want []string) (start, n int, ok bool) {
	if len(want) == 0 || len(want) > len(lines) {
		return 0, 0, false
	}
	for s := 0; s+len(want) <= len(lines); s++ {
		ok = true
		for j, w := range want {
			if strings.TrimSpace(lines[s+j]) != strings.TrimSpace(w) {
				ok = false
				break
			}
		}
		if ok {
			return s, len(want), true
		}
	}
	return 0, 0, false
}

func firstNonBlank(s string) string {
	for l := range strings.SplitSeq(s, "\n") {
		if strings.TrimSpace(l) != "" {
			return l
		}
	}
	return s
}

// closest returns the indexes of the lines most like want (at most n, in
// file order), by the Dice coefficient of their character bigrams; lines
// less than half alike are left out.
func closest(lines []string, want string, n int) []int {
	wb := bigrams(strings.TrimSpace(want))
	type scored struct {
		i int
		s float64
	}
	var all []scored
	for i, l := range lines {
		if s := dice(wb, bigrams(strings.TrimSpace(l))); s >= 0.5 {
			all = append(all, scored{i, s})
		}
	}
	sort.SliceStable(all, func(a, b int) bool { return all[a].s > all[b].s })
	all = all[:min(n, len(all))]
	sort.Slice(all, func(a, b int) bool { return all[a].i < all[b].i })
	out := make([]int, len(all))
	for k, s := range all {
		out[k] = s.i
	}
	return out
}

func bigrams(s string) map[string]int {
	r := []rune(s)
	m := make(map[string]int, len(r))
	for i := 0; i+1 < len(r); i++ {
		m[string(r[i:i+2])]++
	}
	return m
}

func dice(a, b map[string]int) float64 {
	na, nb, common := 0, 0, 0
	for k, x := range a {
		na += x
		common += min(x, b[k])
	}
	for _, y := range b {
		nb += y
	}
	if na+nb == 0 {
		return 0
	}
	return 2 * float64(common) / float64(na+nb)
}

// clip shortens a line shown in an error.
func clip(l string) string {
	l = strings.TrimRight(l, "\r")
	if r := []rune(l); len(r) > 160 {
		return string(r[:160]) + "…"
	}
	return l
}
