// Package markup renders the Markdown an agent writes into what each chat
// platform accepts (Telegram MarkdownV2, Discord markdown, Slack mrkdwn, or
// plain text) and cuts a long reply into parts under a platform's limit.
//
// Markdown is read once into blocks and spans by a small parser that never
// fails: a marker without its match is text, and a code block left open (a
// reply still streaming) is closed. Each dialect then writes the same tree
// with its own markers and escapes.
package markup

import "strings"

// Dialect is a platform's markup.
type Dialect string

// Dialects.
const (
	Plain    Dialect = "plain"
	Telegram Dialect = "telegram" // MarkdownV2
	Discord  Dialect = "discord"
	Slack    Dialect = "slack" // mrkdwn
)

// Unit is how a platform counts a message's length.
type Unit int

// Units.
const (
	Runes Unit = iota // Unicode code points (Discord, Slack)
	UTF16             // UTF-16 code units (Telegram)
)

// Render renders Markdown md in dialect d. It never fails: what d cannot
// express is written as text. A partial document (a reply still streaming)
// renders closed. An unknown dialect renders as Plain.
func Render(d Dialect, md string) string {
	s, _ := render(d, md, Runes)
	return s
}

// Len is the length, in unit u, of md's render in d as the platform counts
// it against its limit: for Telegram the text after its entities are parsed
// (markers and escapes are not counted; Telegram's own count, "1-4096
// characters after entities parsing"), for the others the whole render.
func Len(d Dialect, md string, u Unit) int {
	s, n := render(d, md, u)
	if d == Telegram {
		return n
	}
	return count(s, u)
}

func render(d Dialect, md string, u Unit) (string, int) {
	return renderDoc(rendererOf(d), parse(strings.ToValidUTF8(md, "\uFFFD")), u, len(md)+len(md)/8)
}

func rendererOf(d Dialect) renderer {
	switch d {
	case Telegram:
		return telegram{}
	case Discord:
		return discord{}
	case Slack:
		return slack{}
	default:
		return plain{}
	}
}
