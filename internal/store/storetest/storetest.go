// Package storetest is the contract every agentd store passes: one suite
// of tests, run against the SQLite store (store/sqlite) and the PostgreSQL
// store (store/postgres) by their own packages' tests, so that a store
// change lands in both with the same tests. It checks every method of
// store.Store and the optional abilities both stores have, the ordering a
// crash relies on (durable before visible, nothing of a failed write
// kept), gapless sequence numbers under concurrent writers, idempotency
// keys, paging cursors and the history search's semantics.
//
// What only one store has (SQLite's write-ahead log, full disk, old files'
// migrations; PostgreSQL's connection handling) is tested in its package.
package storetest

import (
	"context"
	"strconv"
	"sync/atomic"
	"testing"

	"agentd/internal/event"
	"agentd/internal/store"
)

// Store is what the suite tests of a store.
type Store interface {
	store.Store
	store.HistoryStore
	store.OpsStore
	store.OnceStore
	store.ClusterStore
	store.ExtensionStore
	store.JobRunStore
	store.AgentStore
	store.ConnectorStore
	store.GrantStore
	store.IdentityStore
	store.IdentityOutbox
	// SetTitle sets a session's title, set by by (store.TitleByInput,
	// TitleByModel, TitleByUser), and reports whether it did.
	SetTitle(ctx context.Context, id int64, title, by string) (bool, error)
}

// Opener opens the store called name, new and empty the first time a test
// opens that name, the same data when it is opened again after Close. The
// store is closed when the test that opened it ends (Close may be called
// more than once).
type Opener func(t testing.TB, name string) Store

// Checker is the optional ability of a store to check its own integrity:
// "ok" or the problems found.
type Checker interface {
	IntegrityCheck(ctx context.Context) (string, error)
}

// suite is what each test of the contract gets.
type suite struct {
	open  Opener
	names *atomic.Int64
}

// name returns a store name no other test of this run uses.
func (x *suite) name() string { return "s" + strconv.FormatInt(x.names.Add(1), 10) }

// newStore opens a new, empty store.
func (x *suite) newStore(t testing.TB) Store { return x.open(t, x.name()) }

// Run runs the contract suite against the stores open opens, each test in
// a subtest of its own.
func Run(t *testing.T, open Opener) {
	x := &suite{open: open, names: new(atomic.Int64)}
	for _, tc := range tests() {
		t.Run(tc.name, func(t *testing.T) { tc.fn(t, x) })
	}
}

// tests lists the contract's tests.
func tests() []struct {
	name string
	fn   func(*testing.T, *suite)
} {
	return []struct {
		name string
		fn   func(*testing.T, *suite)
	}{
		{"Session", testSession},
		{"SessionConcurrentCreate", testSessionConcurrentCreate},
		{"CommitAndEvents", testCommitAndEvents},
		{"CommitInvalid", testCommitInvalid},
		{"CommitNotFound", testCommitNotFound},
		{"ContextEvents", testContextEvents},
		{"TurnEvents", testTurnEvents},
		{"Inbox", testInbox},
		{"EnqueueIdempotency", testEnqueueIdempotency},
		{"Usage", testUsage},
		{"Sessions", testSessions},
		{"Agents", testAgents},
		{"ConcurrentCommitsGapless", testConcurrentCommitsGapless},
		{"CommitDeepPayload", testCommitDeepPayload},
		{"Closed", testClosed},
		{"CancelledContext", testCancelledContext},
		{"SearchHistoryRankingScopeAndSnippets", testSearchHistoryRankingScopeAndSnippets},
		{"SearchHistorySnippetWindow", testSearchHistorySnippetWindow},
		{"SearchHistoryTimeRange", testSearchHistoryTimeRange},
		{"SearchHistoryCursorStable", testSearchHistoryCursorStable},
		{"Threads", testThreads},
		{"WorkingMemory", testWorkingMemory},
		{"TitleFromFirstInput", testTitleFromFirstInput},
		{"SetTitle", testSetTitle},
		{"InboxImages", testInboxImages},
		{"ContextEventsFromSummary", testContextEventsFromSummary},
		{"ContextEventsLongSession", testContextEventsLongSession},
		{"UsageReport", testUsageReport},
		{"UsageReportRefusesBadQueries", testUsageReportRefusesBadQueries},
		{"QueueDepthAndSessionStates", testQueueDepthAndSessionStates},
		{"EnqueueConcurrentSameKey", testEnqueueConcurrentSameKey},
		{"FailureIsolated", testFailureIsolated},
		{"CommitAsyncOrder", testCommitAsyncOrder},
		{"SearchHistoryWords", testSearchHistoryWords},
		{"Claim", testClaim},
		{"Lead", testLead},
		{"Leases", testLeases},
		{"Nodes", testNodes},
		{"ExtensionPut", testExtensionPut},
		{"ExtensionConflict", testExtensionConflict},
		{"ExtensionHistory", testExtensionHistory},
		{"ExtensionList", testExtensionList},
		{"ExtensionNotFound", testExtensionNotFound},
		{"ExtensionInvalid", testExtensionInvalid},
		{"ExtensionConcurrent", testExtensionConcurrent},
		{"JobRunStart", testJobRunStart},
		{"JobRunConcurrentStart", testJobRunConcurrentStart},
		{"JobRunFinish", testJobRunFinish},
		{"JobRunConcurrentFinish", testJobRunConcurrentFinish},
		{"JobRunsOrder", testJobRunsOrder},
		{"JobRunsOpen", testJobRunsOpen},
		{"JobRunLast", testJobRunLast},
		{"JobRunPrune", testJobRunPrune},
		{"JobRunCaps", testJobRunCaps},
		{"JobRunInvalid", testJobRunInvalid},
		{"JobRunClosed", testJobRunClosed},
		{"JobRunDelivery", testJobRunDelivery},
		{"JobRunDeliveryUnique", testJobRunDeliveryUnique},
		{"JobRunMACUnique", testJobRunMACUnique},
		{"JobRunPruneAge", testJobRunPruneAge},
		{"InstanceCreate", testInstanceCreate},
		{"InstanceBudgets", testInstanceBudgets},
		{"InstanceInvalid", testInstanceInvalid},
		{"InstanceLimits", testInstanceLimits},
		{"InstanceConcurrentLimits", testInstanceConcurrentLimits},
		{"ContactLimit", testContactLimit},
		{"InstanceStates", testInstanceStates},
		{"InstanceReport", testInstanceReport},
		{"InstancesList", testInstancesList},
		{"InstanceUsage", testInstanceUsage},
		{"InboxHops", testInboxHops},
		{"Conversations", testConversations},
		{"OutboxOpenOnce", testOutboxOpenOnce},
		{"OutboxMove", testOutboxMove},
		{"OutboxDue", testOutboxDue},
		{"OutboxAck", testOutboxAck},
		{"OutboxNotice", testOutboxNotice},
		{"Pairing", testPairing},
		{"PairingNotice", testPairingNotice},
		{"PairingsExpiredShown", testPairingsExpiredShown},
		{"PairingConcurrent", testPairingConcurrent},
		{"Grants", testGrants},
		{"GrantInvalid", testGrantInvalid},
		{"IdentityCharacters", testIdentityCharacters},
		{"IdentityLogs", testIdentityLogs},
		{"IdentityLogsConcurrent", testIdentityLogsConcurrent},
		{"IdentityOutbox", testIdentityOutbox},
	}
}

func mustSession(t testing.TB, s Store, agent, key string) store.Session {
	t.Helper()
	sess, _, err := s.Session(t.Context(), agent, key)
	if err != nil {
		t.Fatalf("Session(%q, %q): %v", agent, key, err)
	}
	return sess
}

func mustCommit(t testing.TB, s Store, b *store.Batch) {
	t.Helper()
	if err := s.Commit(t.Context(), b); err != nil {
		t.Fatalf("Commit: %v", err)
	}
}

func mustEnqueue(t testing.TB, s Store, it store.InboxItem) store.InboxItem {
	t.Helper()
	stored, dup, err := s.Enqueue(t.Context(), it)
	if err != nil || dup {
		t.Fatalf("Enqueue(%+v) = duplicate %v, %v", it, dup, err)
	}
	return stored
}

func input(session, turn int64, text string) event.Event {
	return event.New(session, turn, event.Input, event.InputData{Text: text, Source: "cli"})
}

func text(session, turn int64, s string) event.Event {
	return event.New(session, turn, event.Text, event.TextData{Text: s})
}

func seqs(evs []event.Event) []int64 {
	out := make([]int64, len(evs))
	for i, e := range evs {
		out[i] = e.Seq
	}
	return out
}
