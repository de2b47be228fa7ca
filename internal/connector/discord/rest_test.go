package discord

import (
	"errors"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"agentd/internal/connector"
	"agentd/internal/connector/chatfake"
	"agentd/internal/connector/discord/discordfake"
)

const (
	routeCreate = "POST /channels/{id}/messages"
	routeEdit   = "PATCH /channels/{id}/messages/{id}"
)

func dm(id string) connector.Chat { return connector.Chat{ID: id, Kind: connector.ChatDM} }

func TestSendNonceMakesOneMessage(t *testing.T) {
	r := newRig(t, &discordfake.Options{BucketLimit: 100}, nil)
	r.fake.AddChannel("300", "")
	q := r.fake.SendAsUser(discordfake.UserMessage{Channel: "300", Author: alice, Content: "hi @everyone"})
	out := connector.Outgoing{Chat: dm("300"), Text: "hello @everyone", ReplyTo: q, Nonce: "outbox-17-part-0"}
	a, err := r.p.Send(t.Context(), out)
	if err != nil {
		t.Fatal(err)
	}
	// The same create again (agentd died before recording the id): Discord
	// returns the first message.
	b, err := r.p.Send(t.Context(), out)
	if err != nil {
		t.Fatal(err)
	}
	if a.ID != b.ID || a.ID == "" {
		t.Errorf("ids %q and %q, want one id", a.ID, b.ID)
	}
	bots := r.fake.BotMessages("300")
	if len(bots) != 1 {
		t.Fatalf("bot messages = %d, want 1", len(bots))
	}
	m := bots[0]
	if m.Text() != "hello @everyone" || m.ReplyTo != q || m.Meta != `{"parse":[]}` || m.Nonce != "outbox-17-part-0" {
		t.Errorf("message = %+v", m)
	}
}

func TestEditTypingUpload(t *testing.T) {
	r := newRig(t, &discordfake.Options{BucketLimit: 100}, nil)
	r.fake.AddChannel("300", "")
	s, err := r.p.Send(t.Context(), connector.Outgoing{Chat: dm("300"), Text: "Hel"})
	if err != nil {
		t.Fatal(err)
	}
	for _, text := range []string{"Hello", "Hello", "Hello there"} {
		if err := r.p.Edit(t.Context(), connector.Outgoing{Chat: dm("300"), Text: text}, s.ID); err != nil {
			t.Fatal(err)
		}
	}
	if err := r.p.Typing(t.Context(), dm("300")); err != nil {
		t.Fatal(err)
	}
	u, err := r.p.Upload(t.Context(), dm("300"), connector.File{Name: "a.png", Type: "image/png", Data: []byte("\x89PNG..."), Caption: "a chart"})
	if err != nil {
		t.Fatal(err)
	}
	bots := r.fake.BotMessages("300")
	if len(bots) != 2 || bots[1].ID != u.ID {
		t.Fatalf("bot messages = %+v", bots)
	}
	var texts []string
	for _, v := range bots[0].Versions {
		texts = append(texts, v.Text)
	}
	if d := cmp.Diff([]string{"Hel", "Hello", "Hello there"}, texts); d != "" {
		t.Errorf("versions (-want +got):\n%s", d)
	}
	if f := bots[1].File; f == nil || f.Name != "a.png" || f.Type != "image/png" || string(f.Data) != "\x89PNG..." || bots[1].Text() != "a chart" {
		t.Errorf("upload = %+v", bots[1])
	}
	if n := r.fake.Calls(routeEdit); n != 3 {
		t.Errorf("edit calls = %d, want 3 (the same text is accepted)", n)
	}
	if n := r.fake.Calls("POST /channels/{id}/typing"); n != 1 {
		t.Errorf("typing calls = %d", n)
	}
}

func TestRefusalsMapToSentinels(t *testing.T) {
	r := newRig(t, &discordfake.Options{BucketLimit: 100}, nil)
	r.fake.AddChannel("300", "")
	_, err := r.p.Send(t.Context(), connector.Outgoing{Chat: dm("999"), Text: "x"})
	if !errors.Is(err, connector.ErrPermanent) {
		t.Errorf("unknown channel: %v, want ErrPermanent", err)
	}
	_, err = r.p.Send(t.Context(), connector.Outgoing{Chat: dm("300"), Text: strings.Repeat("é", 2001)})
	if !errors.Is(err, connector.ErrTooLong) {
		t.Errorf("2001 runes: %v, want ErrTooLong", err)
	}
	if _, err := r.p.Send(t.Context(), connector.Outgoing{Chat: dm("300"), Text: strings.Repeat("é", 2000)}); err != nil {
		t.Errorf("2000 runes: %v", err)
	}
	r.fake.Fail(routeCreate, 1, chatfake.Fault{Status: http.StatusForbidden,
		Body: "Missing Permissions for token " + r.cfg.Token})
	_, err = r.p.Send(t.Context(), connector.Outgoing{Chat: dm("300"), Text: "x"})
	if !errors.Is(err, connector.ErrPermanent) || strings.Contains(err.Error(), r.cfg.Token) || !strings.Contains(err.Error(), ref) {
		t.Errorf("403 naming the token: %v, want ErrPermanent with the token redacted", err)
	}
}

func TestTooManyRequests(t *testing.T) {
	r := newRig(t, &discordfake.Options{BucketLimit: 100}, nil)
	r.fake.AddChannel("300", "")
	r.fake.Fail(routeCreate, 1, chatfake.Fault{Status: http.StatusTooManyRequests, RetryAfter: 1500 * time.Millisecond})
	_, err := r.p.Send(t.Context(), connector.Outgoing{Chat: dm("300"), Text: "x"})
	ra, ok := errors.AsType[*connector.RetryAfter](err)
	if !ok || ra.D != 1500*time.Millisecond || ra.Global {
		t.Fatalf("Send = %v, want a RetryAfter of 1.5s, not global", err)
	}
	// The bucket is paused: the next create waits; an edit does not.
	if d, _ := r.p.limits.reserve(channelRoute("POST", "300", "/messages"), time.Now()); d <= 0 {
		t.Errorf("the create route is not paused after a 429")
	}
	if d, _ := r.p.limits.reserve(channelRoute("POST", "301", "/messages"), time.Now()); d > 0 {
		t.Errorf("another channel's bucket is paused by this one's 429")
	}

	r.fake.Fail(routeEdit, 1, chatfake.Fault{Status: http.StatusTooManyRequests, RetryAfter: 2 * time.Second, Global: true})
	err = r.p.Edit(t.Context(), connector.Outgoing{Chat: dm("300"), Text: "y"}, "1")
	if ra, ok := errors.AsType[*connector.RetryAfter](err); !ok || !ra.Global {
		t.Fatalf("Edit = %v, want a global RetryAfter", err)
	}
	if d, _ := r.p.limits.reserve(route{key: "GET /gateway/bot"}, time.Now()); d <= 0 {
		t.Errorf("a global 429 does not pause every route")
	}
}

func TestBucketHeadersMakeCallsWait(t *testing.T) {
	// Two creates a window: the third waits for the bucket's reset instead
	// of drawing a 429.
	r := newRig(t, &discordfake.Options{BucketLimit: 2, BucketWindow: 300 * time.Millisecond}, nil)
	r.fake.AddChannel("300", "")
	for i := range 5 {
		if _, err := r.p.Send(t.Context(), connector.Outgoing{Chat: dm("300"), Text: "n"}); err != nil {
			t.Fatalf("send %d: %v", i, err)
		}
	}
	if n := len(r.fake.BotMessages("300")); n != 5 {
		t.Errorf("bot messages = %d", n)
	}
	if n := r.fake.Calls(routeCreate); n != 5 {
		t.Errorf("create calls = %d, want 5 (none refused)", n)
	}
}

func TestFetchAttachment(t *testing.T) {
	r := newRig(t, nil, nil)
	r.run(r.h)
	r.wait("connected", r.fake.Connected)
	r.fake.SendAsUser(discordfake.UserMessage{Channel: "300", Author: alice, Content: "look",
		Files: []chatfake.File{{Name: "cat.png", Type: "image/png", Data: []byte("PNGDATA")}}})
	in := r.h.waitFor(t, 1)[0]
	if len(in.Attachments) != 1 {
		t.Fatalf("attachments = %+v", in.Attachments)
	}
	data, typ, err := r.p.Fetch(t.Context(), in.Attachments[0], 1<<20)
	if err != nil || string(data) != "PNGDATA" || typ != "image/png" {
		t.Errorf("Fetch = %q %q %v", data, typ, err)
	}
	if _, _, err := r.p.Fetch(t.Context(), in.Attachments[0], 3); !errors.Is(err, connector.ErrTooLong) {
		t.Errorf("Fetch over max = %v, want ErrTooLong", err)
	}
}

func TestInvalidRequestBudgetDegrades(t *testing.T) {
	r := newRig(t, &discordfake.Options{BucketLimit: 100}, nil)
	r.fake.AddChannel("300", "")
	for range invalidStop {
		r.p.limits.update(channelRoute("POST", "300", "/messages"), nil, http.StatusForbidden, nil, time.Now())
	}
	_, err := r.p.Send(t.Context(), connector.Outgoing{Chat: dm("300"), Text: "x"})
	if ra, ok := errors.AsType[*connector.RetryAfter](err); !ok || !ra.Global {
		t.Fatalf("Send past the budget = %v, want a global RetryAfter", err)
	}
	if n := r.fake.Calls(routeCreate); n != 0 {
		t.Errorf("create calls = %d, want none past the budget", n)
	}
	states := r.stateLog()
	if len(states) == 0 || !strings.HasPrefix(states[len(states)-1], connector.StateDegraded) {
		t.Errorf("states = %q, want degraded last", states)
	}
}
