package schedule_test

import (
	"testing"
	"time"
	_ "time/tzdata" // the tests must not depend on the machine's zoneinfo

	"github.com/google/go-cmp/cmp"

	"agentd/internal/schedule"
)

func zone(t testing.TB, name string) *time.Location {
	t.Helper()
	loc, err := time.LoadLocation(name)
	if err != nil {
		t.Fatal(err)
	}
	return loc
}

func mustTime(t testing.TB, s string) time.Time {
	t.Helper()
	tm, err := time.Parse(time.RFC3339, s)
	if err != nil {
		t.Fatal(err)
	}
	return tm
}

func TestParseCronErrors(t *testing.T) {
	for _, tt := range []struct{ expr, want string }{
		{"61 * * * *", "field minute: 61 is out of range 0-59"},
		{"* 24 * * *", "field hour: 24 is out of range 0-23"},
		{"* * 0 * *", "field day-of-month: 0 is out of range 1-31"},
		{"* * * 13 *", "field month: 13 is out of range 1-12"},
		{"* * * * 8", "field day-of-week: 8 is out of range 0-7"},
		{"* * * FOO *", `field month: "FOO" is not a number or a month name`},
		{"* * * * SUNDAY", `field day-of-week: "SUNDAY" is not a number or a day-of-week name`},
		{"x * * * *", `field minute: "x" is not a number`},
		{"1,,2 * * * *", `field minute: "" is not a number`},
		{"-5 * * * *", `field minute: "" is not a number`},
		{"+5 * * * *", `field minute: "+5" is not a number`},
		{"*/0 * * * *", `field minute: step "0" is not a number from 1 to 59`},
		{"*/60 * * * *", `field minute: step "60" is not a number from 1 to 59`},
		{"* */x * * *", `field hour: step "x" is not a number from 1 to 23`},
		{"5-1 * * * *", "field minute: range 5-1 runs backwards"},
		{"* * * * SAT-MON", "field day-of-week: range SAT-MON runs backwards"},
		{"", "want 5 fields (minute hour day-of-month month day-of-week) or a macro such as @daily, not 0"},
		{"* * *", "want 5 fields (minute hour day-of-month month day-of-week) or a macro such as @daily, not 3"},
		{"* * * * * *", "want 5 fields (minute hour day-of-month month day-of-week) or a macro such as @daily, not 6"},
		{"@reboot", `unknown macro "@reboot" (they are @yearly, @annually, @monthly, @weekly, @daily, @midnight, @hourly)`},
		{"0 0 30 FEB *", "never fires: no month in field month has a day in field day-of-month"},
		{"0 0 31 4,6,9,11 *", "never fires: no month in field month has a day in field day-of-month"},
	} {
		_, err := schedule.ParseCron(tt.expr)
		if err == nil || err.Error() != tt.want {
			t.Errorf("ParseCron(%q) = %v, want %q", tt.expr, err, tt.want)
		}
	}
}

func TestCronNext(t *testing.T) {
	for _, tt := range []struct {
		expr, after string
		want        []string
	}{
		{"*/15 * * * *", "2026-11-26T10:07:30Z", []string{"2026-11-26T10:15:00Z", "2026-11-26T10:30:00Z"}},
		{"*/15 * * * *", "2026-11-26T10:15:00Z", []string{"2026-11-26T10:30:00Z"}},
		{"1-30/5 * * * *", "2026-11-26T10:07:00Z", []string{"2026-11-26T10:11:00Z", "2026-11-26T10:16:00Z"}},
		{"1-30/5 * * * *", "2026-11-26T10:27:00Z", []string{"2026-11-26T11:01:00Z"}},
		{"50/5 * * * *", "2026-11-26T10:51:00Z", []string{"2026-11-26T10:55:00Z", "2026-11-26T11:50:00Z"}},
		{"0 8 * * mon-FRI", "2026-11-27T08:00:00Z", []string{"2026-11-30T08:00:00Z", "2026-12-01T08:00:00Z"}},
		{"0 0 * * 7", "2026-11-26T00:00:00Z", []string{"2026-11-29T00:00:00Z", "2026-12-06T00:00:00Z"}},
		{"0 0 * * FRI-SUN", "2026-11-26T00:00:00Z", []string{"2026-11-27T00:00:00Z", "2026-11-28T00:00:00Z", "2026-11-29T00:00:00Z", "2026-12-04T00:00:00Z"}},
		// Both day fields restricted: either matches.
		{"0 0 1 * MON", "2026-11-26T00:00:00Z", []string{"2026-11-30T00:00:00Z", "2026-12-01T00:00:00Z", "2026-12-07T00:00:00Z"}},
		// A day field that begins with * does not widen: both must match.
		{"0 0 */2 * MON", "2026-11-26T00:00:00Z", []string{"2026-12-07T00:00:00Z", "2026-12-21T00:00:00Z"}},
		{"0 12 * jan,Jul *", "2026-11-26T00:00:00Z", []string{"2027-01-01T12:00:00Z"}},
		{"0 0 29 2 *", "2026-11-26T00:00:00Z", []string{"2028-02-29T00:00:00Z", "2032-02-29T00:00:00Z"}},
		{"59 23 31 DEC *", "2026-11-26T00:00:00Z", []string{"2026-12-31T23:59:00Z", "2027-12-31T23:59:00Z"}},
		{"@hourly", "2026-11-26T10:07:00Z", []string{"2026-11-26T11:00:00Z"}},
		{"@daily", "2026-11-26T10:07:00Z", []string{"2026-11-27T00:00:00Z"}},
		{"@midnight", "2026-11-26T10:07:00Z", []string{"2026-11-27T00:00:00Z"}},
		{"@weekly", "2026-11-26T10:07:00Z", []string{"2026-11-29T00:00:00Z"}},
		{"@MONTHLY", "2026-11-26T10:07:00Z", []string{"2026-12-01T00:00:00Z"}},
		{"@yearly", "2026-11-26T10:07:00Z", []string{"2027-01-01T00:00:00Z"}},
		{"@annually", "2026-11-26T10:07:00Z", []string{"2027-01-01T00:00:00Z"}},
	} {
		c, err := schedule.ParseCron(tt.expr)
		if err != nil {
			t.Fatal(err)
		}
		if diff := cmp.Diff(tt.want, fires(c, nil, mustTime(t, tt.after), len(tt.want))); diff != "" {
			t.Errorf("%s after %s (-want +got):\n%s", tt.expr, tt.after, diff)
		}
	}
}

// fires returns n successive fire times after after, in RFC 3339.
func fires(c *schedule.Cron, loc *time.Location, after time.Time, n int) []string {
	var out []string
	for range n {
		after = c.Next(after, loc)
		out = append(out, after.Format(time.RFC3339))
	}
	return out
}

// TestCronNextDST: a wall time a spring-forward skips fires once at the
// gap's end; a wall time a fall-back repeats fires once, at its first
// occurrence.
func TestCronNextDST(t *testing.T) {
	for _, tt := range []struct {
		zone, expr, after string
		want              []string
	}{
		// Europe/Berlin: 2026-03-29 02:00 CET -> 03:00 CEST; 2026-10-25 03:00 CEST -> 02:00 CET.
		{"Europe/Berlin", "30 2 * * *", "2026-03-28T12:00:00+01:00", []string{"2026-03-29T03:00:00+02:00", "2026-03-30T02:30:00+02:00"}},
		{"Europe/Berlin", "*/30 * * * *", "2026-03-29T01:15:00+01:00", []string{"2026-03-29T01:30:00+01:00", "2026-03-29T03:00:00+02:00", "2026-03-29T03:30:00+02:00"}},
		{"Europe/Berlin", "30 2 * * *", "2026-10-24T12:00:00+02:00", []string{"2026-10-25T02:30:00+02:00", "2026-10-26T02:30:00+01:00"}},
		{"Europe/Berlin", "0 * * * *", "2026-10-25T01:30:00+02:00", []string{"2026-10-25T02:00:00+02:00", "2026-10-25T03:00:00+01:00"}},
		// America/New_York: 2026-03-08 02:00 EST -> 03:00 EDT; 2026-11-01 02:00 EDT -> 01:00 EST.
		{"America/New_York", "30 2 * * *", "2026-03-07T12:00:00-05:00", []string{"2026-03-08T03:00:00-04:00", "2026-03-09T02:30:00-04:00"}},
		{"America/New_York", "0 3 * * *", "2026-03-08T01:00:00-05:00", []string{"2026-03-08T03:00:00-04:00", "2026-03-09T03:00:00-04:00"}},
		{"America/New_York", "30 1 * * *", "2026-10-31T12:00:00-04:00", []string{"2026-11-01T01:30:00-04:00", "2026-11-02T01:30:00-05:00"}},
		// From inside the repeated hour, its first occurrence has passed.
		{"America/New_York", "45 1 * * *", "2026-11-01T01:30:00-05:00", []string{"2026-11-02T01:45:00-05:00"}},
		{"America/New_York", "15 * * * *", "2026-11-01T00:30:00-04:00", []string{"2026-11-01T01:15:00-04:00", "2026-11-01T02:15:00-05:00"}},
		// Australia/Lord_Howe shifts by 30 minutes: 2026-04-05 02:00 -> 01:30; 2026-10-04 02:00 -> 02:30.
		{"Australia/Lord_Howe", "15 2 * * *", "2026-10-03T12:00:00+10:30", []string{"2026-10-04T02:30:00+11:00", "2026-10-05T02:15:00+11:00"}},
		{"Australia/Lord_Howe", "45 1 * * *", "2026-04-04T12:00:00+11:00", []string{"2026-04-05T01:45:00+11:00", "2026-04-06T01:45:00+10:30"}},
		{"Australia/Lord_Howe", "*/20 * * * *", "2026-04-05T01:30:00+11:00", []string{"2026-04-05T01:40:00+11:00", "2026-04-05T02:00:00+10:30"}},
		// Asia/Tokyo has no DST.
		{"Asia/Tokyo", "30 2 * * *", "2026-03-28T12:00:00+09:00", []string{"2026-03-29T02:30:00+09:00", "2026-03-30T02:30:00+09:00"}},
		{"UTC", "30 2 * * *", "2026-03-28T12:00:00Z", []string{"2026-03-29T02:30:00Z"}},
	} {
		c, err := schedule.ParseCron(tt.expr)
		if err != nil {
			t.Fatal(err)
		}
		if diff := cmp.Diff(tt.want, fires(c, zone(t, tt.zone), mustTime(t, tt.after), len(tt.want))); diff != "" {
			t.Errorf("%s %s after %s (-want +got):\n%s", tt.zone, tt.expr, tt.after, diff)
		}
	}
}

// wall returns t's wall clock in loc, held in a UTC time.
func wall(t time.Time, loc *time.Location) time.Time {
	_, off := t.In(loc).Zone()
	return t.Add(time.Duration(off) * time.Second).UTC().Truncate(time.Minute)
}

// bruteFires is the reference Next is checked against: the fire times
// in (from, to], found by walking every minute. A minute fires when its
// wall time is new (later than every wall time shown before it, so not
// one a fall-back repeats) and it, or a wall time that a spring-forward
// skipped just before it, matches.
func bruteFires(c *schedule.Cron, loc *time.Location, from, to time.Time) []time.Time {
	start := from.Truncate(time.Minute).Add(-3 * time.Hour) // before any fall-back that matters
	seen := wall(start, loc)
	var out []time.Time
	for t := start.Add(time.Minute); !t.After(to); t = t.Add(time.Minute) {
		w := wall(t, loc)
		if !w.After(seen) {
			continue
		}
		fire := false
		for g := seen.Add(time.Minute); !g.After(w) && !fire; g = g.Add(time.Minute) {
			fire = c.Matches(g)
		}
		seen = w
		if fire && t.After(from) {
			out = append(out, t)
		}
	}
	return out
}

// TestCronYearAgainstBruteForce walks a whole year of fires, across both
// DST transitions, and compares them with the minute-by-minute
// reference. 2040 is a leap year past the zone database's listed
// transitions, where zones follow their rule (and Time.ZoneBounds is
// wrong on the year's last day, golang/go#81583).
func TestCronYearAgainstBruteForce(t *testing.T) {
	for _, tt := range []struct {
		year  int
		zones []string
		exprs []string
	}{
		{2026, []string{"UTC", "Europe/Berlin", "America/New_York", "Australia/Lord_Howe"}, []string{"*/7 * * * *", "0 8 * * 1-5", "30 2 * * *"}},
		{2040, []string{"Europe/Berlin", "America/New_York"}, []string{"0 8 * * 1-5", "30 2 * * *"}},
	} {
		yearAgainstBruteForce(t, tt.year, tt.zones, tt.exprs)
	}
}

func yearAgainstBruteForce(t *testing.T, year int, zones, exprs []string) {
	from, to := time.Date(year, 1, 1, 0, 0, 0, 0, time.UTC), time.Date(year+1, 1, 1, 0, 0, 0, 0, time.UTC)
	for _, name := range zones {
		loc := zone(t, name)
		for _, expr := range exprs {
			c, err := schedule.ParseCron(expr)
			if err != nil {
				t.Fatal(err)
			}
			want := bruteFires(c, loc, from, to)
			var got []time.Time
			for f := c.Next(from, loc); !f.After(to); f = c.Next(f, loc) {
				got = append(got, f)
			}
			if len(want) < 250 {
				t.Fatalf("%d %s %s: only %d reference fires", year, name, expr, len(want))
			}
			if i := firstDiff(want, got); i >= 0 {
				t.Errorf("%d %s %s: fire %d: reference %s, Next %s", year, name, expr, i, at(want, i, loc), at(got, i, loc))
			}
		}
	}
}

// firstDiff returns the index of the first time that differs between a
// and b, -1 if they are equal.
func firstDiff(a, b []time.Time) int {
	for i := range max(len(a), len(b)) {
		if i >= len(a) || i >= len(b) || !a[i].Equal(b[i]) {
			return i
		}
	}
	return -1
}

// at returns ts[i] in loc in RFC 3339, "none" past its end.
func at(ts []time.Time, i int, loc *time.Location) string {
	if i >= len(ts) {
		return "none"
	}
	return ts[i].In(loc).Format(time.RFC3339)
}

var fuzzZones = []string{"UTC", "Europe/Berlin", "America/New_York", "Australia/Lord_Howe", "Asia/Tokyo", "Antarctica/Troll", "America/Santiago", "Pacific/Chatham"}

// FuzzCron: random expressions never panic; for those that parse, Next
// is strictly increasing and agrees with the minute-by-minute reference
// over a week after a random instant (2020 to 2070) in a random zone.
func FuzzCron(f *testing.F) {
	for _, s := range []string{"*/7 * * * *", "0 8 * * 1-5", "30 2 * * *", "0 0 1 * MON", "@hourly", "1-30/5 1,2,3 */3 jan-mar 7", "0 0 29 2 *", "* * * * *", "61 * * * *", "0 0 31 4 *"} {
		f.Add(s, int64(1774745400), uint8(1))
		f.Add(s, int64(1792800000), uint8(2))
		f.Add(s, int64(2240000000), uint8(1)) // late December 2040
	}
	f.Fuzz(func(t *testing.T, expr string, at int64, z uint8) {
		c, err := schedule.ParseCron(expr)
		if err != nil {
			return
		}
		loc := zone(t, fuzzZones[int(z)%len(fuzzZones)])
		const span = 50 * 365 * 86400 // 2020 to 2070, past the zone database's listed transitions
		base := mustTime(t, "2020-01-01T00:00:00Z").Unix()
		after := time.Unix(base+(at%span+span)%span, 0)
		to := after.Add(7 * 24 * time.Hour)
		next := c.Next(after, loc)
		if !next.After(after) {
			t.Fatalf("%q: Next(%s) = %s, not after it", expr, after, next)
		}
		if again := c.Next(next, loc); !again.After(next) {
			t.Fatalf("%q: Next(%s) = %s, not after it", expr, next, again)
		}
		want := bruteFires(c, loc, after, to)
		switch {
		case len(want) > 0 && !next.Equal(want[0]):
			t.Fatalf("%q in %s: Next(%s) = %s, reference %s", expr, loc, after, next, want[0])
		case len(want) == 0 && !next.After(to):
			t.Fatalf("%q in %s: Next(%s) = %s, reference none within a week", expr, loc, after, next)
		}
	})
}

func BenchmarkCronNext(b *testing.B) {
	loc := zone(b, "Europe/Berlin")
	for _, expr := range []string{"*/7 * * * *", "0 8 * * 1-5", "0 0 29 2 *"} {
		c, err := schedule.ParseCron(expr)
		if err != nil {
			b.Fatal(err)
		}
		b.Run(expr, func(b *testing.B) {
			at := mustTime(b, "2026-01-01T00:00:00Z")
			for b.Loop() {
				at = c.Next(at, loc)
			}
		})
	}
}
