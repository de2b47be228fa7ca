package storetest

import (
	"testing"

	"github.com/google/go-cmp/cmp"

	"agentd/internal/event"
	"agentd/internal/store"
)

// An inbox item keeps its images until its turn takes them, across a
// reopening of the store.
func testInboxImages(t *testing.T, x *suite) {
	path := x.name()
	s := x.open(t, path)
	a := mustSession(t, s, "assistant", "chat:alice")
	images := []event.ImageRef{{MIMEType: "image/png", Size: 4, Data: []byte{0x89, 'P', 'N', 'G'}}, {MIMEType: "image/gif", Size: 3, Data: []byte("GIF")}}
	with := mustEnqueue(t, s, store.InboxItem{Session: a.ID, Kind: event.Input, Text: "look", Images: images})
	without := mustEnqueue(t, s, store.InboxItem{Session: a.ID, Kind: event.Input, Text: "plain"})
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	s = x.open(t, path)
	got, err := s.InboxItem(t.Context(), with.ID)
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(images, got.Images); diff != "" {
		t.Errorf("images read back (-want +got):\n%s", diff)
	}
	pending, err := s.Pending(t.Context(), a.ID)
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff([]store.InboxItem{with, without}, pending); diff != "" {
		t.Errorf("Pending (-want +got):\n%s", diff)
	}
}
