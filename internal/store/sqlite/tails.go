package sqlite

// What the writer knows of the sessions it wrote to, so that a commit need
// not read the session's last sequence number back from the row it
// updates (UPDATE … RETURNING, a statement that returns a row through
// database/sql): it updates the row on the condition that it still holds
// what the writer knows (qUpdKnown), and reads it back only when it does
// not know the session or the row says otherwise — a session it has not
// written to since it started, or one another program changed.
//
// What a transaction changes here is undone with it: a request rolled back
// to its savepoint, or a group rolled back whole (to be applied again, or
// failed), leaves what the writer knows as the database has it.

// maxTails bounds the sessions the writer keeps a tail of; past it, it
// starts afresh (at a group's start, with nothing to undo).
const maxTails = 4096

// qUpdKnown is the session update of a commit whose session's tail the
// writer knows: ?5 is its last sequence number, ?6 whether it has no title.
// It changes nothing (no row) if the row holds something else.
const qUpdKnown = `UPDATE sessions SET last_seq = ?5 + ?1, updated_at = ?2,
	state = COALESCE(NULLIF(?3, ''), state) WHERE id = ?4 AND last_seq = ?5 AND (title_by = '') = ?6`

// tail is what the writer knows of a session: its last sequence number,
// and whether it has a title (then it never loses it).
type tail struct {
	last   int64
	titled bool
}

// undoTail is a change to the writer's tails that the open transaction
// made: the session's tail before it, if it had one.
type undoTail struct {
	session int64
	prev    tail
	had     bool
}

// tails are the writer's tails, with the open transaction's changes to
// undo. Only the writer goroutine uses them.
type tails struct {
	m    map[int64]tail
	undo []undoTail
}

// get returns the tail of session, if known.
func (t *tails) get(session int64) (tail, bool) {
	v, ok := t.m[session]
	return v, ok
}

// set records session's tail as of the open transaction.
func (t *tails) set(session int64, v tail) {
	prev, had := t.m[session]
	t.undo = append(t.undo, undoTail{session, prev, had})
	if t.m == nil {
		t.m = make(map[int64]tail)
	}
	t.m[session] = v
}

// forget drops session's tail as of the open transaction.
func (t *tails) forget(session int64) {
	if prev, had := t.m[session]; had {
		t.undo = append(t.undo, undoTail{session, prev, had})
		delete(t.m, session)
	}
}

// mark is where the open transaction's changes stand, for revert.
func (t *tails) mark() int { return len(t.undo) }

// revert undoes the changes made since mark (0: the whole transaction's).
func (t *tails) revert(mark int) {
	for i := len(t.undo) - 1; i >= mark; i-- {
		u := t.undo[i]
		if u.had {
			t.m[u.session] = u.prev
		} else {
			delete(t.m, u.session)
		}
	}
	t.undo = t.undo[:mark]
}

// begin starts a transaction's changes: the last one's are kept (it
// committed) or were reverted.
func (t *tails) begin() {
	t.undo = t.undo[:0]
	if len(t.m) > maxTails {
		clear(t.m)
	}
}
