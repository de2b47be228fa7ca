package xmlproto

import (
	"strconv"
	"strings"
	"unicode/utf8"
)

// The lexing shared by the parser and Escape: which tags are the
// protocol's, and which entities a body decodes. Escape neutralises
// exactly what the parser would read, so the two stay in step.

// ownTags are every element name of the protocol; the parser reads the
// first three from a model, the rest only agentd writes.
var ownTags = [...]string{TagThink, TagCall, TagOutput, TagResults, TagResult, TagProblem}

// maxTag bounds an opening or closing tag's length in bytes: a longer
// one is prose, not a tag.
const maxTag = 4096

// maxEntity bounds an entity's length (&#x10FFFF; is ten bytes).
const maxEntity = 12

func isNameByte(c byte) bool {
	return c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' ||
		c == '_' || c == '-' || c == '.' || c == ':'
}

func isSpace(c byte) bool { return c == ' ' || c == '\t' || c == '\n' || c == '\r' }

// ownTag returns the protocol's name for name (any case), or "".
func ownTag(name []byte) string {
	for _, t := range ownTags {
		if len(name) == len(t) && strings.EqualFold(string(name), t) {
			return t
		}
	}
	return ""
}

// ownPrefix reports whether name (any case) begins one of the
// protocol's names, so more input may complete it.
func ownPrefix(name []byte) bool {
	for _, t := range ownTags {
		if len(name) <= len(t) && strings.EqualFold(string(name), t[:len(name)]) {
			return true
		}
	}
	return false
}

// lexKind is what lexTag found at a '<'.
type lexKind int

const (
	lexNone  lexKind = iota // not one of the protocol's tags: the '<' is text
	lexMore                 // undecided until more input comes
	lexOpen                 // <name attrs…> or <name …/>
	lexClose                // </name>
)

// tag is one lexed tag of the protocol.
type tag struct {
	kind  lexKind
	name  string // the protocol's spelling
	attrs []Attr
	self  bool // <name …/>
	n     int  // bytes the tag spans
}

// lexTag reads the tag b begins with (b[0] is '<').
func lexTag(b []byte) tag {
	i := 1
	closing := i < len(b) && b[i] == '/'
	if closing {
		i++
	}
	j := i
	for j < len(b) && isNameByte(b[j]) {
		j++
	}
	if j == len(b) {
		if ownPrefix(b[i:j]) {
			return tag{kind: lexMore}
		}
		return tag{}
	}
	name := ownTag(b[i:j])
	if name == "" {
		return tag{}
	}
	if closing {
		for j < len(b) && j < maxTag && isSpace(b[j]) {
			j++
		}
		switch {
		case j == maxTag:
			return tag{}
		case j == len(b):
			return tag{kind: lexMore}
		case b[j] == '>':
			return tag{kind: lexClose, name: name, n: j + 1}
		}
		return tag{}
	}
	t := lexAttrs(b, j)
	t.name = name
	return t
}

// lexAttrs reads attributes from b[i:] to the end of an opening tag.
// Values may be single-, double- or un-quoted; one holding '<' means
// this was prose after all.
func lexAttrs(b []byte, i int) tag {
	more := tag{kind: lexMore}
	if len(b) > maxTag {
		b = b[:maxTag]
		more = tag{}
	}
	var attrs []Attr
	for {
		start := i
		for i < len(b) && isSpace(b[i]) {
			i++
		}
		if i == len(b) {
			return more
		}
		switch b[i] {
		case '>':
			return tag{kind: lexOpen, attrs: attrs, n: i + 1}
		case '/':
			if i+1 == len(b) {
				return more
			}
			if b[i+1] == '>' {
				return tag{kind: lexOpen, attrs: attrs, self: true, n: i + 2}
			}
			return tag{}
		}
		if i == start { // an attribute must follow a space
			return tag{}
		}
		k := i
		for i < len(b) && isNameByte(b[i]) {
			i++
		}
		if i == k {
			return tag{}
		}
		name := string(b[k:i])
		for i < len(b) && isSpace(b[i]) {
			i++
		}
		if i == len(b) {
			return more
		}
		if b[i] != '=' {
			return tag{}
		}
		i++
		for i < len(b) && isSpace(b[i]) {
			i++
		}
		if i == len(b) {
			return more
		}
		var val []byte
		if q := b[i]; q == '"' || q == '\'' {
			e := i + 1
			for e < len(b) && b[e] != q && b[e] != '<' {
				e++
			}
			if e == len(b) {
				return more
			}
			if b[e] == '<' {
				return tag{}
			}
			val, i = b[i+1:e], e+1
		} else {
			e := i
			for e < len(b) && !isSpace(b[e]) && b[e] != '>' && b[e] != '<' && b[e] != '"' && b[e] != '\'' &&
				!(b[e] == '/' && e+1 < len(b) && b[e+1] == '>') {
				e++
			}
			if e == len(b) {
				return more
			}
			if e == i || b[e] == '<' || b[e] == '"' || b[e] == '\'' {
				return tag{}
			}
			val, i = b[i:e], e
		}
		attrs = append(attrs, Attr{Name: name, Value: decodeAll(val)})
	}
}

// entityAt decodes the entity b begins with (b[0] is '&'): ok with its
// text and length, or more when b ends before it is decided, or
// neither (the '&' is text).
func entityAt(b []byte) (s string, n int, ok, more bool) {
	end := -1
	for i := 1; i < len(b) && i < maxEntity; i++ {
		c := b[i]
		if c == ';' {
			end = i
			break
		}
		if !(isNameByte(c) || c == '#') {
			return "", 0, false, false
		}
	}
	if end < 0 {
		return "", 0, false, len(b) < maxEntity
	}
	name := string(b[1:end])
	switch name {
	case "lt":
		return "<", end + 1, true, false
	case "gt":
		return ">", end + 1, true, false
	case "amp":
		return "&", end + 1, true, false
	case "quot":
		return `"`, end + 1, true, false
	case "apos":
		return "'", end + 1, true, false
	}
	if len(name) < 2 || name[0] != '#' {
		return "", 0, false, false
	}
	var r uint64
	var err error
	if name[1] == 'x' || name[1] == 'X' {
		r, err = strconv.ParseUint(name[2:], 16, 32)
	} else {
		r, err = strconv.ParseUint(name[1:], 10, 32)
	}
	if err != nil || r == 0 || r > utf8.MaxRune || r >= 0xD800 && r < 0xE000 {
		return "", 0, false, false
	}
	return string(rune(r)), end + 1, true, false
}

// decodeAll decodes every entity in an attribute's value.
func decodeAll(b []byte) string {
	var sb strings.Builder
	for i := 0; i < len(b); {
		if b[i] == '&' {
			if s, n, ok, _ := entityAt(b[i:]); ok {
				sb.WriteString(s)
				i += n
				continue
			}
		}
		sb.WriteByte(b[i])
		i++
	}
	return sb.String()
}

// partialRune returns how many bytes at b's end begin a UTF-8 character
// that is not complete yet.
func partialRune(b []byte) int {
	for k := 1; k < utf8.UTFMax && k <= len(b); k++ {
		if utf8.RuneStart(b[len(b)-k]) {
			if utf8.FullRune(b[len(b)-k:]) {
				return 0
			}
			return k
		}
	}
	return 0
}
