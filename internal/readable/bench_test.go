package readable_test

import (
	"strings"
	"testing"

	"agentd/internal/readable"
)

// BenchmarkConvert reads a 5 MiB page (web_fetch's default body cap):
// a menu of links and many small blocks of prose.
func BenchmarkConvert(b *testing.B) {
	var sb strings.Builder
	sb.WriteString("<html><head><title>Big</title></head><body><nav>")
	for i := 0; i < 200; i++ {
		sb.WriteString(`<a href="/x">menu item</a> `)
	}
	sb.WriteString("</nav><div id=content>")
	for sb.Len() < 5<<20 {
		sb.WriteString("<div class=p><p>Lorem ipsum dolor sit amet, <a href='/l'>consectetur</a> adipiscing elit, <b>sed do</b> eiusmod tempor.</p><ul><li>one</li><li>two</li></ul></div>\n")
	}
	sb.WriteString("</div></body></html>")
	page := sb.String()
	b.SetBytes(int64(len(page)))
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		if _, err := readable.ConvertString(page, nil); err != nil {
			b.Fatal(err)
		}
	}
}
