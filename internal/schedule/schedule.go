package schedule

import (
	"errors"
	"strings"
	"time"
)

// Schedule is when a trigger fires.
type Schedule interface {
	// Next returns the first fire time strictly after after; false if
	// there is none (an at trigger that has passed).
	Next(after time.Time) (time.Time, bool)
}

// Zoned is a cron expression read in a time zone.
type Zoned struct {
	Cron *Cron
	Loc  *time.Location
}

// Next returns Cron's next fire time in Loc.
func (z *Zoned) Next(after time.Time) (time.Time, bool) {
	t := z.Cron.Next(after, z.Loc)
	return t, !t.IsZero()
}

// FromTrigger returns the schedule of a job trigger's fields: cron (with
// tz, an IANA zone, default UTC), every or at, exactly one of them. Its
// error joins a *FieldError per field that is wrong, each named as a
// JSON pointer under the trigger ("/cron: field minute: 61 is out of
// range 0-59", "/tz: unknown time zone …"; "" when none or several of
// the three are set).
func FromTrigger(cron, tz, every, at string) (Schedule, error) {
	var errs []error
	bad := func(ptr string, err error) {
		errs = append(errs, &FieldError{Pointer: ptr, Err: err})
	}
	var s Schedule
	set := 0
	if cron != "" {
		set++
		c, err := ParseCron(cron)
		if err != nil {
			bad("/cron", err)
		}
		loc, err := LoadZone(tz)
		if err != nil {
			bad("/tz", err)
		}
		s = &Zoned{Cron: c, Loc: loc}
	} else if tz != "" {
		bad("/tz", invalid("a time zone goes with a cron expression"))
	}
	if at != "" {
		set++
		a, err := ParseAt(at)
		if err != nil {
			bad("/at", err)
		}
		s = a
	}
	if every != "" {
		set++
		e, err := ParseEvery(every)
		if err != nil {
			bad("/every", err)
		}
		s = e
	}
	if set != 1 && (set > 1 || tz == "") {
		bad("", invalid("a schedule is one of cron, every or at (this one has %d)", set))
	}
	if len(errs) > 0 {
		return nil, errors.Join(errs...)
	}
	return s, nil
}

// LoadZone loads an IANA time zone such as Europe/Berlin; "" is UTC.
// "Local" is refused: the machine's zone would make a job fire at
// different times on different nodes.
func LoadZone(name string) (*time.Location, error) {
	loc, err := time.LoadLocation(name)
	if err != nil || strings.EqualFold(name, "local") {
		return nil, invalid("unknown time zone %q (an IANA name such as Europe/Berlin)", name)
	}
	return loc, nil
}
