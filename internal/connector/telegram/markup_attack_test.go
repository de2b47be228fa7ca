package telegram

import (
	"testing"

	"agentd/internal/connector/markup"
	"agentd/internal/connector/telegram/telegramfake"
)

// Replies written to break MarkdownV2 (unbalanced markers, escapes at the
// end, markers inside links and code, nested spans, Telegram's reserved
// characters everywhere): each renders to text Telegram parses, so no
// reply depends on the plain fallback; the fallback itself is plain text
// with no parse_mode (TestSend, "markup refused").
func TestAttackMarkdownV2Injection(t *testing.T) {
	for _, md := range []string{
		"*bold", "_it", "__u", "~s", "||spoiler", "`code", "```\nno end",
		"a\\", "\\", "[link](http://x/)", "[a](http://x/\\)", "[a](http://x/`)", "[x](javascript:alert(1))",
		"![img](http://x/a.png) tail *", "**_nested*_**", "> quote *open", "||*_~`|",
		"_*[]()~`>#+-=|{}.!\\", "1. a\n2) b\n- c", "# h *x", "| a | b |\n|---|---|\n| *c | d_ |",
		"```go\n`\\ \n```", "`a\\`b`", "<b>html</b>", "@everyone [x](tg://user?id=1)",
	} {
		out := markup.Render(markup.Telegram, md)
		if _, _, err := telegramfake.ParseMarkdownV2(out); err != nil {
			t.Errorf("%q renders to %q, which Telegram refuses: %v", md, out, err)
		}
	}
}
