package markup

import (
	"fmt"
	"strings"
)

// checkMarkdownV2 reads s as Telegram reads a MarkdownV2 message, from the
// rules of https://core.telegram.org/bots/api#markdownv2-style (read
// through https://botnamefinder.pages.dev/blog/telegram-markdownv2-escape-characters):
// any character of code 1–126 may be escaped with '\'; inside pre and code
// '`' and '\' must be; inside a link's (…) ')' and '\' must be; everywhere
// else _ * [ ] ( ) ~ ` > # + - = | { } . ! must be unless they are a
// marker; '>' at a line's start is a quote; "__" is underline, "||" a
// spoiler; entities nest but do not overlap and all must end. It returns
// the text after entities are parsed, or the error Telegram would give.
func checkMarkdownV2(s string) (string, error) {
	var text strings.Builder
	var stack []string
	top := func() string {
		if len(stack) == 0 {
			return ""
		}
		return stack[len(stack)-1]
	}
	toggle := func(m string, at int) error {
		if top() == m {
			stack = stack[:len(stack)-1]
			return nil
		}
		for _, o := range stack {
			if o == m {
				return fmt.Errorf("can't parse entities: entity %q at byte %d overlaps another", m, at)
			}
		}
		stack = append(stack, m)
		return nil
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch {
		case c == '\\':
			if i+1 >= len(s) || s[i+1] < 1 || s[i+1] > 126 {
				return "", fmt.Errorf("can't parse entities: Character '\\' is reserved and must be escaped (byte %d)", i)
			}
			text.WriteByte(s[i+1])
			i++
		case c == '>' && (i == 0 || s[i-1] == '\n'):
			// a quote's marker
		case strings.HasPrefix(s[i:], "```"):
			nl := strings.IndexByte(s[i:], '\n')
			if nl < 0 {
				return "", fmt.Errorf("can't parse entities: can't find end of pre entity at byte %d", i)
			}
			j := i + nl + 1
			for ; ; j++ {
				if j >= len(s) {
					return "", fmt.Errorf("can't parse entities: can't find end of pre entity at byte %d", i)
				}
				if s[j] == '\\' {
					if j+1 >= len(s) {
						return "", fmt.Errorf("can't parse entities: a '\\' ends the pre entity at byte %d", j)
					}
					text.WriteByte(s[j+1])
					j++
					continue
				}
				if strings.HasPrefix(s[j:], "```") {
					break
				}
				if s[j] == '`' {
					return "", fmt.Errorf("can't parse entities: Character '`' is reserved in pre at byte %d", j)
				}
				text.WriteByte(s[j])
			}
			i = j + 2
		case c == '`':
			j := i + 1
			for ; ; j++ {
				if j >= len(s) {
					return "", fmt.Errorf("can't parse entities: can't find end of code entity at byte %d", i)
				}
				if s[j] == '\\' {
					if j+1 >= len(s) {
						return "", fmt.Errorf("can't parse entities: a '\\' ends the code entity at byte %d", j)
					}
					text.WriteByte(s[j+1])
					j++
					continue
				}
				if s[j] == '`' {
					break
				}
				text.WriteByte(s[j])
			}
			i = j
		case c == '_' && strings.HasPrefix(s[i:], "__"):
			if err := toggle("__", i); err != nil {
				return "", err
			}
			i++
		case c == '|' && strings.HasPrefix(s[i:], "||"):
			if err := toggle("||", i); err != nil {
				return "", err
			}
			i++
		case c == '*' || c == '_' || c == '~':
			if err := toggle(string(c), i); err != nil {
				return "", err
			}
		case c == '[':
			stack = append(stack, "[")
		case c == ']':
			if top() != "[" || !strings.HasPrefix(s[i:], "](") {
				return "", fmt.Errorf("can't parse entities: Character ']' is reserved and must be escaped (byte %d)", i)
			}
			stack = stack[:len(stack)-1]
			j := i + 2
			for ; j < len(s) && s[j] != ')'; j++ {
				if s[j] == '\\' {
					j++
				}
			}
			if j >= len(s) {
				return "", fmt.Errorf("can't parse entities: can't find end of a URL at byte %d", i)
			}
			i = j
		case strings.IndexByte(tgReserved, c) >= 0:
			return "", fmt.Errorf("can't parse entities: Character '%c' is reserved and must be escaped with the preceding '\\' (byte %d)", c, i)
		default:
			text.WriteByte(c)
		}
	}
	if len(stack) > 0 {
		return "", fmt.Errorf("can't parse entities: can't find end of the entity starting with %q", top())
	}
	return text.String(), nil
}
