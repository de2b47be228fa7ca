package telegram

import (
	"context"
	"errors"
	"strconv"
	"testing"
	"testing/synctest"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"

	"agentd/internal/connector"
	"agentd/internal/connector/chatfake"
	"agentd/internal/connector/telegram/telegramfake"
)

// What people send, through the fake's updates, as the connector sees it.
func TestInbound(t *testing.T) {
	dm := connector.Chat{ID: "42", Kind: connector.ChatDM}
	group := connector.Chat{ID: "-100777", Kind: connector.ChatGroup}
	topic := connector.Chat{ID: "-100777", Thread: "9", Kind: connector.ChatGroup}
	tests := []struct {
		name string
		post func(w *chatfake.World, botMsg string) chatfake.Post
		want connector.Inbound
	}{
		{"dm", func(w *chatfake.World, _ string) chatfake.Post { return w.SendAsUser("42", "42", "hello there") },
			connector.Inbound{Chat: dm, User: "42", Name: "Alice Smith", Text: "hello there"}},
		{"group without mention", func(w *chatfake.World, _ string) chatfake.Post { return w.SendAsUser("-100777", "43", "lunch?") },
			connector.Inbound{Chat: group, User: "43", Name: "Bob", Text: "lunch?"}},
		{"group with mention", func(w *chatfake.World, _ string) chatfake.Post {
			return w.SendAsUser("-100777", "43", "@agentd_bot what is 2+2?")
		}, connector.Inbound{Chat: group, User: "43", Name: "Bob", Text: "what is 2+2?", Mentioned: true}},
		{"mention inside, any case", func(w *chatfake.World, _ string) chatfake.Post {
			return w.SendAsUser("-100777", "43", "hey @Agentd_Bot look")
		}, connector.Inbound{Chat: group, User: "43", Name: "Bob", Text: "hey look", Mentioned: true}},
		{"another bot's mention", func(w *chatfake.World, _ string) chatfake.Post {
			return w.SendAsUser("-100777", "43", "@other_bot hi")
		}, connector.Inbound{Chat: group, User: "43", Name: "Bob", Text: "@other_bot hi"}},
		{"command for the bot", func(w *chatfake.World, _ string) chatfake.Post {
			return w.SendAsUser("-100777", "43", "/reset@agentd_bot now")
		}, connector.Inbound{Chat: group, User: "43", Name: "Bob", Text: "/reset now", Mentioned: true}},
		{"command for another bot", func(w *chatfake.World, _ string) chatfake.Post {
			return w.SendAsUser("-100777", "43", "/reset@other_bot")
		}, connector.Inbound{Chat: group, User: "43", Name: "Bob", Text: "/reset@other_bot"}},
		{"bare command", func(w *chatfake.World, _ string) chatfake.Post { return w.SendAsUser("-100777", "43", "/help") },
			connector.Inbound{Chat: group, User: "43", Name: "Bob", Text: "/help", Mentioned: true}},
		{"reply to the bot", func(w *chatfake.World, botMsg string) chatfake.Post {
			return w.Send(chatfake.Post{Chat: "-100777", User: "43", Text: "and then?", ReplyTo: botMsg})
		}, connector.Inbound{Chat: group, User: "43", Name: "Bob", Text: "and then?", ReplyToBot: true}},
		{"forum topic", func(w *chatfake.World, _ string) chatfake.Post {
			return w.Send(chatfake.Post{Chat: "-100777", Thread: "9", User: "43", Text: "@agentd_bot in a topic"})
		}, connector.Inbound{Chat: topic, User: "43", Name: "Bob", Text: "in a topic", Mentioned: true}},
		{"photo with caption", func(w *chatfake.World, _ string) chatfake.Post {
			return w.SendAsUser("42", "42", "what is this?", chatfake.File{Name: "x.jpg", Type: "image/jpeg", Data: []byte("JPEGDATA")})
		}, connector.Inbound{Chat: dm, User: "42", Name: "Alice Smith", Text: "what is this?",
			Attachments: []connector.Attachment{{Name: "photo.jpg", Type: "image/jpeg", Size: 8}}}},
		{"document", func(w *chatfake.World, _ string) chatfake.Post {
			return w.SendAsUser("42", "42", "", chatfake.File{Name: "notes.txt", Type: "text/plain", Data: []byte("notes")})
		}, connector.Inbound{Chat: dm, User: "42", Name: "Alice Smith",
			Attachments: []connector.Attachment{{Name: "notes.txt", Type: "text/plain", Size: 5}}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				r := newRig(t, rigOptions{inMemory: true})
				bm := r.w.Create(chatfake.Message{Chat: "-100777"}, "I am the bot", "")
				b := newInbox()
				stop := r.run(t, b)
				p := tt.post(r.w, bm.ID)
				synctest.Wait()
				stop()
				got := b.all()
				if len(got) != 1 {
					t.Fatalf("handed over %d", len(got))
				}
				want := tt.want
				want.Key = "tg:" + strconv.FormatInt(telegramfake.FirstUpdate+p.Seq-1, 10)
				want.MessageID = p.ID
				want.At = p.At.Truncate(1e9)
				if diff := cmp.Diff(want, got[0], cmpopts.IgnoreFields(connector.Attachment{}, "ID")); diff != "" {
					t.Fatalf("inbound (-want +got):\n%s", diff)
				}
			})
		})
	}
}

func TestFetch(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		r := newRig(t, rigOptions{inMemory: true})
		b := newInbox()
		stop := r.run(t, b)
		r.w.SendAsUser("42", "42", "look", chatfake.File{Name: "x.jpg", Type: "image/jpeg", Data: []byte("JPEGDATA")})
		synctest.Wait()
		stop()
		a := b.all()[0].Attachments[0]
		ctx := context.Background()
		data, typ, err := r.p.Fetch(ctx, a, 100)
		if err != nil || string(data) != "JPEGDATA" || typ != "image/jpeg" {
			t.Fatalf("Fetch = %q %q %v", data, typ, err)
		}
		if _, _, err := r.p.Fetch(ctx, a, 4); !errors.Is(err, connector.ErrTooLong) {
			t.Fatalf("Fetch over the cap: %v", err)
		}
		a.Size = 0 // a size not announced: the download itself is capped
		if _, _, err := r.p.Fetch(ctx, a, 4); !errors.Is(err, connector.ErrTooLong) {
			t.Fatalf("Fetch over the cap, size unknown: %v", err)
		}
		if _, _, err := r.p.Fetch(ctx, connector.Attachment{ID: "nope"}, 100); !errors.Is(err, connector.ErrPermanent) {
			t.Fatalf("Fetch of no file: %v", err)
		}
	})
}

func TestStripMentions(t *testing.T) {
	me := user{ID: 7, Username: "bot"}
	tests := []struct {
		text      string
		ents      []entity
		want      string
		mentioned bool
	}{
		{"😀 @bot hi", []entity{{Type: "mention", Offset: 3, Length: 4}}, "😀 hi", true},
		{"hi @bot", []entity{{Type: "mention", Offset: 3, Length: 4}}, "hi", true},
		{"hi Bot", []entity{{Type: "text_mention", Offset: 3, Length: 3, User: &user{ID: 7}}}, "hi Bot", true},
		{"hi Ann", []entity{{Type: "text_mention", Offset: 3, Length: 3, User: &user{ID: 8}}}, "hi Ann", false},
		{"x /a@bot", []entity{{Type: "bot_command", Offset: 2, Length: 6}}, "x /a", true},
		{"x /a", []entity{{Type: "bot_command", Offset: 2, Length: 2}}, "x /a", false},
		{"bad", []entity{{Type: "mention", Offset: 2, Length: 9}}, "bad", false},
	}
	for _, tt := range tests {
		got, m := stripMentions(tt.text, tt.ents, me)
		if got != tt.want || m != tt.mentioned {
			t.Errorf("stripMentions(%q) = %q, %v; want %q, %v", tt.text, got, m, tt.want, tt.mentioned)
		}
	}
}
