package postgres

import (
	"context"
	"errors"
	"fmt"
	"unicode/utf8"

	"github.com/jackc/pgx/v5"

	"agentd/internal/store"
)

// qSetTitle replaces only a title from an earlier source (see
// store.TitleByInput); it returns whether it set it, and nothing for a
// session that does not exist.
const qSetTitle = `WITH s AS (SELECT id FROM sessions WHERE id = $3),
	u AS (UPDATE sessions SET title = $1, title_by = $2 WHERE id = $3 AND CASE $2
		WHEN 'user' THEN true WHEN 'model' THEN title_by IN ('', 'input') WHEN 'input' THEN title_by = '' ELSE false END
		RETURNING id)
	SELECT EXISTS (SELECT 1 FROM u) FROM s`

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
		return false, fmt.Errorf("postgres: set title: %w: source %q", ErrInvalid, by)
	case title == "":
		return false, fmt.Errorf("postgres: set title: %w: empty title", ErrInvalid)
	case utf8.RuneCountInString(title) > store.MaxTitle:
		return false, fmt.Errorf("postgres: set title: %w: longer than %d characters", ErrInvalid, store.MaxTitle)
	}
	if s.isDown.Load() {
		return false, store.ErrClosed
	}
	var set bool
	err := s.pool.QueryRow(ctx, qSetTitle, title, by, id).Scan(&set)
	if errors.Is(err, pgx.ErrNoRows) {
		return false, fmt.Errorf("postgres: set title: session %d: %w", id, store.ErrNotFound)
	}
	if err != nil {
		return false, s.readErr("set title", err)
	}
	return set, nil
}
