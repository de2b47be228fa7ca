package agentsys

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"unicode/utf8"

	"agentd/internal/event"
	"agentd/internal/runtime"
	"agentd/internal/store"
)

// Cost is what an ended instance's report says it cost: USD of it and its
// descendants, and its own model calls and tokens.
type Cost struct {
	USD          float64 // it and its descendants
	Calls        int64   // its own model calls
	InputTokens  int64
	OutputTokens int64
	Descendants  int // how many sub-agents' costs USD includes
}

// reportSource is the Source of a report input (and the origin's kind a
// parent's log shows).
const reportSource = "agent-report"

// reportKey is the idempotency key of in's report: the parent's inbox
// takes it once, however often the supervisor or recovery submits it.
func reportKey(id string) string { return "agent-report:" + id }

// reportInput is the input that reports in's end to its ReportTo.
func reportInput(in store.Instance, c Cost, limit int) runtime.Input {
	return runtime.Input{
		Session:        in.ReportTo,
		Text:           reportText(in, c, limit),
		Source:         reportSource,
		IdempotencyKey: reportKey(in.ID),
		System:         true,
		Silent:         in.Report == store.ReportSilent,
		Origin:         in.ID,
		// A report must arrive, so no hop limit refuses it; it carries
		// hops, so a parent it wakes cannot loop past its own limit.
		Hops: in.Hops + 1,
	}
}

// reportText is the text of in's report: what it was, how it ended, its
// cost, then its answer (or why it failed or stopped) cut at limit bytes.
func reportText(in store.Instance, c Cost, limit int) string {
	var b strings.Builder
	fmt.Fprintf(&b, "agent %s (%s", in.ID, in.Type)
	if in.Name != "" {
		fmt.Fprintf(&b, " %q", in.Name)
	}
	if in.Template != "" {
		fmt.Fprintf(&b, ", template %s", in.Template)
	}
	b.WriteString(") ")
	b.WriteString(in.State)
	if in.State != store.AgentDone && in.Result != "" {
		b.WriteString(": ")
		b.WriteString(firstLine(in.Result))
	}
	fmt.Fprintf(&b, "\ncost: $%s — %d model %s, %d tokens in, %d out", usd(c.USD), c.Calls, plural(c.Calls, "call", "calls"),
		c.InputTokens, c.OutputTokens)
	if c.Descendants > 0 {
		fmt.Fprintf(&b, "; its %d %s included", c.Descendants, plural(int64(c.Descendants), "sub-agent", "sub-agents"))
	}
	b.WriteString("\n")
	if in.State == store.AgentDone {
		b.WriteString("---\n")
		b.WriteString(cutAnswer(in.Result, limit, in.Agent+"/main"))
		b.WriteString("\n")
	}
	return b.String()
}

// cutAnswer cuts s at limit bytes (0: no limit), at a rune's start, with a
// note naming the session that holds the whole of it.
func cutAnswer(s string, limit int, session string) string {
	if limit <= 0 || len(s) <= limit {
		return s
	}
	cut := limit
	for cut > 0 && !utf8.RuneStart(s[cut]) {
		cut--
	}
	return s[:cut] + "\n[… the answer is cut at " + strconv.Itoa(cut) + " of " + strconv.Itoa(len(s)) +
		" bytes; the whole of it is in session " + session + "]"
}

// firstLine is s up to its first line break.
func firstLine(s string) string {
	line, _, _ := strings.Cut(s, "\n")
	return line
}

// usd formats dollars as the report shows them: 4 decimals, more below a
// hundredth of a cent, so that a small cost does not read as nothing.
func usd(v float64) string {
	if v > 0 && v < 0.0001 {
		return strings.TrimRight(strconv.FormatFloat(v, 'f', 8, 64), "0")
	}
	return strconv.FormatFloat(v, 'f', 4, 64)
}

func plural(n int64, one, many string) string {
	if n == 1 {
		return one
	}
	return many
}

// report submits an ended instance's report to its ReportTo and records
// it, once: the parent's inbox takes the report's key once, and
// reported_at is the bookmark that stops recovery from submitting it
// again. A session that refuses it for good (closed, gone) has the report
// recorded as refused, as has one that accepted it and then refused it
// at its turn's start (the parent stopped meanwhile: seen here when the
// report is made again, by the supervisor's Ended otherwise); any other
// error leaves it for the sweep. A delivered report hands the parent to
// the supervisor (recheck): a task waits for its sub-agents' reports.
func (s *System) report(ctx context.Context, in store.Instance) error {
	if in.Report == "" || in.ReportTo == "" || !in.ReportedAt.IsZero() {
		return nil
	}
	c, err := s.cost(ctx, in)
	if err != nil {
		return fmt.Errorf("agentsys: report %s: %w", in.ID, err)
	}
	in.Hops = s.lastHops(ctx, in) // the report carries on the hops of its last input, not of its first
	failure := ""
	rc, err := s.rt.Submit(ctx, reportInput(in, c, s.cfg.ReportBytes))
	switch {
	case err != nil && !refusedForGood(err):
		return fmt.Errorf("agentsys: report %s: %w", in.ID, err)
	case err != nil:
		failure = "report refused: " + err.Error()
	case rc.Duplicate:
		// Delivered before a crash, or accepted and then refused at its
		// turn's start (the parent stopped meanwhile): its end says which.
		failure = s.refusedBefore(ctx, rc.Turn)
	}
	if _, err := s.st.RecordReport(ctx, in.ID, failure); err != nil {
		return fmt.Errorf("agentsys: report %s: %w", in.ID, err)
	}
	if failure == "" {
		s.recheck(in)
	}
	return nil
}

// refusedBefore returns the failure of a report accepted before as turn,
// if that turn has ended refused without the parent taking it in; ""
// if it was taken in, or has not ended yet (its refusal, if it comes, is
// recorded when the supervisor sees it: Ended).
func (s *System) refusedBefore(ctx context.Context, turn int64) string {
	done, cancel := context.WithCancel(ctx)
	cancel() // read the end from the store; do not wait
	end, err := s.rt.Wait(done, turn)
	if err != nil || !refusedAtStart(end) {
		return ""
	}
	return "report refused: " + end.Reason
}

// hopsTail is how many events at the end of an agent's log lastHops
// reads: its last turn's input is among them but for a turn of many steps.
const hopsTail = 64

// lastHops is the most hops of the inputs at the end of in's main
// session's log, and at least its first message's (in.Hops): the hops of
// the input its last turn served. A log that cannot be read gives
// in.Hops.
func (s *System) lastHops(ctx context.Context, in store.Instance) int {
	hops := in.Hops
	sess, err := s.st.SessionByAddress(ctx, in.Agent, "main")
	if err != nil {
		return hops
	}
	evs, err := s.st.Events(ctx, sess.ID, max(0, sess.LastSeq-hopsTail), hopsTail)
	if err != nil {
		return hops
	}
	for _, ev := range evs {
		var d event.InputData
		if (ev.Kind == event.Input || ev.Kind == event.SystemMessage) && ev.Decode(&d) == nil {
			hops = max(hops, d.Hops)
		}
	}
	return hops
}

// refusedForGood reports whether an input refused with err would be
// refused again.
func refusedForGood(err error) bool {
	for _, e := range []error{runtime.ErrSessionClosed, runtime.ErrUnknownAgent, runtime.ErrInvalidAgent, runtime.ErrBadAddress,
		runtime.ErrTooLarge, runtime.ErrEmptyInput, store.ErrNotFound, store.ErrInvalid} {
		if errors.Is(err, e) {
			return true
		}
	}
	return false
}

// cost is what in cost: its own usage and its descendants' USD.
func (s *System) cost(ctx context.Context, in store.Instance) (Cost, error) {
	tree, err := s.descendants(ctx, in.Agent, false)
	if err != nil {
		return Cost{}, err
	}
	ids := []string{in.Agent}
	for _, d := range tree {
		ids = append(ids, d.Agent)
	}
	costs, err := s.st.InstanceCosts(ctx, ids)
	if err != nil {
		return Cost{}, err
	}
	c := Cost{Descendants: len(tree)}
	for _, v := range costs {
		c.USD += v
	}
	if ops, ok := s.st.(store.OpsStore); ok {
		r, err := ops.UsageReport(ctx, store.UsageQuery{Group: store.UsageByAgent, Agent: in.Agent, Limit: 1})
		if err == nil {
			c.Calls, c.InputTokens, c.OutputTokens = r.Total.Calls, r.Total.InputTokens, r.Total.OutputTokens
		}
	}
	return c, nil
}
