package discord_test

import (
	"context"
	"fmt"
	"net/http/httptest"

	"agentd/internal/connector"
	"agentd/internal/connector/chatfake"
	"agentd/internal/connector/discord"
	"agentd/internal/connector/discord/discordfake"
)

// A bot against a fake Discord: a person's DM reaches the handler, and the
// reply is created with a nonce and edited in place.
func Example() {
	fake := discordfake.New(nil)
	defer fake.Close()
	srv := httptest.NewServer(fake)
	defer srv.Close()
	fake.SetBase(srv.URL)

	p, caps, _ := discord.New(connector.Config{Name: "dc", Token: fake.Token(), APIURL: fake.APIURL()},
		connector.PlatformDeps{HTTP: srv.Client()})
	got := make(chan connector.Inbound, 1)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error)
	go func() {
		done <- p.Run(ctx, connector.HandlerFunc(func(_ context.Context, m connector.Inbound) error {
			got <- m
			return nil
		}))
	}()
	fake.Wait(ctx, fake.Connected)

	fake.SendAsUser(discordfake.UserMessage{Channel: "300", Author: chatfake.User{ID: "42", Name: "Alice"}, Content: "hi"})
	in := <-got
	fmt.Println(in.Chat.Kind, in.Name+":", in.Text)

	s, _ := p.Send(ctx, connector.Outgoing{Chat: in.Chat, Text: "Hel", ReplyTo: in.MessageID, Nonce: "r1"})
	_ = p.Edit(ctx, connector.Outgoing{Chat: in.Chat, Text: "Hello, Alice"}, s.ID)
	m := fake.BotMessages("300")[0]
	fmt.Println(m.Text(), m.Edits(), caps.MaxText)

	cancel()
	<-done
	// Output:
	// dm Alice: hi
	// Hello, Alice 1 2000
}
