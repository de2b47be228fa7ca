// Package search is what agentd's stores share for searching session
// histories: a history query as people and models type it, parsed into
// terms that every word of must occur (a word ending in * matching as a
// prefix), the words of a text as the index sees them, and snippets that
// mark the matching words with « and ». Each store turns the terms into its
// own index's query (FTS5 in SQLite, tsquery in PostgreSQL); the words and
// their folding are the same for both, so a query finds the same events in
// either.
package search

import (
	"strings"
	"unicode"
	"unicode/utf8"
)

// MaxTerms bounds the terms a search query keeps, and so its cost.
const MaxTerms = 16

// Term is one term of a sanitised search query: the words of one
// whitespace-separated piece of the user's text, matched as a phrase.
type Term struct {
	Words  []string // folded (see Fold)
	Prefix bool     // the last word matches any word it begins
}

// FTS5 turns text as a person or a model types it into a safe FTS5
// query: every whitespace-separated piece becomes a quoted phrase of its
// words (runs of letters and digits), all phrases must match, and a piece
// ending in * matches as a prefix. Nothing the user types is read as FTS5
// syntax (AND, OR, NOT, NEAR, column filters, parentheses), so the result
// is never a syntax error. It returns "" if the text has no words.
func FTS5(text string) (string, []Term) {
	var b strings.Builder
	var terms []Term
	for _, piece := range strings.Fields(text) {
		if len(terms) == MaxTerms {
			break
		}
		prefix := strings.HasSuffix(piece, "*")
		words := Words(piece)
		if len(words) == 0 {
			continue
		}
		if b.Len() > 0 {
			b.WriteByte(' ')
		}
		b.WriteByte('"')
		for i, w := range words {
			if i > 0 {
				b.WriteByte(' ')
			}
			b.WriteString(w)
			words[i] = Fold(w)
		}
		b.WriteByte('"')
		if prefix {
			b.WriteByte('*')
		}
		terms = append(terms, Term{Words: words, Prefix: prefix})
	}
	return b.String(), terms
}

// IsWordRune reports whether r belongs to a word: what SQLite's unicode61
// tokenizer keeps by default (letters, digits, private use), restricted to
// what it knows to be such, so that every word is at least one token.
func IsWordRune(r rune) bool {
	if r < utf8.RuneSelf {
		return r >= '0' && r <= '9' || r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z'
	}
	// unicode61 knows Unicode 6.1 only; letters and digits of later
	// versions may be separators to it. Keeping the BMP's letters and
	// digits is close enough: any other rune only splits words.
	return r <= 0xFFFF && (unicode.IsLetter(r) || unicode.IsDigit(r))
}

// Words returns the runs of word runes in s.
func Words(s string) []string {
	var out []string
	start := -1
	for i, r := range s {
		switch {
		case IsWordRune(r) && start < 0:
			start = i
		case !IsWordRune(r) && start >= 0:
			out = append(out, s[start:i])
			start = -1
		}
	}
	if start >= 0 {
		out = append(out, s[start:])
	}
	return out
}

// Fold lower-cases w and strips the diacritics of common Latin letters,
// approximating how the index compares words (remove_diacritics 2).
func Fold(w string) string {
	w = strings.ToLower(w)
	ascii := true
	for i := 0; i < len(w); i++ {
		if w[i] >= utf8.RuneSelf {
			ascii = false
			break
		}
	}
	if ascii {
		return w
	}
	var b strings.Builder
	b.Grow(len(w))
	for _, r := range w {
		b.WriteRune(foldRune(r))
	}
	return b.String()
}

// foldRune maps a lower-case Latin letter with a diacritic to its base.
func foldRune(r rune) rune {
	if r < 0xE0 || r > 0x17F {
		return r
	}
	for _, g := range [...]struct {
		base    rune
		letters string
	}{
		{'a', "àáâãäåāăą"}, {'c', "çćĉċč"}, {'d', "ďđ"}, {'e', "èéêëēĕėęě"},
		{'g', "ĝğġģ"}, {'h', "ĥħ"}, {'i', "ìíîïĩīĭįı"}, {'j', "ĵ"}, {'k', "ķ"},
		{'l', "ĺļľŀł"}, {'n', "ñńņňŉ"}, {'o', "òóôõöøōŏő"}, {'r', "ŕŗř"},
		{'s', "śŝşš"}, {'t', "ţťŧ"}, {'u', "ùúûüũūŭůűų"}, {'w', "ŵ"}, {'y', "ýÿŷ"}, {'z', "źżž"},
	} {
		if strings.ContainsRune(g.letters, r) {
			return g.base
		}
	}
	return r
}

// matches reports whether the folded word w matches one of terms' words.
func matches(w string, terms []Term) bool {
	for _, t := range terms {
		for i, tw := range t.Words {
			if w == tw || t.Prefix && i == len(t.Words)-1 && strings.HasPrefix(w, tw) {
				return true
			}
		}
	}
	return false
}

// Snippet sizes.
const (
	snippetWords  = 30  // words shown around the first match
	snippetBefore = 8   // of them, before it
	snippetMax    = 480 // bytes of text shown at most (long "words" are cut)
)

// Snippet returns about snippetWords words of text around the first word
// that matches terms, with every matching word wrapped in « and », and "…"
// where text was left out. Without a match it shows the start of text.
func Snippet(text string, terms []Term) string {
	fields := strings.Fields(text)
	first := -1
	for i, f := range fields {
		if fieldMatches(f, terms) {
			first = i
			break
		}
	}
	start := 0
	if first > snippetBefore {
		start = first - snippetBefore
	}
	end := min(len(fields), start+snippetWords)
	var b strings.Builder
	if start > 0 {
		b.WriteString("…")
	}
	for i := start; i < end; i++ {
		if i > start {
			b.WriteByte(' ')
		}
		if b.Len() > snippetMax {
			end = i
			break
		}
		highlight(&b, fields[i], terms)
	}
	if end < len(fields) {
		b.WriteString(" …")
	}
	return b.String()
}

func fieldMatches(f string, terms []Term) bool {
	for _, w := range Words(f) {
		if matches(Fold(w), terms) {
			return true
		}
	}
	return false
}

// highlight writes field f to b with its matching words wrapped, cutting
// it if it is very long.
func highlight(b *strings.Builder, f string, terms []Term) {
	if len(f) > snippetMax/4 {
		cut := snippetMax / 4
		for cut > 0 && !utf8.RuneStart(f[cut]) {
			cut--
		}
		f = f[:cut] + "…"
	}
	last := 0
	start := -1
	flush := func(end int) {
		w := f[start:end]
		if matches(Fold(w), terms) {
			b.WriteString(f[last:start])
			b.WriteString("«")
			b.WriteString(w)
			b.WriteString("»")
			last = end
		}
		start = -1
	}
	for i, r := range f {
		switch {
		case IsWordRune(r) && start < 0:
			start = i
		case !IsWordRune(r) && start >= 0:
			flush(i)
		}
	}
	if start >= 0 {
		flush(len(f))
	}
	b.WriteString(f[last:])
}
