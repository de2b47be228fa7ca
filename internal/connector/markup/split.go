package markup

import (
	"strings"
	"unicode"
	"unicode/utf8"
)

// Split cuts md into parts whose renders in d are each at most max in unit
// u (measured by Len, so for Telegram the text after its entities are
// parsed), on paragraph, then line, then space, then rune boundaries. Each
// part is Markdown, to render with Render, or with Render(Plain, …) when
// the platform refuses the markup: that render is within max too.
//
// A cut inside a code block closes it in the part and opens it again, with
// its language, in the next; a table is cut as the code block it renders
// as. A cut is taken only where the parts' plain texts, joined, are the
// whole's (up to white space): not inside an escape, a link or an entity
// that would then show its markers. When no such cut fits (one entity,
// link or code span longer than max), the blocks up to the next blank line
// are cut as plain text: their markup is lost, none of their text. A part
// is over max only when max is less than one rune and a code block's fence.
// max ≤ 0 is no limit.
func Split(d Dialect, md string, max int, u Unit) []string {
	md = normalize(md)
	var parts []string
	rest := strings.TrimLeft(md, "\n")
	whole := squeeze(Render(Plain, rest))
	for strings.TrimSpace(rest) != "" {
		if max <= 0 || size(d, rest, u) <= max {
			return append(parts, strings.TrimRight(rest, " \t\n"))
		}
		var part string
		part, rest, whole = cut(d, rest, whole, max, u, true)
		parts = append(parts, part)
	}
	return parts
}

// size is a part's length as Split keeps it under max: its render's in d
// and its plain render's, which is what a platform gets when it refuses
// the markup (a Telegram link's URL is not counted, but plain writes it).
func size(d Dialect, md string, u Unit) int {
	n := Len(d, md, u)
	if d != Plain {
		n = max(n, Len(Plain, md, u))
	}
	return n
}

// normalize writes md with CRLF as LF, invalid UTF-8 replaced, and each
// table as the code block it renders as, so a table cut in two is a code
// block closed and opened again.
func normalize(md string) string {
	md = strings.ReplaceAll(strings.ToValidUTF8(md, "\uFFFD"), "\r\n", "\n")
	if !strings.Contains(md, "|") {
		return md
	}
	lines := strings.Split(md, "\n")
	var b strings.Builder
	var fenced *fence
	for i := 0; i < len(lines); i++ {
		l := lines[i]
		switch {
		case fenced != nil:
			if fenced.closes(l) {
				fenced = nil
			}
		case isFenceOpen(l):
			f, _ := fenceOpen(l)
			fenced = &f
		case tableAt(lines, i):
			rows := [][]string{cells(l)}
			for i += 2; i < len(lines) && strings.Contains(lines[i], "|") && !isBlank(lines[i]) && !blockStart(lines, i); i++ {
				rows = append(rows, cells(lines[i]))
			}
			i--
			body := tableText(rows)
			f := strings.Repeat("`", max(3, longestRun(body, '`')+1))
			b.WriteString(f + "\n" + body + "\n" + f + "\n")
			continue
		}
		b.WriteString(l)
		if i < len(lines)-1 {
			b.WriteByte('\n')
		}
	}
	return b.String()
}

func isFenceOpen(l string) bool {
	_, ok := fenceOpen(l)
	return ok
}

// tableAt reports whether the parser reads a table at lines[i]: a
// heading, rule or quote comes first.
func tableAt(lines []string, i int) bool {
	_, _, h := heading(lines[i])
	_, q := quoteLine(lines[i])
	return !h && !q && !isRule(lines[i]) && isTable(lines, i)
}

func longestRun(s string, c byte) int {
	n := 0
	for i := 0; i < len(s); i++ {
		if s[i] == c {
			k := run(s, i, c)
			n = max(n, k)
			i += k - 1
		}
	}
	return n
}

// cut takes the first part off rest, which is over max; whole is rest's
// plain text squeezed, and wholeNext next's. When no cut keeps the plain
// text whole (one entity, link or code span longer than max) and flatten
// is set, the blocks up to the next blank line past the limit are written
// as escaped plain text, which cuts anywhere, and cut again.
func cut(d Dialect, rest, whole string, max int, u Unit, flatten bool) (part, next, wholeNext string) {
	fits := func(p int) (string, string, bool) {
		part, next := piece(rest, p)
		return part, next, part != "" && size(d, part, u) <= max
	}
	type choice struct {
		part, next, whole string
		n                 int
	}
	var clean, any choice
	cands := candidates(rest)
	for _, cands := range cands {
		top := longest(len(cands), func(k int) bool {
			part, _, ok := fits(cands[k])
			return ok || part == "" // a cut too early to make a part is not too long
		})
		for k := top; k >= 0 && k > top-8; k-- {
			part, next, ok := fits(cands[k])
			if !ok {
				continue
			}
			n := size(d, part, u)
			if n > any.n {
				any = choice{part, next, "", n}
			}
			// The part's plain text must begin the whole's, and the next
			// part's must be the rest of it: else the cut broke an escape,
			// an entity or a block, whose markers would show.
			head := squeeze(Render(Plain, part))
			if !strings.HasPrefix(whole, head) {
				continue
			}
			tail := squeeze(Render(Plain, next))
			if len(head)+len(tail) != len(whole) || whole[len(head):] != tail {
				continue
			}
			if n > clean.n {
				clean = choice{part, next, tail, n}
			}
			break
		}
		if clean.n >= max/2 {
			break // a cut on a paragraph or a line beats a longer part
		}
	}
	switch {
	case clean.part != "":
		return clean.part, clean.next, clean.whole
	case flatten:
		q := len(rest)
		for _, p := range cands[0] {
			if _, _, ok := fits(p); !ok {
				q = p
				break
			}
		}
		tail := rest[q:]
		if opener, _, ok := openFence(rest[:q]); ok {
			tail = opener + "\n" + tail
		}
		return cut(d, escape(Render(Plain, rest[:q]))+"\n\n"+tail, whole, max, u, false)
	case any.part != "":
		return any.part, any.next, squeeze(Render(Plain, any.next))
	}
	// Not one rune fits: a part over max beats no progress.
	_, size := utf8.DecodeRuneInString(rest)
	for p := size; p <= len(rest); p++ {
		if part, next := piece(rest, p); part != "" {
			return part, next, squeeze(Render(Plain, next))
		}
	}
	return rest, "", ""
}

// longest is the greatest k < n for which ok(k) holds, -1 if ok(0) does
// not, assuming ok holds up to a point and not after (a render grows with
// its Markdown, closely enough: each pick is checked again). It gallops
// from 0, so the cost follows the part's length, not the whole reply's.
func longest(n int, ok func(int) bool) int {
	if n == 0 || !ok(0) {
		return -1
	}
	lo, step := 0, 1 // ok(lo)
	for lo+step < n && ok(lo+step) {
		lo += step
		step *= 2
	}
	hi := min(lo+step, n) // !ok(hi) or hi == n
	for hi-lo > 1 {
		mid := (lo + hi) / 2
		if ok(mid) {
			lo = mid
		} else {
			hi = mid
		}
	}
	return lo
}

// candidates are the offsets rest may be cut at, by preference: after a
// blank line, after a line, after a space, between runes.
func candidates(rest string) [4][]int {
	var c [4][]int
	for p := range rest {
		if p == 0 {
			continue
		}
		c[3] = append(c[3], p)
		switch rest[p-1] {
		case '\n':
			c[1] = append(c[1], p)
			if p >= 2 && rest[p-2] == '\n' {
				c[0] = append(c[0], p)
			}
		case ' ':
			c[2] = append(c[2], p)
		}
	}
	return c
}

// piece cuts rest at p into a part and the rest after it. Inside a code
// block the part closes it (the parser closes what is open) and the rest
// opens it again. A cut inside a line trims the spaces at the cut, and a
// rest that would start a block it did not ("# x" cut from "a # x") gets
// its marker escaped. "" is a cut that makes no part.
func piece(rest string, p int) (part, next string) {
	head, tail := rest[:p], rest[p:]
	if opener, end, ok := openFence(head); ok {
		if p <= end+1 {
			return "", "" // nothing of the code yet
		}
		return strings.TrimSuffix(head, "\n"), opener + "\n" + tail
	}
	part = strings.TrimRight(head, " \t\n")
	next = strings.TrimLeft(tail, "\n")
	if head[len(head)-1] != '\n' {
		next = unblock(strings.TrimLeft(next, " \t"))
	}
	return part, next
}

// openFence is the opening line of the code block left open at the end of
// head, if one is, and the offset where that line ends.
func openFence(head string) (opener string, end int, ok bool) {
	if !strings.Contains(head, "```") && !strings.Contains(head, "~~~") {
		return "", 0, false
	}
	var open *fence
	at := 0
	for l := range strings.Lines(head) {
		at += len(l)
		l = strings.TrimSuffix(l, "\n")
		if open != nil {
			if open.closes(l) {
				open = nil
			}
			continue
		}
		if f, ok := fenceOpen(l); ok {
			open, opener, end = &f, l, at-1
		}
	}
	return opener, end, open != nil
}

// unblock escapes the block marker a rest cut from inside a line would
// start with.
func unblock(s string) string {
	first, _, _ := strings.Cut(s, "\n")
	if !blockStart([]string{first}, 0) {
		return s
	}
	k := 0
	for k < len(s) && s[k] >= '0' && s[k] <= '9' {
		k++ // "1. x": the '.' is escaped
	}
	return s[:k] + `\` + s[k:]
}

// escape writes s as Markdown that reads as s: each ASCII punctuation
// character escaped.
func escape(s string) string {
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		if isPunct(s[i]) {
			b.WriteByte('\\')
		}
		b.WriteByte(s[i])
	}
	return b.String()
}

// squeeze drops white space, which a cut may add or take.
func squeeze(s string) string {
	return strings.Map(func(r rune) rune {
		if unicode.IsSpace(r) {
			return -1
		}
		return r
	}, s)
}
