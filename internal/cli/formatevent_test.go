package cli

import (
	"strings"
	"testing"

	"agentd/internal/event"
)

// A delivery event is one line that says what became of the reply: not
// delivered (after how many tries, and why), perhaps shown twice, retried.
func TestFormatEventDelivery(t *testing.T) {
	for _, tc := range []struct {
		d    event.DeliveryData
		want string
	}{
		{event.DeliveryData{Op: event.DeliveryFailed, Connector: "tg-main", Platform: "telegram", Turn: 4, Outbox: 9, Tries: 10, Error: "chat not found"},
			"✗ reply not delivered to telegram tg-main after 10 tries: chat not found"},
		{event.DeliveryData{Op: event.DeliveryFailed, Connector: "dc", Platform: "discord", Turn: 4, Tries: 1},
			"✗ reply not delivered to discord dc after 1 try"},
		{event.DeliveryData{Op: event.DeliveryFailed, Connector: "sl", Platform: "slack", Tries: 3, Error: "line one\nline two"},
			"✗ notice not delivered to slack sl after 3 tries: line one⏎line two"},
		{event.DeliveryData{Op: event.DeliveryInDoubt, Connector: "tg-main", Platform: "telegram", Turn: 4},
			"? reply to telegram tg-main may show twice (agentd stopped while sending)"},
		{event.DeliveryData{Op: event.DeliveryRetried, Connector: "tg-main", Platform: "telegram", Turn: 4},
			"↻ delivery of the reply to telegram tg-main retried"},
		{event.DeliveryData{Op: "later", Connector: "x", Platform: "p"},
			`{"op":"later","connector":"x","platform":"p","turn":0,"outbox":0,"tries":0}`},
	} {
		line := FormatEvent(event.New(1, tc.d.Turn, event.Delivery, tc.d))
		if !strings.HasSuffix(line, " "+tc.want) || strings.Contains(line, "\n") {
			t.Errorf("FormatEvent(%+v) =\n%q\nwant it to end in\n%q", tc.d, line, tc.want)
		}
	}
}
