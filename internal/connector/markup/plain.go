package markup

// plain writes the text without markers, for a platform that shows no
// markup or a message the platform refused as markup: links as
// "text (url)", bullets "•", code as it is, a table laid out in columns.
type plain struct{}

func (plain) text(w *writer, s string)            { w.text(s) }
func (plain) code(w *writer, s string)            { w.text(s) }
func (plain) pre(w *writer, _, body string)       { w.text(body) }
func (plain) open(*writer, spanKind)              {}
func (plain) close(*writer, spanKind)             {}
func (plain) quote(w *writer, body string, _ int) { w.text(body) }

func (plain) link(w *writer, r renderer, s span) {
	if isBare(s) {
		w.text(s.url)
		return
	}
	inline(w, r, linkText(s), 0)
	if t := plainInline(linkText(s)); t != s.url {
		w.text(" (" + s.url + ")")
	}
}

func (plain) heading(w *writer, r renderer, _ int, inl []span) { inline(w, r, inl, 0) }

func (plain) bullet(w *writer, num string) {
	if num == "" {
		w.text("• ")
		return
	}
	w.text(num + ". ")
}
