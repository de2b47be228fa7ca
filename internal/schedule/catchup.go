package schedule

import "time"

// Catch-up policies: which of the fire times missed while agentd was
// down (or a job was paused) are due.
const (
	Skip = "skip" // none: only a fire that is on time (within Grace) is due
	Once = "once" // the latest one; the default
	All  = "all"  // all of them, at most max, the latest ones
)

// Grace is how late a fire may be and still be on time rather than
// missed: a scheduler that wakes a little after a fire time, even past
// the minute's end, still fires it under Skip.
const Grace = time.Minute

// Due returns, in order, the fire times of s after last and up to now
// that are due per policy (Skip, Once or All; "" or any other is Once),
// given last, the last scheduled time that fired. A zero last is a new
// job: nothing before now is due, only a fire on time (within Grace of
// now), as with Skip. max caps All (less than 1 is 1).
//
// Its work is in the number of fire times between last and now, but for
// an Every schedule, where only the latest ones are looked at.
func Due(s Schedule, last, now time.Time, policy string, max int) []time.Time {
	from := last
	if last.IsZero() {
		from, policy = now.Add(-Grace), Skip
	}
	n := 1
	if policy == All && max > 1 {
		n = max
	}
	if e, ok := s.(*Every); ok {
		// Only the latest n can be due: start a little before them.
		if span := time.Duration(n+1) * e.Interval; span/time.Duration(n+1) == e.Interval && now.Add(-span).After(from) {
			from = now.Add(-span)
		}
	}
	latest := newRing(n)
	for t, ok := s.Next(from); ok && t.After(from) && !t.After(now); t, ok = s.Next(t) {
		latest.add(t)
		from = t
	}
	due := latest.slice()
	if policy == Skip && len(due) > 0 && !due[0].After(now.Add(-Grace)) {
		return nil
	}
	return due
}

// ring keeps the last n times added.
type ring struct {
	buf  []time.Time
	next int
	full bool
}

func newRing(n int) *ring { return &ring{buf: make([]time.Time, n)} }

func (r *ring) add(t time.Time) {
	r.buf[r.next] = t
	r.next = (r.next + 1) % len(r.buf)
	r.full = r.full || r.next == 0
}

// slice returns the times in the order they were added.
func (r *ring) slice() []time.Time {
	if !r.full {
		return append([]time.Time(nil), r.buf[:r.next]...)
	}
	return append(append([]time.Time(nil), r.buf[r.next:]...), r.buf[:r.next]...)
}
