// Package markup renders the Markdown an agent writes into what each chat
// platform accepts (Telegram MarkdownV2, Discord markdown, Slack mrkdwn, or
// plain text) and cuts a long reply into parts under a platform's limit.
package markup

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
// renders closed.
func Render(d Dialect, md string) string {
	return md // the renderers replace this
}

// Split cuts md into parts whose renders in d are each at most max in unit
// u, on paragraph, line or space boundaries where it can.
func Split(d Dialect, md string, max int, u Unit) []string {
	if md == "" {
		return nil
	}
	return []string{md} // the splitter replaces this
}
