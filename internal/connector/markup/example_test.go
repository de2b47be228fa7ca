package markup_test

import (
	"fmt"

	"agentd/internal/connector/markup"
)

func ExampleRender() {
	md := "**Done.** See [the log](https://example.com/log?id=1) and run `make test`."
	fmt.Println(markup.Render(markup.Telegram, md))
	fmt.Println(markup.Render(markup.Discord, md))
	fmt.Println(markup.Render(markup.Slack, md))
	fmt.Println(markup.Render(markup.Plain, md))
	// Output:
	// *Done\.* See [the log](https://example.com/log?id=1) and run `make test`\.
	// **Done.** See [the log](<https://example.com/log?id=1>) and run `make test`.
	// *Done.* See <https://example.com/log?id=1|the log> and run `make test`.
	// Done. See the log (https://example.com/log?id=1) and run make test.
}

func ExampleSplit() {
	md := "First paragraph, short.\n\n```go\nfmt.Println(1)\nfmt.Println(2)\n```"
	for _, part := range markup.Split(markup.Telegram, md, 30, markup.UTF16) {
		fmt.Printf("%s\n--\n", part)
	}
	// Output:
	// First paragraph, short.
	// --
	// ```go
	// fmt.Println(1)
	// --
	// ```go
	// fmt.Println(2)
	// ```
	// --
}
