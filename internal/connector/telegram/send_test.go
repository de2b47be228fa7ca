package telegram

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"agentd/internal/connector"
	"agentd/internal/connector/chatfake"
)

func TestSendEditTyping(t *testing.T) {
	r := newRig(t, rigOptions{})
	ctx := context.Background()
	dm := connector.Chat{ID: "42", Kind: connector.ChatDM}
	sent, err := r.p.Send(ctx, connector.Outgoing{Chat: dm, Text: `*Hi* Alice\.`})
	if err != nil {
		t.Fatal(err)
	}
	if err := r.p.Edit(ctx, connector.Outgoing{Chat: dm, Text: `*Hi* Alice\.`}, sent.ID); err != nil {
		t.Fatalf("an edit to the same text: %v", err)
	}
	if err := r.p.Edit(ctx, connector.Outgoing{Chat: dm, Text: `*Hi* Alice\. How are you?`}, sent.ID); err != nil {
		t.Fatal(err)
	}
	if err := r.p.Edit(ctx, connector.Outgoing{Chat: dm, Text: "Hi Alice, plain.", Plain: true}, sent.ID); err != nil {
		t.Fatal(err)
	}
	if err := r.p.Typing(ctx, dm); err != nil {
		t.Fatal(err)
	}
	topic := connector.Chat{ID: "-100777", Thread: "5", Kind: connector.ChatGroup}
	if _, err := r.p.Send(ctx, connector.Outgoing{Chat: topic, Text: "in a topic", Plain: true, ReplyTo: "999"}); err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, m := range r.w.Messages("") {
		for _, v := range m.Versions {
			got = append(got, m.Chat+"/"+m.Thread+" "+v.Markup+": "+v.Text)
		}
	}
	want := []string{
		`42/ MarkdownV2: *Hi* Alice\.`,
		`42/ MarkdownV2: *Hi* Alice\. How are you?`,
		`42/ : Hi Alice, plain.`,
		`-100777/5 : in a topic`,
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Fatalf("messages (-want +got):\n%s", diff)
	}
	if n := r.w.Count("sendChatAction"); n != 1 {
		t.Fatalf("sendChatAction calls = %d", n)
	}
}

func TestSendErrors(t *testing.T) {
	dm := connector.Chat{ID: "42", Kind: connector.ChatDM}
	tests := []struct {
		name  string
		setup func(r *rig)
		m     connector.Outgoing
		is    error
		retry time.Duration
	}{
		{name: "chat not found", m: connector.Outgoing{Chat: connector.Chat{ID: "404"}, Text: "x"}, is: connector.ErrPermanent},
		{name: "blocked", setup: func(r *rig) { r.fake.Block("42") }, m: connector.Outgoing{Chat: dm, Text: "x"}, is: connector.ErrPermanent},
		{name: "markup refused", m: connector.Outgoing{Chat: dm, Text: "end."}, is: connector.ErrMarkup},
		{name: "too long", m: connector.Outgoing{Chat: dm, Text: strings.Repeat("é", 4097), Plain: true}, is: connector.ErrTooLong},
		{name: "too long in UTF-16", m: connector.Outgoing{Chat: dm, Text: strings.Repeat("😀", 2049), Plain: true}, is: connector.ErrTooLong},
		{name: "topic of a chat without topics", m: connector.Outgoing{Chat: connector.Chat{ID: "42", Thread: "3"}, Text: "x"}, is: connector.ErrPermanent},
		{name: "429", setup: func(r *rig) {
			r.w.Fail("sendMessage", 1, chatfake.Fault{Status: 429, RetryAfter: 7 * time.Second})
		}, m: connector.Outgoing{Chat: dm, Text: "x"}, retry: 7 * time.Second},
		{name: "server error is retried", setup: func(r *rig) {
			r.w.Fail("sendMessage", 1, chatfake.Fault{Status: 502, Body: "Bad Gateway"})
		}, m: connector.Outgoing{Chat: dm, Text: "x"}},
		{name: "wrong token", setup: func(r *rig) { r.p.c.token = "1:wrong" }, m: connector.Outgoing{Chat: dm, Text: "x"}, is: connector.ErrAuth},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := newRig(t, rigOptions{})
			if tt.setup != nil {
				tt.setup(r)
			}
			_, err := r.p.Send(context.Background(), tt.m)
			if err == nil {
				t.Fatal("Send succeeded")
			}
			var ra *connector.RetryAfter
			switch {
			case tt.retry > 0:
				if !errors.As(err, &ra) || ra.D != tt.retry {
					t.Fatalf("err = %v, want a retry after %s", err, tt.retry)
				}
			case tt.is != nil:
				if !errors.Is(err, tt.is) {
					t.Fatalf("err = %v, want %v", err, tt.is)
				}
			default:
				for _, s := range []error{connector.ErrAuth, connector.ErrConfig, connector.ErrPermanent, connector.ErrMarkup, connector.ErrTooLong} {
					if errors.Is(err, s) {
						t.Fatalf("err = %v is %v; want one retried", err, s)
					}
				}
			}
			if strings.Contains(err.Error(), testToken) {
				t.Fatalf("the token is in %q", err)
			}
			if len(r.w.Messages("")) != 0 {
				t.Fatal("a refused message was made")
			}
		})
	}
}

func TestEditErrors(t *testing.T) {
	r := newRig(t, rigOptions{})
	ctx := context.Background()
	dm := connector.Chat{ID: "42", Kind: connector.ChatDM}
	if err := r.p.Edit(ctx, connector.Outgoing{Chat: dm, Text: "x"}, "12345"); !errors.Is(err, connector.ErrPermanent) {
		t.Fatalf("edit of no message: %v", err)
	}
	sent, err := r.p.Send(ctx, connector.Outgoing{Chat: dm, Text: "x", Plain: true})
	if err != nil {
		t.Fatal(err)
	}
	if err := r.p.Edit(ctx, connector.Outgoing{Chat: dm, Text: "a_b"}, sent.ID); !errors.Is(err, connector.ErrMarkup) {
		t.Fatalf("edit with bad markup: %v", err)
	}
	// The same text as MarkdownV2 that reads the same: Telegram compares
	// what a reader sees.
	if err := r.p.Edit(ctx, connector.Outgoing{Chat: dm, Text: "x"}, sent.ID); err != nil {
		t.Fatalf("an edit that changes nothing: %v", err)
	}
	if m, _ := r.w.Message("42", sent.ID); m.Edits() != 0 {
		t.Fatalf("edits = %d", m.Edits())
	}
}

// A connection dropped by the network: the error names the method and the
// cause, never the token (it is in the URL's path, which net/http quotes).
func TestTokenNeverInErrors(t *testing.T) {
	r := newRig(t, rigOptions{})
	ctx := context.Background()
	dm := connector.Chat{ID: "42", Kind: connector.ChatDM}
	r.w.Fail("sendMessage", 1, chatfake.Fault{Drop: true})
	_, err := r.p.Send(ctx, connector.Outgoing{Chat: dm, Text: "x"})
	if err == nil {
		t.Fatal("a dropped call succeeded")
	}
	if strings.Contains(err.Error(), testToken) || strings.Contains(err.Error(), "AAsecret") {
		t.Fatalf("the token is in %q", err)
	}
	if !strings.Contains(err.Error(), "sendMessage") || !strings.Contains(err.Error(), "${env:TG_TOKEN}") {
		t.Fatalf("err = %q: want the method and the token's reference", err)
	}

	// The poll's errors, logged and reported as the state, hold no token.
	var states []string
	r.p.state = func(state, bot string, err error) {
		if err != nil {
			states = append(states, err.Error())
		}
	}
	r.w.Fail("getUpdates", 1, chatfake.Fault{Drop: true})
	b := newInbox()
	stop := r.run(t, b)
	r.w.SendAsUser("42", "42", "hello")
	b.next(t, ctx)
	stop()
	if len(states) == 0 {
		t.Fatal("the dropped poll was not reported")
	}
	for _, s := range append(states, r.logs.String()) {
		if strings.Contains(s, testToken) {
			t.Fatalf("the token is in %q", s)
		}
	}
}

func TestUpload(t *testing.T) {
	r := newRig(t, rigOptions{})
	ctx := context.Background()
	dm := connector.Chat{ID: "42", Kind: connector.ChatDM}
	if _, err := r.p.Upload(ctx, dm, connector.File{Name: "chart.png", Type: "image/png", Data: []byte("\x89PNG...."), Caption: "the chart"}); err != nil {
		t.Fatal(err)
	}
	if _, err := r.p.Upload(ctx, dm, connector.File{URL: "https://example.test/report.pdf", Type: "application/pdf"}); err != nil {
		t.Fatal(err)
	}
	if _, err := r.p.Upload(ctx, connector.Chat{ID: "404"}, connector.File{Name: "a.txt", Type: "text/plain", Data: []byte("a")}); !errors.Is(err, connector.ErrPermanent) {
		t.Fatalf("upload to no chat: %v", err)
	}
	ms := r.w.Messages("42")
	if len(ms) != 2 || ms[0].File == nil || string(ms[0].File.Data) != "\x89PNG...." || ms[0].File.Name != "chart.png" || ms[0].Text() != "the chart" {
		t.Fatalf("photo = %+v", ms)
	}
	if ms[1].File == nil || ms[1].File.URL != "https://example.test/report.pdf" {
		t.Fatalf("document = %+v", ms[1])
	}
	c := r.w.Counts()
	if c["sendPhoto"] != 1 || c["sendDocument"] != 2 {
		t.Fatalf("counts = %v", c)
	}
}
