package postgres

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/jackc/pgx/v5"

	"agentd/internal/store"
)

// ControlChannel carries "cancel <session_id>:<turn>" from a node asked
// to cancel a session's turn that another node runs: the node running
// that turn (its listener, ListenOptions.Cancel) cancels it if it is
// still the one running. It is best effort, like a cancel on one node: a
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

// parseCancelPayload reads a ControlChannel payload.
func parseCancelPayload(p string) (session, turn int64, err error) {
	ids, ok := strings.CutPrefix(p, "cancel ")
	if ok {
		session, turn, ok = parseIDs(ids)
	}
	if !ok {
		return 0, 0, fmt.Errorf("postgres: notification %q on %s: want cancel <session_id>:<turn>", p, ControlChannel)
	}
	return session, turn, nil
}
