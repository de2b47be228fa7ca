// Package diff makes, parses and applies unified diffs: the diff an
// approval card shows for a change to files, and the patches a model sends
// to apply_patch (git's or diff -u's). Apply checks each hunk against the
// file and names the one that does not fit.
package diff

import (
	"fmt"
	"strings"
)

// Context is the number of unchanged lines Unified shows around a change.
const Context = 3

// Unified returns the unified diff from a to b, git-style: "--- a/<old>"
// and "+++ b/<new>" headers ("/dev/null" for an empty path: a created or
// deleted file), hunks with Context lines of context, and "\ No newline at
// end of file" after a last line without one. Equal inputs give "".
func Unified(oldPath, newPath, a, b string) string {
	al, bl := SplitLines(a), SplitLines(b)
	eds := edits(al, bl)
	hs := hunks(eds, al, bl)
	if len(hs) == 0 {
		return ""
	}
	var sb strings.Builder
	sb.WriteString("--- " + label("a/", oldPath) + "\n")
	sb.WriteString("+++ " + label("b/", newPath) + "\n")
	for i := range hs {
		hs[i].write(&sb)
	}
	return sb.String()
}

func label(prefix, p string) string {
	if p == "" {
		return DevNull
	}
	return prefix + p
}

// DevNull is the path of a side that does not exist: the old side of a
// created file, the new side of a deleted one.
const DevNull = "/dev/null"

// SplitLines splits s into lines, each keeping its "\n"; the last has none
// when s does not end with one.
func SplitLines(s string) []string {
	if s == "" {
		return nil
	}
	lines := make([]string, 0, strings.Count(s, "\n")+1)
	for s != "" {
		i := strings.IndexByte(s, '\n')
		if i < 0 {
			lines = append(lines, s)
			break
		}
		lines = append(lines, s[:i+1])
		s = s[i+1:]
	}
	return lines
}

// Line is one line of a hunk: Op is ' ' (context), '-' or '+'; Text keeps
// its "\n" unless it is a file's last line without one.
type Line struct {
	Op   byte
	Text string
}

// Hunk is one "@@ -OldStart,OldLines +NewStart,NewLines @@" part of a
// diff. Starts are 1-based; a side with no lines has the line before it
// as its start (0 at the top of the file).
type Hunk struct {
	OldStart, OldLines int
	NewStart, NewLines int
	Section            string // the text after the second "@@", if any
	Lines              []Line
}

// Header is the hunk's "@@ … @@" line, as errors name it.
func (h *Hunk) Header() string {
	s := fmt.Sprintf("@@ -%s +%s @@", rng(h.OldStart, h.OldLines), rng(h.NewStart, h.NewLines))
	if h.Section != "" {
		s += " " + h.Section
	}
	return s
}

func rng(start, n int) string {
	if n == 1 {
		return fmt.Sprint(start)
	}
	return fmt.Sprintf("%d,%d", start, n)
}

func (h *Hunk) write(sb *strings.Builder) {
	sb.WriteString(h.Header() + "\n")
	for _, l := range h.Lines {
		sb.WriteByte(l.Op)
		sb.WriteString(l.Text)
		if !strings.HasSuffix(l.Text, "\n") {
			sb.WriteString("\n\\ No newline at end of file\n")
		}
	}
}

// old and new are the lines the hunk expects and the lines it leaves.
func (h *Hunk) sides() (old, new []string) {
	for _, l := range h.Lines {
		if l.Op != '+' {
			old = append(old, l.Text)
		}
		if l.Op != '-' {
			new = append(new, l.Text)
		}
	}
	return old, new
}

// hunks groups the edit script into hunks with Context lines around each
// change, merging changes closer than 2*Context lines.
func hunks(eds []edit, a, b []string) []Hunk {
	var out []Hunk
	for i := 0; i < len(eds); {
		if eds[i].op == ' ' {
			i++
			continue
		}
		// eds[i] is the first change of a hunk; find its last change
		start := max(i-Context, 0)
		end := i
		for j := i; j < len(eds); j++ {
			if eds[j].op != ' ' {
				end = j
			} else if j-end > 2*Context {
				break
			}
		}
		stop := min(end+Context+1, len(eds))
		h := Hunk{OldStart: eds[start].ai + 1, NewStart: eds[start].bi + 1}
		for _, e := range eds[start:stop] {
			switch e.op {
			case ' ':
				h.Lines = append(h.Lines, Line{' ', a[e.ai]})
				h.OldLines++
				h.NewLines++
			case '-':
				h.Lines = append(h.Lines, Line{'-', a[e.ai]})
				h.OldLines++
			case '+':
				h.Lines = append(h.Lines, Line{'+', b[e.bi]})
				h.NewLines++
			}
		}
		if h.OldLines == 0 {
			h.OldStart--
		}
		if h.NewLines == 0 {
			h.NewStart--
		}
		out = append(out, h)
		i = stop
	}
	return out
}

// Count returns how many lines a diff from a to b adds and removes.
func Count(a, b string) (added, removed int) {
	for _, e := range edits(SplitLines(a), SplitLines(b)) {
		switch e.op {
		case '+':
			added++
		case '-':
			removed++
		}
	}
	return added, removed
}
