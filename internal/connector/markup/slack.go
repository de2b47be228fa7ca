package markup

import (
	"strings"
)

// slack writes Slack's mrkdwn (https://api.slack.com/reference/surfaces/formatting,
// read through https://docs.rs/slack-blocks/0.19.6/slack_blocks/text/struct.Mrkdwn.html
// and https://skills.sh/ccheney/robust-skills/slack-mrkdwn): *bold*,
// _italic_, ~strike~, `code`, ```pre```, <url|text>, "> " quotes. '&', '<'
// and '>' are control characters and are written as &amp; &lt; &gt;
// everywhere, code too; mrkdwn has no other escape. Headings are bold,
// bullets "•", a table is pre.
type slack struct{}

var slackEscape = strings.NewReplacer("&", "&amp;", "<", "&lt;", ">", "&gt;")

func (slack) text(w *writer, s string) { w.text(slackEscape.Replace(s)) }

func (slack) code(w *writer, s string) { w.text("`" + slackEscape.Replace(s) + "`") }

func (slack) pre(w *writer, lang, body string) {
	w.text("```\n" + slackEscape.Replace(breakTicks(body)) + "\n```")
}

var slackMarks = [...]string{sBold: "*", sItalic: "_", sStrike: "~"}

func (slack) open(w *writer, k spanKind)  { w.text(slackMarks[k]) }
func (slack) close(w *writer, k spanKind) { w.text(slackMarks[k]) }

// slackURL escapes what would end a <url|text> early.
var slackURL = strings.NewReplacer("&", "&amp;", "<", "%3C", ">", "%3E", "|", "%7C")

func (sl slack) link(w *writer, r renderer, s span) {
	web := isWebURL(s.url) || strings.HasPrefix(s.url, "mailto:")
	switch {
	case isBare(s) && web:
		w.text("<" + slackURL.Replace(s.url) + ">")
	case web:
		text := strings.ReplaceAll(plainInline(linkText(s)), "\n", " ")
		w.text("<" + slackURL.Replace(s.url) + "|" + slackEscape.Replace(text) + ">")
	default:
		inline(w, r, linkText(s), 0)
		sl.text(w, " ("+s.url+")")
	}
}

func (slack) heading(w *writer, r renderer, level int, inl []span) {
	w.text("*")
	inline(w, r, inl, 1<<sBold)
	w.text("*")
}

func (slack) bullet(w *writer, num string) {
	if num == "" {
		w.text("• ")
		return
	}
	w.text(num + ". ")
}

func (slack) quote(w *writer, body string, n int) {
	for i, line := range strings.Split(body, "\n") {
		if i > 0 {
			w.text("\n")
		}
		w.text("> " + line)
	}
}
