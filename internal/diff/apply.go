package diff

import (
	"errors"
	"fmt"
	"strings"
)

// ErrConflict is returned by Apply when a hunk's lines are not in the
// file; the error names the file and the hunk's header.
var ErrConflict = errors.New("hunk does not apply")

// Apply applies f's hunks to content and returns the new content. Each
// hunk's old lines (context and removed) must be in the file exactly;
// where they are not at the line the header says, the nearest place
// (after the previous hunk) is taken, as patch does — an offset, never a
// fuzz on content. A deletion must remove the whole content.
func Apply(content string, f *File) (string, error) {
	lines := SplitLines(content)
	var out []string
	pos, offset := 0, 0
	for i := range f.Hunks {
		h := &f.Hunks[i]
		old, new := h.sides()
		want := h.OldStart - 1
		if h.OldLines == 0 {
			want = h.OldStart // an insertion after line OldStart
		}
		at := find(lines, old, want+offset, pos)
		if at < 0 {
			return "", conflict(f, h, lines, old, want+offset)
		}
		out = append(out, lines[pos:at]...)
		out = append(out, new...)
		pos = at + len(old)
		offset = at - want
	}
	out = append(out, lines[pos:]...)
	res := strings.Join(out, "")
	if f.NewPath == "" && res != "" {
		return "", fmt.Errorf("%w: the patch deletes %s but leaves %d lines of it", ErrConflict, f.OldPath, len(SplitLines(res)))
	}
	return res, nil
}

// find returns where old occurs in lines at or after from, nearest to
// want, or -1.
func find(lines, old []string, want, from int) int {
	last := len(lines) - len(old)
	want = min(max(want, from), max(last, from))
	for d := 0; want-d >= from || want+d <= last; d++ {
		if at := want - d; at >= from && at <= last && match(lines[at:], old) {
			return at
		}
		if at := want + d; d > 0 && at >= from && at <= last && match(lines[at:], old) {
			return at
		}
	}
	return -1
}

func match(lines, old []string) bool {
	for i, l := range old {
		if lines[i] != l {
			return false
		}
	}
	return true
}

// conflict says which line of the hunk differs from the file at the place
// it was meant for, so the author can fix the hunk.
func conflict(f *File, h *Hunk, lines, old []string, at int) error {
	msg := fmt.Sprintf("%s of %s: its lines are not in the file", h.Header(), f.Path())
	for i, l := range old {
		n := at + i
		if n < 0 {
			continue
		}
		if n >= len(lines) {
			msg += fmt.Sprintf(" (the file has %d lines; the hunk expects %q at line %d)", len(lines), trim(l), n+1)
			break
		}
		if lines[n] != l {
			msg += fmt.Sprintf(" (line %d reads %q, the hunk expects %q)", n+1, trim(lines[n]), trim(l))
			break
		}
	}
	return fmt.Errorf("%w: %s", ErrConflict, msg)
}

func trim(l string) string {
	l = strings.TrimSuffix(l, "\n")
	if len(l) > 120 {
		l = l[:120] + "…"
	}
	return l
}
