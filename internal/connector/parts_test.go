package connector

import (
	"net/url"
	"strings"
	"testing"
)

// FuzzImageLine: a line read as an image is exactly ![caption](URL) with
// an http(s) URL net/url parses, and nothing else is.
func FuzzImageLine(f *testing.F) {
	for _, s := range []string{"![a](https://x.org/a.png)", " ![](http://h/p) ", "![a](ftp://x/y)", "![a](https://x.org/a b)",
		"text ![a](https://x.org/a.png)", "![a]](https://x.org/)", "![a](https://x.org/a.png) more", "![a](https://)"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, line string) {
		file, ok := imageLine(line)
		if !ok {
			return
		}
		if got := "![" + file.Caption + "](" + file.URL + ")"; got != strings.TrimSpace(line) {
			t.Fatalf("%q read as %q", line, got)
		}
		u, err := url.Parse(file.URL)
		if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
			t.Fatalf("%q: URL %q", line, file.URL)
		}
	})
}
