package diff

import (
	"errors"
	"fmt"
	"strconv"
	"strings"
)

// ErrMalformed is returned by Parse for text that is not a unified diff it
// can apply; the error says the patch line and what was expected.
var ErrMalformed = errors.New("malformed patch")

// File is the change a diff makes to one file. OldPath is "" for a file it
// creates, NewPath "" for a file it deletes; git's "a/" and "b/" prefixes
// are removed.
type File struct {
	OldPath, NewPath string
	Hunks            []Hunk
}

// Path is the file's path: the new one, or the old one of a deleted file.
func (f *File) Path() string {
	if f.NewPath != "" {
		return f.NewPath
	}
	return f.OldPath
}

// Parse reads a unified diff of one or more files: git diff's output
// (with its "diff --git", "index", "new file mode" and "deleted file mode"
// lines) or diff -u's (with timestamps after the names). Text before a
// file's header (a commit message) is skipped. Binary patches, renames and
// copies are refused.
func Parse(patch string) ([]*File, error) {
	p := parser{lines: SplitLines(patch)}
	if err := p.parse(); err != nil {
		return nil, err
	}
	if len(p.files) == 0 {
		return nil, fmt.Errorf("%w: no file headers (--- a/path, +++ b/path) found", ErrMalformed)
	}
	return p.files, nil
}

type parser struct {
	lines []string
	i     int
	files []*File
	cur   *File
	git   bool      // cur began with "diff --git": its header lines belong to it
	names [2]string // the names of the "diff --git" line
	heads bool      // cur has had its ---/+++ lines
}

func (p *parser) errf(format string, a ...any) error {
	return fmt.Errorf("%w: line %d: %s", ErrMalformed, p.i+1, fmt.Sprintf(format, a...))
}

func (p *parser) parse() error {
	for p.i < len(p.lines) {
		l := strings.TrimRight(p.lines[p.i], "\r\n")
		switch {
		case strings.HasPrefix(l, "diff --git "):
			old, new, ok := gitNames(strings.TrimPrefix(l, "diff --git "))
			if !ok {
				return p.errf("cannot read the names in %q", l)
			}
			p.start(&File{OldPath: old, NewPath: new}, true)
			p.names = [2]string{old, new}
		case p.git && !p.heads && strings.HasPrefix(l, "new file mode"):
			p.cur.OldPath = ""
		case p.git && !p.heads && strings.HasPrefix(l, "deleted file mode"):
			p.cur.NewPath = ""
		case p.git && !p.heads && (strings.HasPrefix(l, "rename from") || strings.HasPrefix(l, "copy from")):
			return p.errf("renames and copies are not supported; delete the old file and create the new one")
		case strings.HasPrefix(l, "GIT binary patch"), strings.HasPrefix(l, "Binary files "):
			return p.errf("binary patches are not supported")
		case strings.HasPrefix(l, "--- ") && p.i+1 < len(p.lines) && strings.HasPrefix(p.lines[p.i+1], "+++ "):
			if err := p.headers(l, strings.TrimRight(p.lines[p.i+1], "\r\n")); err != nil {
				return err
			}
			p.i++
		case strings.HasPrefix(l, "@@ "):
			if p.cur == nil || (!p.heads && !p.git) {
				return p.errf("a hunk before its file's --- and +++ lines")
			}
			if err := p.hunk(l); err != nil {
				return err
			}
			continue
		}
		p.i++
	}
	return nil
}

func (p *parser) start(f *File, git bool) {
	p.files = append(p.files, f)
	p.cur, p.git, p.heads = f, git, false
}

// headers reads a "--- old" / "+++ new" pair, starting a file unless it
// belongs to the "diff --git" just read.
func (p *parser) headers(oldLine, newLine string) error {
	old, err := headerPath(strings.TrimPrefix(oldLine, "--- "))
	if err != nil {
		return p.errf("%v", err)
	}
	new, err := headerPath(strings.TrimPrefix(newLine, "+++ "))
	if err != nil {
		return p.errf("%v", err)
	}
	if old == "" && new == "" {
		return p.errf("both sides are /dev/null")
	}
	if (old == "" || strings.HasPrefix(old, "a/")) && (new == "" || strings.HasPrefix(new, "b/")) {
		old, new = strings.TrimPrefix(old, "a/"), strings.TrimPrefix(new, "b/")
	}
	sameFile := (old == "" || old == p.names[0]) && (new == "" || new == p.names[1])
	if !p.git || p.heads || p.cur == nil || !sameFile {
		p.start(&File{}, false)
	}
	p.cur.OldPath, p.cur.NewPath = old, new
	p.heads = true
	return nil
}

// headerPath is the path of a ---/+++ line: a timestamp after a tab is
// dropped, a quoted name unquoted, /dev/null is "".
func headerPath(s string) (string, error) {
	if i := strings.IndexByte(s, '\t'); i >= 0 {
		s = s[:i]
	}
	s = strings.TrimRight(s, " ")
	if strings.HasPrefix(s, `"`) {
		u, err := strconv.Unquote(s)
		if err != nil {
			return "", fmt.Errorf("bad quoted name %s", s)
		}
		s = u
	}
	if s == DevNull {
		return "", nil
	}
	if s == "" {
		return "", errors.New("a header without a name")
	}
	return s, nil
}

// gitNames splits "a/x b/x" (names may be quoted); with spaces in the
// names, the two halves are taken equal.
func gitNames(s string) (old, new string, ok bool) {
	if strings.HasPrefix(s, `"`) {
		if q, err := strconv.QuotedPrefix(s); err == nil {
			old, _ = strconv.Unquote(q)
			new, err = headerPath(strings.TrimSpace(s[len(q):]))
			return strings.TrimPrefix(old, "a/"), strings.TrimPrefix(new, "b/"), err == nil
		}
		return "", "", false
	}
	if n := len(s); n%2 == 1 && s[n/2] == ' ' && strings.HasPrefix(s, "a/") && s[n/2+1:n/2+3] == "b/" && s[2:n/2] == s[n/2+3:] {
		return s[2 : n/2], s[n/2+3:], true
	}
	i := strings.Index(s, " b/")
	if !strings.HasPrefix(s, "a/") || i < 0 {
		return "", "", false
	}
	return s[2:i], s[i+3:], true
}

// hunk reads a hunk by the counts of its header.
func (p *parser) hunk(head string) error {
	h, err := parseHeader(head)
	if err != nil {
		return p.errf("%v", err)
	}
	p.i++
	oldLeft, newLeft := h.OldLines, h.NewLines
	for oldLeft > 0 || newLeft > 0 {
		if p.i >= len(p.lines) {
			return p.errf("hunk %s ends early: its header counts %d more old and %d more new lines", h.Header(), oldLeft, newLeft)
		}
		l := p.lines[p.i]
		op, text := byte(' '), "\n" // an empty line: context whose space was trimmed
		if l != "\n" && l != "\r\n" {
			op, text = l[0], l[1:]
		}
		switch op {
		case ' ':
			oldLeft--
			newLeft--
		case '-':
			oldLeft--
		case '+':
			newLeft--
		case '\\':
			p.noNewline(&h)
			p.i++
			continue
		default:
			return p.errf("hunk %s: %q is not a hunk line (' ', '-' or '+'); its header counts %d more old and %d more new lines", h.Header(), strings.TrimRight(l, "\n"), oldLeft, newLeft)
		}
		if oldLeft < 0 || newLeft < 0 {
			return p.errf("hunk %s has more lines than its header counts", h.Header())
		}
		h.Lines = append(h.Lines, Line{op, text})
		p.i++
	}
	if p.i < len(p.lines) && strings.HasPrefix(p.lines[p.i], `\`) {
		p.noNewline(&h)
		p.i++
	}
	p.cur.Hunks = append(p.cur.Hunks, h)
	return nil
}

// noNewline applies a "\ No newline at end of file" to the line before.
func (p *parser) noNewline(h *Hunk) {
	if n := len(h.Lines); n > 0 {
		h.Lines[n-1].Text = strings.TrimSuffix(h.Lines[n-1].Text, "\n")
	}
}

// parseHeader reads "@@ -l[,s] +l[,s] @@[ section]".
func parseHeader(l string) (Hunk, error) {
	var h Hunk
	rest, ok := strings.CutPrefix(strings.TrimRight(l, "\r\n"), "@@ -")
	old, rest, ok2 := strings.Cut(rest, " +")
	new, section, ok3 := strings.Cut(rest, " @@")
	if !ok || !ok2 || !ok3 {
		return h, fmt.Errorf("bad hunk header %q (want @@ -start,count +start,count @@)", l)
	}
	var err1, err2 error
	h.OldStart, h.OldLines, err1 = parseRange(old)
	h.NewStart, h.NewLines, err2 = parseRange(new)
	if err := errors.Join(err1, err2); err != nil {
		return h, fmt.Errorf("bad hunk header %q: %v", l, err)
	}
	h.Section = strings.TrimSpace(section)
	return h, nil
}

func parseRange(s string) (start, n int, err error) {
	a, b, has := strings.Cut(s, ",")
	n = 1
	if start, err = strconv.Atoi(a); err == nil && has {
		n, err = strconv.Atoi(b)
	}
	if err == nil && (start < 0 || n < 0) {
		err = errors.New("negative")
	}
	return start, n, err
}
