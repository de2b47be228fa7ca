package schedule

import (
	"strings"
	"time"
)

// MinEvery is the shortest interval of an every trigger.
const MinEvery = time.Second

// Every fires at a fixed interval anchored to the Unix epoch: at every
// time that is Offset plus a whole number of Intervals after
// 1970-01-01T00:00:00Z. The fire times are a function of the interval
// alone, not of when agentd started or when the job was saved, so every
// node of a cluster and every restart compute the same times, and a
// fire's idempotency key (its scheduled time) is the same everywhere:
// a second node or a restart recognises a fire as the one already done
// instead of firing a shifted copy.
type Every struct {
	Interval time.Duration // a whole number of seconds, at least MinEvery
	// Offset shifts the fire times, to spread jobs of the same interval
	// (e.g. one derived from the job's name, never a random one, so it
	// stays the same on every node); default 0. It is taken modulo
	// Interval.
	Offset time.Duration
}

// ParseEvery parses an interval such as "2s", "90s", "5m" or "1h30m":
// a Go duration of whole seconds, at least MinEvery.
func ParseEvery(s string) (*Every, error) {
	d, err := time.ParseDuration(s)
	switch {
	case err != nil || strings.HasPrefix(s, "-") || strings.HasPrefix(s, "+"):
		return nil, invalid("want an interval of at least %s such as 30s or 2h, not %q", MinEvery, s)
	case d < MinEvery:
		return nil, invalid("want an interval of at least %s such as 30s or 2h, not %q", MinEvery, s)
	case d%time.Second != 0:
		return nil, invalid("want an interval of whole seconds, not %q", s)
	}
	return &Every{Interval: d}, nil
}

// Next returns the first fire time strictly after after; it has one
// unless Interval is under a second (an Every ParseEvery did not make).
func (e *Every) Next(after time.Time) (time.Time, bool) {
	d := int64(e.Interval / time.Second)
	if d < 1 {
		return time.Time{}, false
	}
	off := int64(e.Offset/time.Second) % d
	s := after.Unix() - off // whole seconds, so a fire after a fraction is the next one
	r := s % d
	if r < 0 {
		r += d
	}
	return time.Unix(s-r+d+off, 0).UTC(), true
}

// At fires once, at a time.
type At struct{ Time time.Time }

// ParseAt parses an RFC 3339 time such as 2026-12-01T08:00:00Z;
// fractions of a second are dropped, as fire times are in seconds.
func ParseAt(s string) (*At, error) {
	t, err := time.Parse(time.RFC3339, s)
	if err != nil {
		return nil, invalid("want an RFC 3339 time such as 2026-12-01T08:00:00Z, not %q", s)
	}
	return &At{Time: t.Truncate(time.Second)}, nil
}

// Next returns the time if it is after after.
func (a *At) Next(after time.Time) (time.Time, bool) {
	if !a.Time.After(after) {
		return time.Time{}, false
	}
	return a.Time, true
}
