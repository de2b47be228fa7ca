package schedule

import (
	"fmt"
	"math/bits"
	"strings"
	"time"
)

// Cron is a parsed 5-field cron expression: minute, hour, day of month,
// month, day of week. Its zero value never fires; ParseCron makes one.
type Cron struct {
	expr string
	// Bit v of a field is set when value v matches (day of week 7 is
	// stored as 0, Sunday).
	minute, hour, dom, month, dow uint64
	// domStar and dowStar: the field begins with "*" and so does not
	// restrict the day (the Vixie cron rule, see ParseCron).
	domStar, dowStar bool
}

// cronField is one field of a cron expression: its name in errors, its
// range and the names its values may have (names[i] is min+i).
type cronField struct {
	name     string
	min, max int
	names    []string
}

var cronFields = [5]cronField{
	{"minute", 0, 59, nil},
	{"hour", 0, 23, nil},
	{"day-of-month", 1, 31, nil},
	{"month", 1, 12, []string{"JAN", "FEB", "MAR", "APR", "MAY", "JUN", "JUL", "AUG", "SEP", "OCT", "NOV", "DEC"}},
	{"day-of-week", 0, 7, []string{"SUN", "MON", "TUE", "WED", "THU", "FRI", "SAT"}},
}

// cronMacros are the @ names and the expressions they stand for.
var cronMacros = map[string]string{
	"@yearly":   "0 0 1 1 *",
	"@annually": "0 0 1 1 *",
	"@monthly":  "0 0 1 * *",
	"@weekly":   "0 0 * * 0",
	"@daily":    "0 0 * * *",
	"@midnight": "0 0 * * *",
	"@hourly":   "0 * * * *",
}

// ParseCron parses a cron expression: five fields separated by spaces
// (minute 0-59, hour 0-23, day-of-month 1-31, month 1-12 or JAN-DEC,
// day-of-week 0-7 or SUN-SAT, 0 and 7 both Sunday; names in any case),
// each a comma-separated list of "*", a value or a range "a-b", each
// with an optional step "/n" ("*/15", "1-30/5"; "a/n" is "a-max/n"), or
// one of the macros @yearly (@annually), @monthly, @weekly, @daily
// (@midnight) and @hourly.
//
// When both day-of-month and day-of-week are restricted, a day matches
// if either matches ("0 0 1 * MON": the 1st and every Monday); when
// either begins with "*" (even "*/2"), a day must match both. This is
// Vixie cron's rule, which crontab(5) documents.
//
// An error names the field and the token ("field day-of-week: 8 is out
// of range 0-7"); an expression that can never fire ("0 0 30 FEB *") is
// an error too.
func ParseCron(expr string) (*Cron, error) {
	src := strings.TrimSpace(expr)
	if strings.HasPrefix(src, "@") {
		m, ok := cronMacros[strings.ToLower(src)]
		if !ok {
			return nil, invalid("unknown macro %q (they are @yearly, @annually, @monthly, @weekly, @daily, @midnight, @hourly)", src)
		}
		src = m
	}
	parts := strings.Fields(src)
	if len(parts) != len(cronFields) {
		return nil, invalid("want 5 fields (minute hour day-of-month month day-of-week) or a macro such as @daily, not %d", len(parts))
	}
	c := &Cron{expr: expr}
	dst := [5]*uint64{&c.minute, &c.hour, &c.dom, &c.month, &c.dow}
	for i, p := range parts {
		b, err := parseCronField(p, &cronFields[i])
		if err != nil {
			return nil, invalid("field %s: %v", cronFields[i].name, err)
		}
		*dst[i] = b
	}
	if c.dow&(1<<7) != 0 {
		c.dow = c.dow&^(1<<7) | 1
	}
	c.domStar, c.dowStar = parts[2][0] == '*', parts[4][0] == '*'
	if err := c.checkFires(); err != nil {
		return nil, err
	}
	return c, nil
}

// String returns the expression as it was written.
func (c *Cron) String() string { return c.expr }

// monthDays is the most days each month has (February in a leap year).
var monthDays = [13]int{0, 31, 29, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31}

// checkFires refuses an expression whose days of month are in none of
// its months ("0 0 31 APR,JUN *"), which would never fire.
func (c *Cron) checkFires() error {
	if c.domStar || !c.dowStar {
		return nil // every month has a matching day of the week
	}
	for m := 1; m <= 12; m++ {
		if c.month&(1<<m) != 0 && c.dom&(1<<(monthDays[m]+1)-1) != 0 {
			return nil
		}
	}
	return invalid("never fires: no month in field month has a day in field day-of-month")
}

// parseCronField returns the bits of the values one field's list
// matches.
func parseCronField(s string, f *cronField) (uint64, error) {
	var set uint64
	for item := range strings.SplitSeq(s, ",") {
		rng, stepText, hasStep := strings.Cut(item, "/")
		lo, hi := f.min, f.max
		if rng != "*" {
			a, b, isRange := strings.Cut(rng, "-")
			var err error
			if lo, err = f.value(a); err != nil {
				return 0, err
			}
			switch {
			case isRange:
				if hi, err = f.value(b); err != nil {
					return 0, err
				}
				if hi == 0 && f.max == 7 && lo > 0 {
					hi = 7 // FRI-SUN: Sunday as 7 ends a range
				}
				if hi < lo {
					return 0, fmt.Errorf("range %s runs backwards", rng)
				}
			case !hasStep:
				hi = lo
			}
		}
		step := 1
		if hasStep {
			n, ok := number(stepText)
			if !ok || n < 1 || n > f.max {
				return 0, fmt.Errorf("step %q is not a number from 1 to %d", stepText, f.max)
			}
			step = n
		}
		for v := lo; v <= hi; v += step {
			set |= 1 << v
		}
	}
	return set, nil
}

// value parses one value of the field: a number in range or a name.
func (f *cronField) value(s string) (int, error) {
	for i, n := range f.names {
		if strings.EqualFold(s, n) {
			return f.min + i, nil
		}
	}
	n, ok := number(s)
	switch {
	case !ok && f.names != nil:
		return 0, fmt.Errorf("%q is not a number or a %s name", s, f.name)
	case !ok:
		return 0, fmt.Errorf("%q is not a number", s)
	case n < f.min || n > f.max:
		return 0, fmt.Errorf("%d is out of range %d-%d", n, f.min, f.max)
	}
	return n, nil
}

// number parses a short run of ASCII digits (no sign, no spaces).
func number(s string) (int, bool) {
	if s == "" || len(s) > 4 {
		return 0, false
	}
	n := 0
	for _, r := range s {
		if r < '0' || r > '9' {
			return 0, false
		}
		n = n*10 + int(r-'0')
	}
	return n, true
}

// Next returns the first time the expression fires strictly after
// after, as wall-clock times in loc (nil is UTC), at minute precision.
//
// Daylight saving time: a wall time that a spring-forward gap skips
// fires once, at the first instant after the gap (02:30 on the day
// clocks jump from 02:00 to 03:00 fires at 03:00; several skipped
// times, and 03:00 itself, are that one fire); a wall time that a
// fall-back repeats fires once, at its first occurrence. So a daily job
// fires exactly once each day, and fire times are strictly increasing.
//
// Next returns the zero time if the expression does not fire within ten
// years (ParseCron refuses the expressions that never fire).
func (c *Cron) Next(after time.Time, loc *time.Location) time.Time {
	if loc == nil {
		loc = time.UTC
	}
	a := after.In(loc)
	y, mo, d := a.Date()
	w := time.Date(y, mo, d, a.Hour(), a.Minute()+1, 0, 0, time.UTC)
	end := w.AddDate(10, 0, 0)
	for {
		var ok bool
		if w, ok = c.nextWall(w, end); !ok {
			return time.Time{}
		}
		// A wall time before after's own can only have passed; one after
		// it may still have passed once a fall-back repeats it.
		if t := resolve(w, loc); t.After(after) {
			return t
		}
		w = w.Add(time.Minute)
	}
}

// nextWall returns the first wall time at or after w (a wall clock held
// in a UTC time, minute-aligned) that the expression matches, if one
// comes before end.
func (c *Cron) nextWall(w, end time.Time) (time.Time, bool) {
	for w.Before(end) {
		y, mo, d := w.Date()
		switch {
		case c.month&(1<<mo) == 0:
			w = time.Date(y, mo+1, 1, 0, 0, 0, 0, time.UTC)
		case !c.day(w):
			w = time.Date(y, mo, d+1, 0, 0, 0, 0, time.UTC)
		case c.hour>>w.Hour() == 0:
			w = time.Date(y, mo, d+1, 0, 0, 0, 0, time.UTC)
		case c.hour&(1<<w.Hour()) == 0:
			w = time.Date(y, mo, d, w.Hour()+bits.TrailingZeros64(c.hour>>w.Hour()), 0, 0, 0, time.UTC)
		case c.minute>>w.Minute() == 0:
			w = time.Date(y, mo, d, w.Hour()+1, 0, 0, 0, time.UTC)
		case c.minute&(1<<w.Minute()) == 0:
			w = w.Add(time.Duration(bits.TrailingZeros64(c.minute>>w.Minute())) * time.Minute)
		default:
			return w, true
		}
	}
	return time.Time{}, false
}

// day reports whether the expression matches w's day (see ParseCron for
// the rule when both day fields are restricted).
func (c *Cron) day(w time.Time) bool {
	dom := c.dom&(1<<w.Day()) != 0
	dow := c.dow&(1<<w.Weekday()) != 0
	if c.domStar || c.dowStar {
		return dom && dow
	}
	return dom || dow
}

// maxOffset bounds a zone's offset from UTC (tzdata's extremes are under
// 16 hours).
const maxOffset = 26 * 60 * 60

// resolve returns the instant the wall time w (held in a UTC time) is
// in loc: its first occurrence if a fall-back repeats it, the end of the
// gap if a spring-forward skips it.
//
// Any instant that shows w is w's seconds minus the offset in effect
// then, so it is one of the two candidates the offsets a little before
// and a little after give (zones change offset at most once in two
// days); a candidate is real if its own offset is the one it assumed.
// With neither real, w is in a gap, whose end is found by bisection.
// It asks loc only for offsets: Time.ZoneBounds is wrong in some years
// (golang/go#81583).
func resolve(w time.Time, loc *time.Location) time.Time {
	u := w.Unix()
	early, late := offsetAt(u-maxOffset, loc), offsetAt(u+maxOffset, loc)
	var first int64
	found := false
	for _, off := range [2]int64{early, late} {
		if c := u - off; offsetAt(c, loc) == off && (!found || c < first) {
			first, found = c, true
		}
	}
	if found {
		return time.Unix(first, 0).In(loc)
	}
	// A gap: the offset is early at lo and late from some instant in
	// (lo, hi], the gap's end.
	lo, hi := u-late, u-early
	for hi-lo > 1 {
		mid := lo + (hi-lo)/2
		if offsetAt(mid, loc) == early {
			lo = mid
		} else {
			hi = mid
		}
	}
	return time.Unix(hi, 0).In(loc)
}

// offsetAt returns loc's offset from UTC, in seconds, at Unix time s.
func offsetAt(s int64, loc *time.Location) int64 {
	_, off := time.Unix(s, 0).In(loc).Zone()
	return int64(off)
}
