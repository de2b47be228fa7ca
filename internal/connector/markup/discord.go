package markup

import (
	"strings"
)

// discord writes Discord's own markdown (https://htyp.org/Discord/formatting
// and https://wiki.raccoon.fun/_export/xhtml/discord-formatting: **bold**,
// _italic_, ~~strike~~, `code`, ```lang blocks, [masked](links), "> " quotes,
// "# " headings to level 3, "- " and "1. " lists; a '\' before a marker
// shows it as text). It escapes only what would make markup of text, and
// writes a zero-width space into @everyone, @here and <@…> so no text pings
// anyone (the message's allowed_mentions is empty as well).
type discord struct{}

const zwsp = "\u200b"

// discordAlways are the markers escaped wherever they are in text; '>',
// '#', '-', '+' and "1." only mean something at a line's start.
const discordAlways = "\\*_~`|[]"

func (discord) text(w *writer, s string) {
	for i := 0; i < len(s); {
		if n := urlAt(s, i); n > 0 {
			w.text(s[i : i+n]) // Discord links a URL; a '\' in it would break it
			i += n
			continue
		}
		c := s[i]
		switch {
		case strings.HasPrefix(s[i:], "@everyone") || strings.HasPrefix(s[i:], "@here"):
			w.text("@" + zwsp)
		case strings.HasPrefix(s[i:], "<@"):
			w.text("<@" + zwsp)
			i++
		case strings.IndexByte(discordAlways, c) >= 0,
			(c == '>' || c == '#' || c == '-' || c == '+') && w.atLineStart():
			w.mark(`\`)
			w.textByte(c)
		case c >= '0' && c <= '9' && w.atLineStart():
			k := i
			for k < len(s) && s[k] >= '0' && s[k] <= '9' {
				k++
			}
			w.text(s[i:k])
			if k < len(s) && (s[k] == '.' || s[k] == ')') {
				w.mark(`\`)
				w.textByte(s[k])
				k++
			}
			i = k
			continue
		default:
			w.textByte(c)
		}
		i++
	}
}

// urlAt is the length of the web URL at s[i] (to the next space), 0 if
// there is none.
func urlAt(s string, i int) int {
	if !strings.HasPrefix(s[i:], "http") || (i > 0 && isWordBefore(s, i)) {
		return 0
	}
	rest := s[i:]
	if !strings.HasPrefix(rest, "https://") && !strings.HasPrefix(rest, "http://") {
		return 0
	}
	n := strings.IndexAny(rest, " \t\n<>\"")
	if n < 0 {
		n = len(rest)
	}
	return n
}

// breakTicks keeps a run of backticks in code from closing it.
func breakTicks(s string) string {
	return strings.ReplaceAll(s, "``", "`"+zwsp+"`")
}

func (discord) code(w *writer, s string) {
	if !strings.Contains(s, "`") {
		w.text("`" + s + "`")
		return
	}
	w.text("`` " + breakTicks(s) + " ``")
}

func (discord) pre(w *writer, lang, body string) {
	w.text("```" + safeLang(lang) + "\n" + breakTicks(body) + "\n```")
}

// Italic is "_": "*" beside bold's "**" makes runs ("***") Discord reads
// its own way; only italic uses '_', and two italics never touch, so no
// "__" (underline) is written.
var discordMarks = [...]string{sBold: "**", sItalic: "_", sStrike: "~~"}

func (discord) open(w *writer, k spanKind)  { w.text(discordMarks[k]) }
func (discord) close(w *writer, k spanKind) { w.text(discordMarks[k]) }

func (d discord) link(w *writer, r renderer, s span) {
	if isBare(s) && isWebURL(s.url) {
		w.text(s.url)
		return
	}
	if !isWebURL(s.url) {
		inlineFlat(w, r, linkText(s))
		d.text(w, " ("+s.url+")")
		return
	}
	// "[text](<url>)": the angle brackets keep Discord from embedding a
	// preview of every link; what could end the URL is percent-escaped.
	w.text("[")
	inlineFlat(w, r, linkText(s))
	w.text("](<" + discordURL.Replace(s.url) + ">)")
}

var discordURL = strings.NewReplacer("(", "%28", ")", "%29", "<", "%3C", ">", "%3E")

func (discord) heading(w *writer, r renderer, level int, inl []span) {
	if level <= 3 {
		w.text(strings.Repeat("#", level) + " ")
		inline(w, r, inl, 0)
		return
	}
	w.text("**")
	inline(w, r, inl, 1<<sBold)
	w.text("**")
}

func (discord) bullet(w *writer, num string) {
	if num == "" {
		w.text("- ")
		return
	}
	w.text(num + ". ")
}

func (discord) quote(w *writer, body string, n int) {
	for i, line := range strings.Split(body, "\n") {
		if i > 0 {
			w.text("\n")
		}
		w.text("> " + line)
	}
}
