package memory

import (
	"strings"
	"unicode"
)

// maxTerms caps the words of a query that reach the FTS index.
const maxTerms = 24

// stopwords are dropped from keyword queries: they match nearly every
// memory and say nothing about which one is wanted.
var stopwords = func() map[string]bool {
	m := map[string]bool{}
	for _, w := range strings.Fields(`a an and are as at be been but by can could did do does for from had has have
		he her hers him his how i if in into is it its me my no not of on or our ours she so than that the their them
		then there these they this those to us was we were what when where which who whom why will with would you your
		about any all also just some such very`) {
		m[w] = true
	}
	return m
}()

// words splits text into lowercased words: runs of letters, digits and
// combining marks, as SQLite's unicode61 tokenizer does. Each word comes
// with its byte span in text.
func words(text string, fn func(w string, start, end int)) {
	start := -1
	for i, r := range text {
		in := unicode.IsLetter(r) || unicode.IsDigit(r) || unicode.Is(unicode.Mn, r)
		switch {
		case in && start < 0:
			start = i
		case !in && start >= 0:
			fn(strings.ToLower(text[start:i]), start, i)
			start = -1
		}
	}
	if start >= 0 {
		fn(strings.ToLower(text[start:]), start, len(text))
	}
}

// queryTerms returns the distinct words of a recall query worth searching
// for, in order, without stopwords, at most maxTerms.
func queryTerms(text string) []string {
	var out []string
	seen := map[string]bool{}
	words(text, func(w string, _, _ int) {
		if len(out) >= maxTerms || stopwords[w] || seen[w] {
			return
		}
		seen[w] = true
		out = append(out, w)
	})
	return out
}

// quote makes s an FTS5 string: the whole of it is one phrase, whatever it
// holds.
func quote(s string) string { return `"` + strings.ReplaceAll(s, `"`, `""`) + `"` }

// matchExpr builds the FTS5 query for terms (any of them may match, BM25
// ranks documents matching more and rarer terms higher) confined to scopes
// and kinds (nil: any). Every user-supplied word is quoted, so no input can
// be an FTS5 syntax error or an operator. It returns "" when there is
// nothing to search for.
func matchExpr(terms, scopes []string, kinds []int64) string {
	if len(terms) == 0 {
		return ""
	}
	var b strings.Builder
	if len(scopes) > 0 {
		b.WriteString("tag : (")
		for i, sc := range scopes {
			if i > 0 {
				b.WriteString(" OR ")
			}
			b.WriteString(scopeTag(sc))
		}
		b.WriteString(") AND ")
	}
	if len(kinds) > 0 && len(kinds) < 3 {
		b.WriteString("tag : (")
		for i, k := range kinds {
			if i > 0 {
				b.WriteString(" OR ")
			}
			b.WriteString(kindTags[k])
		}
		b.WriteString(") AND ")
	}
	b.WriteString("{name body} : (")
	for i, t := range terms {
		if i > 0 {
			b.WriteString(" OR ")
		}
		b.WriteString(quote(t))
	}
	b.WriteString(")")
	return b.String()
}

// Snippet bounds.
const (
	snippetWords = 24 // words shown around the first match
	snippetLead  = 6  // of them, words before the first match
)

// snippet returns text with the words in terms marked «like this»; a long
// text is cut to about snippetWords words around the first match, with "…"
// where it was cut. With no match, it is the start of text.
func snippet(text string, terms []string) string {
	want := make(map[string]bool, len(terms))
	for _, t := range terms {
		want[t] = true
	}
	type span struct{ start, end int }
	var all []span
	var hits []bool
	first := -1
	words(text, func(w string, start, end int) {
		if want[w] && first < 0 {
			first = len(all)
		}
		all = append(all, span{start, end})
		hits = append(hits, want[w])
	})
	lo, hi := 0, len(all)
	if len(all) > snippetWords {
		if first > snippetLead {
			lo = first - snippetLead
		}
		hi = min(lo+snippetWords, len(all))
		lo = max(0, hi-snippetWords)
	}
	var b strings.Builder
	from := 0
	if lo > 0 {
		b.WriteString("…")
		from = all[lo].start
	}
	to := len(text)
	if hi < len(all) {
		to = all[hi-1].end
	}
	pos := from
	for i := lo; i < hi; i++ {
		if !hits[i] {
			continue
		}
		b.WriteString(text[pos:all[i].start])
		b.WriteString("«")
		b.WriteString(text[all[i].start:all[i].end])
		b.WriteString("»")
		pos = all[i].end
	}
	b.WriteString(text[pos:to])
	if to < len(text) {
		b.WriteString("…")
	}
	return b.String()
}
