package postgres

import (
	"context"
	"fmt"
	"strconv"
	"strings"
	"sync"

	"github.com/jackc/pgx/v5"
)

// The notification channels nodes tell each other on. A notification is
// sent inside the transaction that makes it true, so it is delivered only
// if that commits, and PostgreSQL delivers the notifications of different
// transactions in the order they committed.
const (
	// EventsChannel carries "<session_id>:<last_seq>" from the commit of
	// every batch that appended events to a session: the listeners of the
	// other nodes read them from the table (see Listen).
	EventsChannel = "agentd_events"
	// InboxChannel carries "<session_id>" from every Enqueue: an input for
	// a session that its owner (whichever node) should look at.
	InboxChannel = "agentd_inbox"
)

const (
	qNotifyEvents = `SELECT pg_notify('agentd_events', $1::bigint::text || ':' || (SELECT last_seq FROM sessions WHERE id = $1)::text)`
	qNotifyInbox  = `SELECT pg_notify('agentd_inbox', $1::bigint::text)`
)

// notifyEvents is the step of a commit request that tells the other nodes
// the session's new last sequence number, in the commit's transaction.
func notifyEvents(session int64) step {
	return step{sql: qNotifyEvents, args: []any{session}, read: execRead("notify")}
}

// notifyInbox is the step of an enqueue request that tells the other
// nodes of the session's new input, in the enqueue's transaction.
func notifyInbox(session int64) step {
	return step{sql: qNotifyInbox, args: []any{session}, read: execRead("notify")}
}

// parseEventsPayload reads an EventsChannel payload.
func parseEventsPayload(p string) (session, last int64, err error) {
	session, last, ok := parseIDs(p)
	if !ok {
		return 0, 0, fmt.Errorf("postgres: notification %q on %s: want <session_id>:<last_seq>", p, EventsChannel)
	}
	return session, last, nil
}

// parseIDs reads "<a>:<b>", two positive integers.
func parseIDs(p string) (a, b int64, ok bool) {
	x, y, ok := strings.Cut(p, ":")
	if !ok {
		return 0, 0, false
	}
	a, err := strconv.ParseInt(x, 10, 64)
	if err == nil {
		b, err = strconv.ParseInt(y, 10, 64)
	}
	return a, b, err == nil && a > 0 && b > 0
}

// pids are the server process ids of the store's own connections: a
// notification a listener gets from one of them is this node's own
// commit, whose events the node has published already. A process id is
// added when its connection opens, before it can send anything, and
// removed when it closes.
type pids struct {
	mu sync.Mutex
	m  map[uint32]struct{}
}

func newPIDs() *pids { return &pids{m: map[uint32]struct{}{}} }

// connected is the pool's AfterConnect hook.
func (p *pids) connected(_ context.Context, c *pgx.Conn) error {
	p.mu.Lock()
	p.m[c.PgConn().PID()] = struct{}{}
	p.mu.Unlock()
	return nil
}

// closed is the pool's BeforeClose hook.
func (p *pids) closed(c *pgx.Conn) {
	p.mu.Lock()
	delete(p.m, c.PgConn().PID())
	p.mu.Unlock()
}

func (p *pids) has(pid uint32) bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	_, ok := p.m[pid]
	return ok
}
