package readable_test

import (
	"fmt"
	"net/url"

	"agentd/internal/readable"
)

func ExampleConvertString() {
	base, _ := url.Parse("https://example.com/news/")
	p, _ := readable.ConvertString(`<html><head><title>Bridge opens</title></head><body>
<nav><a href="/">Home</a> <a href="/world">World</a></nav>
<article><h1>Bridge opens</h1><p>The bridge opened on <b>Thursday</b>. <a href="report.pdf">The report</a>.</p>
<ul><li>Trams</li><li>Bikes</li></ul></article>
<footer>© Example</footer><script>track()</script></body></html>`, base)
	fmt.Println(p.Title)
	fmt.Println(p.Markdown)
	// Output:
	// Bridge opens
	// # Bridge opens
	//
	// The bridge opened on **Thursday**. [The report](https://example.com/news/report.pdf).
	//
	// - Trams
	// - Bikes
}
