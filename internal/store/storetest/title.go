package storetest

import (
	"errors"
	"testing"

	"agentd/internal/event"
	"agentd/internal/store"
)

// A session is titled from its first input when that input is logged; a
// later input, a system message or a silent input does not change it.
func testTitleFromFirstInput(t *testing.T, x *suite) {
	s := x.newStore(t)
	ctx := t.Context()
	sess := mustSession(t, s, "a", "k")
	if sess.Title != "" || sess.TitleBy != "" {
		t.Fatalf("a new session has title %q by %q", sess.Title, sess.TitleBy)
	}
	mustCommit(t, s, &store.Batch{Session: sess.ID, Events: []event.Event{
		event.New(sess.ID, 1, event.SystemMessage, event.InputData{Text: "from the system"}),
		event.New(sess.ID, 1, event.Input, event.InputData{Text: "   ", Source: "cli"}),
	}})
	if got, _ := s.SessionByID(ctx, sess.ID); got.Title != "" {
		t.Fatalf("titled %q from a system message or a blank input", got.Title)
	}
	mustCommit(t, s, &store.Batch{Session: sess.ID, Events: []event.Event{
		input(sess.ID, 2, "\n  Plan my   trip to Lisbon\nin May, with a budget"),
		text(sess.ID, 2, "sure"),
	}})
	mustCommit(t, s, &store.Batch{Session: sess.ID, Events: []event.Event{input(sess.ID, 3, "and book a hotel")}})
	got, err := s.SessionByAddress(ctx, "a", "k")
	if err != nil {
		t.Fatal(err)
	}
	if got.Title != "Plan my trip to Lisbon" || got.TitleBy != store.TitleByInput {
		t.Errorf("title %q by %q; want the first input's first line, by %s", got.Title, got.TitleBy, store.TitleByInput)
	}
	list, err := s.Sessions(ctx, store.SessionFilter{})
	if err != nil || len(list) != 1 || list[0].Title != got.Title {
		t.Errorf("Sessions = %+v, %v; want the title listed", list, err)
	}
}

// SetTitle replaces a title only with one from a later source: a model's
// title replaces the first message's, a person's replaces either, and
// nothing but a person replaces a person's.
func testSetTitle(t *testing.T, x *suite) {
	s := x.newStore(t)
	ctx := t.Context()
	sess := mustSession(t, s, "a", "k")
	mustCommit(t, s, &store.Batch{Session: sess.ID, Events: []event.Event{input(sess.ID, 1, "hello there")}})
	before, _ := s.SessionByID(ctx, sess.ID)
	type step struct {
		title, by string
		set       bool
		want      string
	}
	for _, st := range []step{
		{"Greetings", store.TitleByModel, true, "Greetings"},
		{"again", store.TitleByInput, false, "Greetings"},
		{"  My\nchat ", store.TitleByUser, true, "My chat"},
		{"Model's", store.TitleByModel, false, "My chat"},
		{"Renamed", store.TitleByUser, true, "Renamed"},
	} {
		set, err := s.SetTitle(ctx, sess.ID, st.title, st.by)
		if err != nil || set != st.set {
			t.Fatalf("SetTitle(%q, %s) = %v, %v; want %v", st.title, st.by, set, err, st.set)
		}
		got, _ := s.SessionByID(ctx, sess.ID)
		if got.Title != st.want {
			t.Fatalf("after SetTitle(%q, %s): title %q, want %q", st.title, st.by, got.Title, st.want)
		}
	}
	if got, _ := s.SessionByID(ctx, sess.ID); !got.UpdatedAt.Equal(before.UpdatedAt) || got.LastSeq != before.LastSeq {
		t.Errorf("naming the session counted as activity: %+v, before %+v", got, before)
	}
	for _, bad := range []struct{ title, by string }{{" \n ", store.TitleByUser}, {string(make([]rune, store.MaxTitle+1)), store.TitleByUser}, {"x", "someone"}} {
		if _, err := s.SetTitle(ctx, sess.ID, bad.title, bad.by); !errors.Is(err, store.ErrInvalid) {
			t.Errorf("SetTitle(%q, %q) = %v, want ErrInvalid", bad.title, bad.by, err)
		}
	}
	if _, err := s.SetTitle(ctx, sess.ID+100, "x", store.TitleByUser); !errors.Is(err, store.ErrNotFound) {
		t.Errorf("SetTitle of no session = %v, want ErrNotFound", err)
	}
}
