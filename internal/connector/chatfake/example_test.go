package chatfake_test

import (
	"context"
	"fmt"

	"agentd/internal/connector/chatfake"
)

// A test says something as a person, lets the bot answer through a fake's
// wire, and waits for the answer without sleeping.
func Example() {
	w := chatfake.New(nil)
	w.AddUser(chatfake.User{ID: "42", Name: "Alice"})
	w.AddChat(chatfake.Chat{ID: "42", Kind: chatfake.DM})
	w.SendAsUser("42", "42", "hello")

	// What a fake does when the bot sends a message:
	go func() {
		if f, _ := w.Call(context.Background(), "sendMessage"); f == nil {
			w.Create(chatfake.Message{Chat: "42"}, "hi Alice", "")
		}
	}()

	w.Wait(context.Background(), func() bool { return len(w.Messages("42")) == 1 })
	fmt.Println(w.Messages("42")[0].Text(), w.Count("sendMessage"))
	// Output: hi Alice 1
}
