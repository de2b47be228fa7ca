package gateway

import (
	"context"
	"errors"
	"net/http"
	"unicode/utf8"

	"agentd/internal/store"
)

// Titles is the optional ability of Sessions to name a session (the
// SQLite store has it).
type Titles interface {
	SessionByAddress(ctx context.Context, agent, key string) (store.Session, error)
	// SetTitle sets a session's title unless one from a later source
	// stands (see store.TitleByInput); it reports whether it did.
	SetTitle(ctx context.Context, id int64, title, by string) (bool, error)
}

// SessionPatch is the body of PATCH /v1/sessions/{agent}/{key}.
type SessionPatch struct {
	// Title is the session's new title: one line (white space is folded),
	// at most store.MaxTitle characters.
	Title *string `json:"title"`
}

// patchSession names a session for people. The title is a person's: a
// model's title never replaces it.
func (s *Server) patchSession(w http.ResponseWriter, r *http.Request) {
	ts, ok := s.o.Sessions.(Titles)
	if !ok {
		s.unavailable(w, "naming sessions")
		return
	}
	var p SessionPatch
	if !s.decode(w, r, &p) {
		return
	}
	if p.Title == nil {
		s.fail(w, badRequest("nothing to change: the body's title is missing"))
		return
	}
	title := store.CleanTitle(*p.Title)
	switch {
	case title == "":
		s.fail(w, badRequest("title: empty"))
		return
	case utf8.RuneCountInString(title) > store.MaxTitle:
		s.fail(w, badRequest("title: longer than %d characters", store.MaxTitle))
		return
	}
	ctx := r.Context()
	sess, err := ts.SessionByAddress(ctx, r.PathValue("agent"), r.PathValue("key"))
	if err == nil {
		_, err = ts.SetTitle(ctx, sess.ID, title, store.TitleByUser)
	}
	if err == nil {
		sess, err = ts.SessionByAddress(ctx, r.PathValue("agent"), r.PathValue("key"))
	}
	if errors.Is(err, store.ErrNotFound) {
		err = notFound("session %s", addr(r))
	}
	if err != nil {
		s.fail(w, err)
		return
	}
	writeJSON(w, 200, info(sess))
}
