package sqlite

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"unicode/utf8"

	"agentd/internal/event"
	"agentd/internal/store"
)

// Session titles. The writer titles a session from its first input in the
// transaction that logs it (qTitleInput), so a session with a message has
// a title from then on; SetTitle replaces it with a model's or a person's.
const (
	qTitleInput = `UPDATE sessions SET title = ?1, title_by = 'input' WHERE id = ?2 AND title_by = ''`
	// A title replaces only one from an earlier source (see store.TitleByInput).
	qSetTitle = `UPDATE sessions SET title = ?1, title_by = ?2 WHERE id = ?3 AND CASE ?2
		WHEN 'user' THEN 1 WHEN 'model' THEN title_by IN ('', 'input') WHEN 'input' THEN title_by = '' ELSE 0 END`
)

// SetTitle sets the title of session id, set by by (store.TitleByInput,
// TitleByModel or TitleByUser), unless it has one from a later source: a
// model's title does not replace a person's. It reports whether it set it;
// a session that does not exist is store.ErrNotFound. The title is
// cleaned (store.CleanTitle) and must hold something and at most
// store.MaxTitle characters. The session's updated_at stays: naming a
// conversation is not activity in it.
func (s *Store) SetTitle(ctx context.Context, id int64, title, by string) (bool, error) {
	title = store.CleanTitle(title)
	switch {
	case by != store.TitleByInput && by != store.TitleByModel && by != store.TitleByUser:
		return false, fmt.Errorf("sqlite: set title: %w: source %q", ErrInvalid, by)
	case title == "":
		return false, fmt.Errorf("sqlite: set title: %w: empty title", ErrInvalid)
	case utf8.RuneCountInString(title) > store.MaxTitle:
		return false, fmt.Errorf("sqlite: set title: %w: longer than %d characters", ErrInvalid, store.MaxTitle)
	}
	r := s.getRequest(ctx, opTitle)
	r.session, r.title, r.titleBy = id, title, by
	if err := s.send(ctx, r); err != nil {
		return false, err
	}
	set, err := r.created, r.err
	s.putRequest(r)
	return set, err
}

func (w *writer) applyTitle(r *request) error {
	res, err := w.setTitle.Exec(r.title, r.titleBy, r.session)
	if err != nil {
		return fmt.Errorf("sqlite: set title: %w", err)
	}
	n, err := res.RowsAffected()
	if err != nil {
		return fmt.Errorf("sqlite: set title: %w", err)
	}
	if n == 0 {
		var one int
		if err := w.sessExists.QueryRow(r.session).Scan(&one); errors.Is(err, sql.ErrNoRows) {
			return fmt.Errorf("sqlite: set title: session %d: %w", r.session, store.ErrNotFound)
		} else if err != nil {
			return fmt.Errorf("sqlite: set title: %w", err)
		}
	}
	r.created = n > 0
	if n > 0 {
		w.tails.forget(r.session)
	}
	return nil
}

// titleFromInput titles session id from e if e is an input with text; it
// reports whether it did.
func (w *writer) titleFromInput(id int64, e *event.Event) (bool, error) {
	if e.Kind != event.Input {
		return false, nil
	}
	t := store.InputTitle(e.Data)
	if t == "" {
		return false, nil
	}
	if _, err := w.titleInput.Exec(t, id); err != nil {
		return false, fmt.Errorf("title: %w", err)
	}
	return true, nil
}
