package tokens

import (
	"unicode"
	"unicode/utf8"
)

// A splitter cuts text into the pieces byte-pair encoding works on, as
// OpenAI's pre-tokenizing regular expression for a vocabulary does: it
// returns the end of the piece that starts at i (i < len(s), s valid
// UTF-8). Writing the expressions out by hand, rather than running them
// with a backtracking regular-expression engine, keeps that engine out of
// the binary; FuzzCount holds both splitters to the reference encoder.
type splitter func(s string, i int) int

// splitO200k follows o200k_base's expression, whose alternatives are
// tried in order at i:
//
//	[^\r\n\p{L}\p{N}]?[\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}]*[\p{Ll}\p{Lm}\p{Lo}\p{M}]+(?i:'s|'t|'re|'ve|'m|'ll|'d)?
//	[^\r\n\p{L}\p{N}]?[\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}]+[\p{Ll}\p{Lm}\p{Lo}\p{M}]*(?i:'s|'t|'re|'ve|'m|'ll|'d)?
//	\p{N}{1,3}
//	 ?[^\s\p{L}\p{N}]+[\r\n/]*
//	\s*[\r\n]+
//	\s+(?!\S)
//	\s+
func splitO200k(s string, i int) int {
	c, n := utf8.DecodeRuneInString(s[i:])
	if isPrefix(c) {
		if e := o200kWord(s, i+n); e > 0 {
			return e
		}
	}
	if e := o200kWord(s, i); e > 0 {
		return e
	}
	if e := o200kUpper(s, i, c, n); e > 0 {
		return e
	}
	return splitRest(s, i, c, true)
}

// o200kWord matches the first alternative without its prefix at j:
// [upper]*[lower]+ with the contraction. The upper run is given back
// (backtracking) until a character of the lower set follows it; it returns
// 0 when there is none.
func o200kWord(s string, j int) int {
	e := j         // end of the run of the upper set
	lastLower := 0 // end of its last character that is in the lower set too
	for e < len(s) {
		c, n := utf8.DecodeRuneInString(s[e:])
		if !isUpperSet(c) {
			break
		}
		e += n
		if isLowerSet(c) {
			lastLower = e
		}
	}
	if e < len(s) {
		if c, _ := utf8.DecodeRuneInString(s[e:]); isLowerSet(c) {
			return contraction(s, lowerRun(s, e))
		}
	}
	if lastLower == 0 {
		return 0
	}
	// Given back to that character, the upper run is followed by a lower
	// run of just it: neither the characters after it within the upper
	// run nor the one after the run are in the lower set.
	return contraction(s, lastLower)
}

// o200kUpper matches the second alternative at i: the prefix (given back
// if no upper character follows it), [upper]+[lower]* and the contraction.
func o200kUpper(s string, i int, c rune, n int) int {
	if isPrefix(c) && i+n < len(s) {
		if c2, _ := utf8.DecodeRuneInString(s[i+n:]); isUpperSet(c2) {
			return contraction(s, lowerRun(s, upperRun(s, i+n)))
		}
	}
	if isUpperSet(c) {
		return contraction(s, lowerRun(s, upperRun(s, i)))
	}
	return 0
}

func upperRun(s string, j int) int {
	for j < len(s) {
		c, n := utf8.DecodeRuneInString(s[j:])
		if !isUpperSet(c) {
			break
		}
		j += n
	}
	return j
}

func lowerRun(s string, j int) int {
	for j < len(s) {
		c, n := utf8.DecodeRuneInString(s[j:])
		if !isLowerSet(c) {
			break
		}
		j += n
	}
	return j
}

// splitCl100k follows cl100k_base's expression:
//
//	(?i:'s|'t|'re|'ve|'m|'ll|'d)
//	[^\r\n\p{L}\p{N}]?\p{L}+
//	\p{N}{1,3}
//	 ?[^\s\p{L}\p{N}]+[\r\n]*
//	\s*[\r\n]+
//	\s+(?!\S)
//	\s+
func splitCl100k(s string, i int) int {
	if e := contraction(s, i); e > i {
		return e
	}
	c, n := utf8.DecodeRuneInString(s[i:])
	if isPrefix(c) && i+n < len(s) {
		if c2, _ := utf8.DecodeRuneInString(s[i+n:]); unicode.IsLetter(c2) {
			return letterRun(s, i+n)
		}
	}
	if unicode.IsLetter(c) {
		return letterRun(s, i)
	}
	return splitRest(s, i, c, false)
}

func letterRun(s string, j int) int {
	for j < len(s) {
		c, n := utf8.DecodeRuneInString(s[j:])
		if !unicode.IsLetter(c) {
			break
		}
		j += n
	}
	return j
}

// splitRest matches the alternatives both expressions end with, at i whose
// character is c: up to three digits; punctuation, after an optional
// space, with the line breaks (and, for o200k_base, slashes) after it; and
// runs of white space.
func splitRest(s string, i int, c rune, slash bool) int {
	if unicode.IsNumber(c) {
		j := i
		for k := 0; k < 3 && j < len(s); k++ {
			c, n := utf8.DecodeRuneInString(s[j:])
			if !unicode.IsNumber(c) {
				break
			}
			j += n
		}
		return j
	}
	j := i
	if c == ' ' {
		j++
	}
	if j < len(s) {
		if c, _ := utf8.DecodeRuneInString(s[j:]); isPunct(c) {
			for j < len(s) {
				c, n := utf8.DecodeRuneInString(s[j:])
				if !isPunct(c) {
					break
				}
				j += n
			}
			for j < len(s) && (s[j] == '\r' || s[j] == '\n' || slash && s[j] == '/') {
				j++
			}
			return j
		}
	}
	// White space: c is a space character (every other character was
	// matched above).
	e, lastBreak, last := i, -1, i
	for e < len(s) {
		c, n := utf8.DecodeRuneInString(s[e:])
		if !unicode.IsSpace(c) {
			break
		}
		if c == '\r' || c == '\n' {
			lastBreak = e
		}
		last = e
		e += n
	}
	switch {
	case lastBreak >= 0: // \s*[\r\n]+: up to the run's last line break
		return lastBreak + 1
	case e == len(s) || last == i: // \s+ at the end of the text, or a single space
		return e
	default: // \s+(?!\S): the run but its last character, which joins the next piece
		return last
	}
}

// contraction returns the end of an English contraction ('s, 't, 're,
// 've, 'm, 'll, 'd in any case) at j, or j when there is none.
func contraction(s string, j int) int {
	if j+1 >= len(s) || s[j] != '\'' {
		return j
	}
	switch s[j+1] {
	case 's', 'S', 't', 'T', 'm', 'M', 'd', 'D':
		return j + 2
	case 'r', 'R':
		if j+2 < len(s) && (s[j+2] == 'e' || s[j+2] == 'E') {
			return j + 3
		}
	case 'v', 'V':
		if j+2 < len(s) && (s[j+2] == 'e' || s[j+2] == 'E') {
			return j + 3
		}
	case 'l', 'L':
		if j+2 < len(s) && (s[j+2] == 'l' || s[j+2] == 'L') {
			return j + 3
		}
	case 0xC5: // ſ (U+017F), which folds to s
		if j+2 < len(s) && s[j+2] == 0xBF {
			return j + 3
		}
	}
	return j
}

// isPrefix is [^\r\n\p{L}\p{N}].
func isPrefix(c rune) bool {
	return c != '\r' && c != '\n' && !unicode.IsLetter(c) && !unicode.IsNumber(c)
}

// isPunct is [^\s\p{L}\p{N}].
func isPunct(c rune) bool {
	return !unicode.IsSpace(c) && !unicode.IsLetter(c) && !unicode.IsNumber(c)
}

// isUpperSet is [\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}].
func isUpperSet(c rune) bool {
	if c < utf8.RuneSelf {
		return 'A' <= c && c <= 'Z'
	}
	return unicode.In(c, unicode.Lu, unicode.Lt, unicode.Lm, unicode.Lo, unicode.M)
}

// isLowerSet is [\p{Ll}\p{Lm}\p{Lo}\p{M}].
func isLowerSet(c rune) bool {
	if c < utf8.RuneSelf {
		return 'a' <= c && c <= 'z'
	}
	return unicode.In(c, unicode.Ll, unicode.Lm, unicode.Lo, unicode.M)
}
