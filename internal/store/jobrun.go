package store

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"slices"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"
)

// Job run statuses. A run is taken (StartRun) as queued, running or
// skipped; FinishRun moves a queued run to running, and a queued or
// running one to any of the ends.
const (
	RunQueued    = "queued"    // taken, waiting for its job's run before it
	RunRunning   = "running"   // its turn is under way
	RunDone      = "done"      // its turn completed
	RunError     = "error"     // its turn ended otherwise (a budget, an error)
	RunSkipped   = "skipped"   // not run: its job's run before it was still running
	RunCancelled = "cancelled" // stopped before it ended (a person, a shutdown)
)

// RunStatuses returns the job run statuses, the open ones first.
func RunStatuses() []string {
	return []string{RunQueued, RunRunning, RunDone, RunError, RunSkipped, RunCancelled}
}

// Job run triggers: what fired a run.
const (
	TriggerCron      = "cron"
	TriggerEvery     = "every"
	TriggerAt        = "at"
	TriggerWebhook   = "webhook"
	TriggerChain     = "chain"
	TriggerWatch     = "watch"
	TriggerHeartbeat = "heartbeat"
	TriggerManual    = "manual" // a person: `agentd jobs run`, the API, the console
)

// RunTriggers returns the job run triggers.
func RunTriggers() []string {
	return []string{TriggerCron, TriggerEvery, TriggerAt, TriggerWebhook, TriggerChain, TriggerWatch,
		TriggerHeartbeat, TriggerManual}
}

// Job run limits. A run's output, error and payload longer than these are
// cut (output and error, at a character boundary, marked) or replaced
// (payload, by {"truncated":true,"bytes":N}) when the run is written:
// the history says what a run did, the run's session holds all of it.
const (
	MaxRunOutput  = 64 << 10 // bytes
	MaxRunError   = 4 << 10  // bytes
	MaxRunPayload = 64 << 10 // bytes of compact JSON
	MaxRunID      = 128      // bytes
	// MaxRunDelivery bounds a run's webhook delivery id, in bytes.
	MaxRunDelivery = 256
	// MaxRunMAC bounds a run's webhook MAC, in hex digits (a SHA-512's).
	MaxRunMAC = 128
	// DefaultRunLimit is how many runs JobRuns returns for a limit of 0;
	// MaxRunLimit the most it returns.
	DefaultRunLimit = 50
	MaxRunLimit     = 1000
)

// RunTimeLayout is the layout of the scheduled time a run id starts with
// (UTC, to the millisecond): ids then sort as their runs were scheduled.
const RunTimeLayout = "20060102T150405.000Z"

// RunID returns the id of a run scheduled at at: its time in
// RunTimeLayout, then "-" and tag if tag is not empty. A fire of a
// schedule has the same id on every node (a tag of its trigger, or none);
// a manual run or a webhook's a tag of its own (random, a delivery id).
func RunID(at time.Time, tag string) string {
	id := at.UTC().Format(RunTimeLayout)
	if tag != "" {
		id += "-" + tag
	}
	return id
}

// JobRun is one run of a job: a fire that was taken, what it did, what
// it cost.
type JobRun struct {
	Job string
	// Run is the run's id, unique per job: RunID of its scheduled time.
	Run         string
	ScheduledAt time.Time
	Trigger     string // TriggerCron, …, TriggerManual
	Session     string // its session's address, "<agent>/<key>"
	Status      string // RunQueued, …, RunCancelled
	// StartedAt is when it was taken (StartRun), or, for a run queued
	// then, when it started running; EndedAt is zero while it is open.
	StartedAt time.Time
	EndedAt   time.Time
	Steps     int
	TokensIn  int64
	TokensOut int64
	CostUSD   float64
	Output    string
	Error     string
	// Payload is the trigger's payload, compact JSON (nil if none).
	Payload json.RawMessage
	Node    string // the node that took it
	// Delivery is the id of the webhook delivery the run was taken for
	// ("" for none): a job takes each delivery once (StartRun).
	Delivery string
	// MAC is the webhook request's MAC the run was taken for, lowercase
	// hex ("" for none): a job takes each MAC once (StartRun), whatever
	// delivery id the request carries, so that a captured request sent
	// again is not run again.
	MAC string
	// DeliveredAt is when the delivery of the run's output (or of its
	// failure alert) was recorded (RecordDelivery): done, or given up
	// with DeliveryError saying why. It is zero for a run whose delivery
	// is pending, and for a run that has none to make (open, skipped,
	// cancelled).
	DeliveredAt   time.Time
	DeliveryError string
}

// DeliveryStatuses returns the statuses of the runs that have a delivery
// to make once they are recorded: done (its output) and error and
// skipped (its failure alert). The stores' undelivered queries list the
// same; the contract suite holds them to it.
func DeliveryStatuses() []string { return []string{RunDone, RunError, RunSkipped} }

// Undelivered reports whether r has a delivery to make (DeliveryStatuses)
// that is not recorded yet.
func (r *JobRun) Undelivered() bool {
	return slices.Contains(DeliveryStatuses(), r.Status) && r.DeliveredAt.IsZero()
}

// JobRunStore keeps the runs of jobs. Both stores implement it; taking a
// run is how a fire happens once however many nodes (or restarts) try it.
type JobRunStore interface {
	// StartRun records a run taken, unless its job already has a run of
	// that id, or, r.Delivery set, a run of that delivery, or, r.MAC
	// set, a run of that MAC: then it returns that run, and created
	// false (another node, or this one before a restart, took the fire,
	// the delivery or the request). r's status is
	// RunQueued, RunRunning or RunSkipped (a skipped run ends as it is
	// taken); StartedAt defaults to now.
	StartRun(ctx context.Context, r JobRun) (run JobRun, created bool, err error)
	// FinishRun records the end of an open run (queued or running):
	// end's Status, EndedAt (default now), figures, Output and Error,
	// from end's Job and Run. A queued run may also move to RunRunning
	// (StartedAt from end's, default now). A run already ended is
	// ErrConflict, one that does not exist ErrNotFound. It returns the
	// run as written.
	FinishRun(ctx context.Context, end JobRun) (JobRun, error)
	// JobRuns returns up to limit (0: DefaultRunLimit) runs of job,
	// newest first, with an id before before ("" from the newest): the
	// last one's Run is the next page's before.
	JobRuns(ctx context.Context, job, before string, limit int) ([]JobRun, error)
	// OpenRuns returns all the open runs of job (queued or running),
	// oldest first, however many runs have ended after them: a job's
	// concurrency and the recovery of its runs read them.
	OpenRuns(ctx context.Context, job string) ([]JobRun, error)
	// JobRun returns one run, or ErrNotFound.
	JobRun(ctx context.Context, job, run string) (JobRun, error)
	// LastRun returns the newest run of job taken by one of triggers (by
	// any trigger if none given), or ErrNotFound: a schedule catches up
	// from its ScheduledAt, and runs of other triggers (a webhook, a
	// person) do not move it.
	LastRun(ctx context.Context, job string, triggers ...string) (JobRun, error)
	// DeliveryRun returns the run job took for the webhook delivery, or
	// ErrNotFound.
	DeliveryRun(ctx context.Context, job, delivery string) (JobRun, error)
	// MACRun returns the run job took for the webhook request of that
	// MAC (lowercase hex), or ErrNotFound.
	MACRun(ctx context.Context, job, mac string) (JobRun, error)
	// RecordDelivery records that the delivery of an ended run was made
	// at at (default now), or, failure set, given up for that reason. It
	// is recorded once: a run whose delivery is recorded already, or that
	// is still open, is ErrConflict, one that does not exist ErrNotFound.
	// It returns the run as written.
	RecordDelivery(ctx context.Context, job, run string, at time.Time, failure string) (JobRun, error)
	// UndeliveredRuns returns up to limit (0: DefaultRunLimit) runs of
	// job that ended done or error and whose delivery is not recorded
	// (JobRun.Undelivered), oldest first: what a crash between a run's
	// end and its delivery left, read through an index of those alone.
	UndeliveredRuns(ctx context.Context, job string, limit int) ([]JobRun, error)
	// PruneRuns removes the runs of job beyond its newest keep (at least
	// 1) — of those, with before not zero, only the ones scheduled before
	// before — and returns how many it removed. It never removes the job's newest
	// run (LastRun still knows the last fire), an open run, or one whose
	// delivery is pending.
	PruneRuns(ctx context.Context, job string, keep int, before time.Time) (int64, error)
}

// CheckRunKey reports what is wrong with a job name or a run id: a job is
// held to an extension row's name rule (CheckExtensionKey), a run is
// printable ASCII of at most MaxRunID bytes with no '/'.
func CheckRunKey(job, run string) error {
	if err := CheckExtensionKey("job", job); err != nil {
		return err
	}
	if run == "" {
		return errors.New("empty run id")
	}
	if len(run) > MaxRunID {
		return fmt.Errorf("run id longer than %d bytes", MaxRunID)
	}
	for i := 0; i < len(run); i++ {
		if c := run[i]; c <= ' ' || c >= 0x7f || c == '/' {
			return fmt.Errorf("run id %q contains %q", run, c)
		}
	}
	return nil
}

// RunStart checks a run StartRun is given and returns it ready to write:
// StartedAt defaulting to now (and EndedAt to StartedAt for a skipped
// run), times in UTC, its figures zero, Output and Error empty, Error
// kept for a skipped run (why), its payload compacted and capped.
func RunStart(r JobRun, now time.Time) (JobRun, error) {
	if err := CheckRunKey(r.Job, r.Run); err != nil {
		return r, err
	}
	if r.ScheduledAt.IsZero() {
		return r, fmt.Errorf("run %s/%s: no scheduled time", r.Job, r.Run)
	}
	if want := RunID(r.ScheduledAt, ""); !strings.HasPrefix(r.Run, want) {
		return r, fmt.Errorf("run %s/%s: id does not start with its scheduled time %s", r.Job, r.Run, want)
	}
	if !slices.Contains(RunTriggers(), r.Trigger) {
		return r, fmt.Errorf("run %s/%s: unknown trigger %q", r.Job, r.Run, r.Trigger)
	}
	switch r.Status {
	case RunQueued, RunRunning, RunSkipped:
	default:
		return r, fmt.Errorf("run %s/%s: status %q: a run starts queued, running or skipped", r.Job, r.Run, r.Status)
	}
	if !utf8.ValidString(r.Session) || !utf8.ValidString(r.Node) || strings.ContainsRune(r.Session+r.Node, 0) {
		return r, fmt.Errorf("run %s/%s: session or node is not valid text", r.Job, r.Run)
	}
	if err := CheckDelivery(r.Delivery); err != nil {
		return r, fmt.Errorf("run %s/%s: %v", r.Job, r.Run, err)
	}
	if err := CheckMAC(r.MAC); err != nil {
		return r, fmt.Errorf("run %s/%s: %v", r.Job, r.Run, err)
	}
	p, err := runPayload(r.Payload)
	if err != nil {
		return r, fmt.Errorf("run %s/%s: %v", r.Job, r.Run, err)
	}
	if r.StartedAt.IsZero() {
		r.StartedAt = now
	}
	r.EndedAt = time.Time{}
	if r.Status == RunSkipped {
		r.EndedAt = r.StartedAt
	} else {
		r.Error = ""
	}
	r.ScheduledAt, r.StartedAt, r.EndedAt = r.ScheduledAt.UTC(), r.StartedAt.UTC(), utc(r.EndedAt)
	r.Payload, r.Steps, r.TokensIn, r.TokensOut, r.CostUSD, r.Output = p, 0, 0, 0, 0, ""
	r.DeliveredAt, r.DeliveryError = time.Time{}, ""
	r.Error = RunText(r.Error, MaxRunError)
	return r, nil
}

// RunEnd checks an end FinishRun is given and returns it ready to write:
// EndedAt (or, moving to running, StartedAt) defaulting to now, Output
// and Error cut to their limits.
func RunEnd(end JobRun, now time.Time) (JobRun, error) {
	if err := CheckRunKey(end.Job, end.Run); err != nil {
		return end, err
	}
	if !slices.Contains(RunStatuses(), end.Status) || end.Status == RunQueued {
		return end, fmt.Errorf("run %s/%s: status %q: a run moves to running or ends done, error, skipped or cancelled",
			end.Job, end.Run, end.Status)
	}
	if end.Steps < 0 || end.TokensIn < 0 || end.TokensOut < 0 || end.CostUSD < 0 ||
		math.IsNaN(end.CostUSD) || math.IsInf(end.CostUSD, 0) {
		return end, fmt.Errorf("run %s/%s: negative or not finite figures", end.Job, end.Run)
	}
	if end.Status == RunRunning {
		if end.StartedAt.IsZero() {
			end.StartedAt = now
		}
		end.EndedAt = time.Time{}
	} else if end.EndedAt.IsZero() {
		end.EndedAt = now
	}
	end.StartedAt, end.EndedAt = utc(end.StartedAt), utc(end.EndedAt)
	end.Output, end.Error = RunText(end.Output, MaxRunOutput), RunText(end.Error, MaxRunError)
	return end, nil
}

// RunTransition reports whether a run in status from may move to to
// (FinishRun); it is ErrConflict otherwise.
func RunTransition(from, to string) error {
	if from == RunQueued || (from == RunRunning && to != RunRunning) {
		return nil
	}
	return fmt.Errorf("%w: the run is %s, it cannot become %s", ErrConflict, from, to)
}

// CheckDelivery reports what is wrong with a run's webhook delivery id:
// valid text without NUL, at most MaxRunDelivery bytes ("" is none).
func CheckDelivery(d string) error {
	if len(d) > MaxRunDelivery {
		return fmt.Errorf("delivery id longer than %d bytes", MaxRunDelivery)
	}
	if !utf8.ValidString(d) || strings.ContainsRune(d, 0) {
		return errors.New("delivery id is not valid text")
	}
	return nil
}

// CheckMAC reports what is wrong with a run's webhook MAC: lowercase
// hex digits, an even number of them, at most MaxRunMAC ("" is none).
// One MAC has one spelling, so that its unique index holds.
func CheckMAC(m string) error {
	if len(m) > MaxRunMAC || len(m)%2 != 0 {
		return fmt.Errorf("MAC: want an even number of hex digits, at most %d", MaxRunMAC)
	}
	for i := 0; i < len(m); i++ {
		if c := m[i]; (c < '0' || c > '9') && (c < 'a' || c > 'f') {
			return errors.New("MAC: want lowercase hex digits")
		}
	}
	return nil
}

// DeliveryRecord checks a RecordDelivery and returns its time (default
// now, in UTC) and its failure as a run keeps it (RunText, MaxRunError).
func DeliveryRecord(job, run string, at time.Time, failure string, now time.Time) (time.Time, string, error) {
	if err := CheckRunKey(job, run); err != nil {
		return at, failure, err
	}
	if at.IsZero() {
		at = now
	}
	return at.UTC(), RunText(failure, MaxRunError), nil
}

// DeliveryConflict is the ErrConflict of a RecordDelivery of a run that
// is as r is: still open, or its delivery recorded already.
func DeliveryConflict(r JobRun) error {
	if r.Status == RunQueued || r.Status == RunRunning {
		return fmt.Errorf("%w: the run is %s: it has no delivery yet", ErrConflict, r.Status)
	}
	return fmt.Errorf("%w: the run's delivery was recorded at %s", ErrConflict, r.DeliveredAt.Format(time.RFC3339Nano))
}

// PruneBefore returns the run id a PruneRuns's before becomes: runs
// with a smaller id were scheduled before it ("" for a zero before,
// which no id is smaller than).
func PruneBefore(before time.Time) string {
	if before.IsZero() {
		return ""
	}
	return RunID(before, "")
}

// CheckPrune reports what is wrong with a PruneRuns of job keeping keep.
func CheckPrune(job string, keep int) error {
	if keep < 1 {
		return fmt.Errorf("keep %d: at least the last run is kept", keep)
	}
	return CheckExtensionKey("job", job)
}

// RunLimit returns the number of runs JobRuns returns for limit, or what
// is wrong with it.
func RunLimit(limit int) (int, error) {
	switch {
	case limit < 0:
		return 0, fmt.Errorf("limit %d", limit)
	case limit == 0:
		return DefaultRunLimit, nil
	}
	return min(limit, MaxRunLimit), nil
}

// RunTriggerSet returns triggers as LastRun's stores match them:
// ",a,b," ("" for any), or what is wrong with one.
func RunTriggerSet(triggers []string) (string, error) {
	if len(triggers) == 0 {
		return "", nil
	}
	for _, t := range triggers {
		if !slices.Contains(RunTriggers(), t) {
			return "", fmt.Errorf("unknown trigger %q", t)
		}
	}
	return "," + strings.Join(triggers, ",") + ",", nil
}

// RunText returns s as a run keeps it: valid UTF-8 without NUL (which
// PostgreSQL's text refuses), cut at a character boundary to at most
// limit bytes, a cut marked at its end.
func RunText(s string, limit int) string {
	s = strings.ToValidUTF8(s, "\uFFFD")
	s = strings.ReplaceAll(s, "\x00", "\uFFFD")
	if len(s) <= limit {
		return s
	}
	mark := "\n[… cut: " + strconv.Itoa(len(s)) + " bytes in all]"
	cut := max(0, limit-len(mark)) // the limits are kilobytes, the mark about 30 bytes
	for cut > 0 && !utf8.RuneStart(s[cut]) {
		cut--
	}
	return s[:cut] + mark
}

// runPayload compacts a run's payload, replacing one longer than
// MaxRunPayload by {"truncated":true,"bytes":N}.
func runPayload(p json.RawMessage) (json.RawMessage, error) {
	if len(p) == 0 {
		return nil, nil
	}
	if !json.Valid(p) || !utf8.Valid(p) {
		return nil, errors.New("payload is not valid JSON")
	}
	var buf bytes.Buffer
	if err := json.Compact(&buf, p); err != nil {
		return nil, fmt.Errorf("payload: %v", err)
	}
	if buf.Len() > MaxRunPayload {
		return json.RawMessage(`{"truncated":true,"bytes":` + strconv.Itoa(buf.Len()) + `}`), nil
	}
	return buf.Bytes(), nil
}

// RunTime returns a stored time (unix nanoseconds, 0 for none).
func RunTime(ns int64) time.Time {
	if ns == 0 {
		return time.Time{}
	}
	return time.Unix(0, ns).UTC()
}

// RunNanos returns a time as stored (unix nanoseconds, 0 for none).
func RunNanos(t time.Time) int64 {
	if t.IsZero() {
		return 0
	}
	return t.UnixNano()
}

func utc(t time.Time) time.Time {
	if t.IsZero() {
		return t
	}
	return t.UTC()
}
