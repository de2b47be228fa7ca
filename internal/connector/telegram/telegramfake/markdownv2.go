package telegramfake

import (
	"errors"
	"fmt"
	"strings"
	"unicode/utf16"
	"unicode/utf8"
)

// Entity is one formatting entity of a parsed message, with its offset and
// length in UTF-16 code units of the parsed text, as the Bot API's
// MessageEntity counts them.
type Entity struct {
	Type     string `json:"type"`
	Offset   int    `json:"offset"`
	Length   int    `json:"length"`
	URL      string `json:"url,omitempty"`
	Language string `json:"language,omitempty"`
}

// ParseMarkdownV2 parses text as Telegram's MarkdownV2 and returns the
// text a reader sees and its entities, or the error Telegram gives after
// "Bad Request: can't parse entities: ".
//
// Written from the Bot API's "MarkdownV2 style" rules
// (https://core.telegram.org/bots/api#markdownv2-style): any character of
// code 1–126 may be escaped with '\'; inside pre and code only '`' and '\'
// are special; inside a link's (...) only ')' and '\'; everywhere else the
// characters _ * [ ] ( ) ~ ` > # + - = | { } . ! must be escaped. An
// entity ends only when it is the innermost one open ("__" is greedily an
// underline), and one left open is an error. '>' at the start of a line
// begins a block quotation line.
func ParseMarkdownV2(text string) (plain string, ents []Entity, err error) {
	type open struct {
		typ      string
		at       int // byte offset in text, for errors
		start    int // UTF-16 offset in plain
		language string
	}
	var (
		out   strings.Builder
		u16   int // UTF-16 length of out
		stack []open
		quote = -1 // UTF-16 start of the block quotation being read, -1 none
	)
	write := func(s string) {
		out.WriteString(s)
		for _, r := range s {
			u16 += utf16.RuneLen(r)
		}
	}
	top := func() string {
		if len(stack) == 0 {
			return ""
		}
		return stack[len(stack)-1].typ
	}
	at := func(i int) byte {
		if i < len(text) {
			return text[i]
		}
		return 0
	}
	endQuote := func() {
		if quote >= 0 && u16 > quote {
			ents = append(ents, Entity{Type: "blockquote", Offset: quote, Length: u16 - quote})
		}
		quote = -1
	}
	reserved := func(c byte) error {
		//lint:ignore ST1005 Telegram's own words, which clients match
		return fmt.Errorf("Character '%c' is reserved and must be escaped with the preceding '\\'", c)
	}
	if !utf8.ValidString(text) {
		return "", nil, errors.New("text must be encoded in UTF-8")
	}
	for i := 0; i < len(text); i++ {
		c := text[i]
		inCode := top() == "code" || top() == "pre"
		if !inCode && (i == 0 || text[i-1] == '\n') {
			if c == '>' {
				if quote < 0 {
					quote = u16
				}
				continue
			}
			endQuote()
		}
		if c == '\\' {
			if n := at(i + 1); n >= 1 && n <= 126 {
				write(string(n))
				i++
				continue
			}
			return "", nil, reserved(c)
		}
		special := strings.IndexByte("_*[]()~`>#+-=|{}.!", c) >= 0
		if inCode {
			special = c == '`'
		}
		if !special {
			j := i + 1
			for j < len(text) && text[j] >= 0x80 && text[j] < 0xC0 {
				j++ // the rest of a UTF-8 sequence
			}
			write(text[i:j])
			i = j - 1
			continue
		}
		// The end of the innermost entity?
		ends := false
		switch top() {
		case "bold":
			ends = c == '*'
		case "italic":
			ends = c == '_' && at(i+1) != '_'
		case "underline":
			ends = c == '_' && at(i+1) == '_'
		case "strikethrough":
			ends = c == '~'
		case "spoiler":
			ends = c == '|' && at(i+1) == '|'
		case "code":
			ends = c == '`'
		case "pre":
			ends = c == '`' && at(i+1) == '`' && at(i+2) == '`'
		case "text_link":
			ends = c == ']'
		}
		if ends {
			o := stack[len(stack)-1]
			stack = stack[:len(stack)-1]
			e := Entity{Type: o.typ, Offset: o.start, Length: u16 - o.start, Language: o.language}
			switch o.typ {
			case "underline", "spoiler":
				i++
			case "pre":
				i += 2
			case "text_link":
				if at(i+1) != '(' {
					return "", nil, reserved(c) // "[text]" without a URL: the '[' needed escaping
				}
				i += 2
				begin := i
				var url strings.Builder
				for i < len(text) && text[i] != ')' {
					if text[i] == '\\' && at(i+1) >= 1 && at(i+1) <= 126 {
						i++
					}
					url.WriteByte(text[i])
					i++
				}
				if i >= len(text) {
					//lint:ignore ST1005 Telegram's own words, which clients match
					return "", nil, fmt.Errorf("Can't find end of a URL at byte offset %d", begin)
				}
				e.URL = url.String()
			}
			if e.Length > 0 {
				ents = append(ents, e)
			}
			continue
		}
		// The start of an entity.
		o := open{at: i, start: u16}
		switch c {
		case '*':
			o.typ = "bold"
		case '_':
			o.typ = "italic"
			if at(i+1) == '_' {
				o.typ = "underline"
				i++
			}
		case '~':
			o.typ = "strikethrough"
		case '|':
			if at(i+1) != '|' {
				return "", nil, reserved(c)
			}
			o.typ = "spoiler"
			i++
		case '[':
			o.typ = "text_link"
		case '`':
			o.typ = "code"
			if at(i+1) == '`' && at(i+2) == '`' {
				o.typ = "pre"
				i += 3
				j := i
				for j < len(text) && text[j] != ' ' && text[j] != '\n' && text[j] != '\r' && text[j] != '\t' && text[j] != '`' {
					j++
				}
				if j > i && j < len(text) && text[j] != '`' {
					o.language = text[i:j]
					i = j
				}
				if at(i) == '\n' || at(i) == '\r' {
					i++ // one newline after the opening fence is not text
				}
				i--
			}
		default:
			return "", nil, reserved(c)
		}
		stack = append(stack, o)
	}
	if len(stack) > 0 {
		o := stack[len(stack)-1]
		//lint:ignore ST1005 Telegram's own words, which clients match
		return "", nil, fmt.Errorf("Can't find end of %s entity at byte offset %d", entityName(o.typ), o.at)
	}
	endQuote()
	return out.String(), ents, nil
}

// entityName is an entity type as Telegram's errors name it.
func entityName(typ string) string {
	switch typ {
	case "text_link":
		return "TextUrl"
	case "strikethrough":
		return "Strikethrough"
	case "pre":
		return "Pre"
	}
	return strings.ToUpper(typ[:1]) + typ[1:]
}

// utf16Len is the length of s in UTF-16 code units, as Telegram counts a
// message's length.
func utf16Len(s string) int {
	n := 0
	for _, r := range s {
		n += utf16.RuneLen(r)
	}
	return n
}
