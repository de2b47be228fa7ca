package postgres

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"

	"github.com/jackc/pgx/v5"

	"agentd/internal/store"
)

// ControlChannel carries requests from one node to the node holding a
// session's lease. "cancel <session_id>:<turn>" comes from a node asked
// to cancel a session's turn that another node runs: the node running
// that turn (its listener, ListenOptions.Cancel) cancels it if it is
// still the one running. "release <session_id>" (AskRelease) asks the
// node keeping the lease idle to give it up. It is best effort, like a cancel on one node: a
// notification sent while the owner's listener is disconnected, or to an
// owner that dies before it acts, is lost, and the turn runs on (resumed
// by the next owner). A cancel names its turn, so that one that comes
// late never cancels a later turn.
const ControlChannel = "agentd_control"

// qCancel sends the cancel of a session's running turn, the oldest of
// its pending inputs (a session's inputs run in order), if a live node
// holds the session's lease; it returns that turn, no row if there is
// none to cancel.
const qCancel = `SELECT i.id, pg_notify('agentd_control', 'cancel ' || $1::bigint::text || ':' || i.id::text)
	FROM agentd_leases l, LATERAL (SELECT min(id) AS id FROM inbox WHERE session_id = $1 AND state = 'pending') i
	WHERE l.session_id = $1 AND l.expires_at > now() AND i.id IS NOT NULL`

// CancelTurn asks the node running session's turn to cancel it (see
// ControlChannel) and returns the turn; running is false, and nothing is
// sent, when no live node holds the session's lease with an input
// pending: no turn runs.
func (s *Store) CancelTurn(ctx context.Context, session int64) (turn int64, running bool, err error) {
	if s.isDown.Load() {
		return 0, false, store.ErrClosed
	}
	var sent string
	err = s.pool.QueryRow(ctx, qCancel, session).Scan(&turn, &sent)
	if errors.Is(err, pgx.ErrNoRows) {
		return 0, false, nil
	}
	if err != nil {
		return 0, false, s.readErr(fmt.Sprintf("cancel a turn of session %d", session), err)
	}
	return turn, true, nil
}

// AskRelease asks the node keeping session's lease idle (its grace after
// the session's queue emptied) to give it up now, for this node to write
// the session's log outside its turns (ListenOptions.Release). Best
// effort: a request lost is a wait until the grace ends.
func (s *Store) AskRelease(ctx context.Context, session int64) error {
	if s.isDown.Load() {
		return store.ErrClosed
	}
	if _, err := s.pool.Exec(ctx, qRelease, session); err != nil {
		return s.readErr(fmt.Sprintf("ask for the lease of session %d", session), err)
	}
	return nil
}

const qRelease = `SELECT pg_notify('agentd_control', 'release ' || $1::bigint::text)`

// parseControl reads a ControlChannel payload: "cancel <session>:<turn>"
// or "release <session>" (turn 0).
func parseControl(p string) (verb string, session, turn int64, err error) {
	verb, ids, _ := strings.Cut(p, " ")
	ok := false
	switch verb {
	case "cancel":
		session, turn, ok = parseIDs(ids)
	case "release":
		session, err = strconv.ParseInt(ids, 10, 64)
		ok = err == nil && session > 0
	}
	if !ok {
		return "", 0, 0, fmt.Errorf("postgres: notification %q on %s: want cancel <session_id>:<turn> or release <session_id>", p, ControlChannel)
	}
	return verb, session, turn, nil
}
