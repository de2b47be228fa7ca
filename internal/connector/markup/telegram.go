package markup

import (
	"strings"
)

// telegram writes Telegram's MarkdownV2, as the Bot API's "MarkdownV2
// style" states it (https://core.telegram.org/bots/api#markdownv2-style,
// read through https://botnamefinder.pages.dev/blog/telegram-markdownv2-escape-characters
// and https://docs.rs/crate/telegram-escape/latest):
//   - outside entities each of _ * [ ] ( ) ~ ` > # + - = | { } . ! and \
//     is escaped with a '\';
//   - inside code and pre only ` and \ are;
//   - inside a link's (…) only ) and \ are;
//   - entities: *bold*, _italic_, ~strike~, `code`, ```lang\npre```,
//     [text](url), '>' at a line's start for a quote. "__" is underline,
//     so two italics never touch: the parser joins siblings of one kind,
//     and the writer goes on with an entity rather than close and open it.
//
// Headings are bold; bullets are "•", numbers "1\."; a table is pre.
type telegram struct{}

const tgReserved = "_*[]()~`>#+-=|{}.!\\"

func (telegram) text(w *writer, s string) { escapeIn(w, s, tgReserved) }

// escapeIn writes s with '\' before each byte of set.
func escapeIn(w *writer, s, set string) {
	for len(s) > 0 {
		i := strings.IndexAny(s, set)
		if i < 0 {
			w.text(s)
			return
		}
		w.text(s[:i])
		w.mark(`\`)
		w.textByte(s[i])
		s = s[i+1:]
	}
}

func (telegram) code(w *writer, s string) {
	w.mark("`")
	escapeIn(w, s, "`\\")
	w.mark("`")
}

func (t telegram) pre(w *writer, lang, body string) {
	if w.quoted {
		t.text(w, body)
		return
	}
	w.mark("```" + tgLang(lang))
	// The newlines after the language and before the closing fence are
	// counted as text: Telegram may keep them, and counting more is safe.
	w.text("\n")
	escapeIn(w, body, "`\\")
	w.text("\n")
	w.mark("```")
}

// tgLang keeps only a language Telegram reads without question.
func tgLang(lang string) string {
	if len(lang) > 20 {
		return ""
	}
	for _, c := range []byte(lang) {
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '_') {
			return ""
		}
	}
	return lang
}

var tgMarks = [...]string{sBold: "*", sItalic: "_", sStrike: "~"}

func (telegram) open(w *writer, k spanKind)  { w.mark(tgMarks[k]) }
func (telegram) close(w *writer, k spanKind) { w.mark(tgMarks[k]) }

func (t telegram) link(w *writer, r renderer, s span) {
	if isBare(s) {
		t.text(w, s.url) // Telegram links a URL in the text itself
		return
	}
	if !isWebURL(s.url) {
		// Telegram refuses a link whose URL it does not take; the URL is
		// then written out as text.
		inlineFlat(w, r, linkText(s))
		t.text(w, " ("+s.url+")")
		return
	}
	w.mark("[")
	inlineFlat(w, r, linkText(s))
	w.mark("](")
	for _, c := range []byte(s.url) {
		if c == ')' || c == '\\' {
			w.mark(`\`)
		}
		w.mark(string(c))
	}
	w.mark(")")
}

// inlineFlat writes spans inside a link: code is text there.
func inlineFlat(w *writer, r renderer, spans []span) {
	for _, s := range spans {
		if s.kind == sCode {
			s.kind = sText
		}
		inline(w, r, []span{s}, 0)
	}
}

func (telegram) heading(w *writer, r renderer, level int, inl []span) {
	w.mark("*")
	inline(w, r, inl, 1<<sBold)
	w.mark("*")
}

func (telegram) bullet(w *writer, num string) {
	if num == "" {
		w.text("• ")
		return
	}
	w.text(num)
	w.mark(`\`)
	w.text(". ")
}

// quote writes '>' before each line.
func (telegram) quote(w *writer, body string, n int) {
	for i, line := range strings.Split(body, "\n") {
		if i > 0 {
			w.mark("\n")
		}
		w.mark(">")
		w.mark(line)
	}
	w.n += n
}
