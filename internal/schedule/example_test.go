package schedule_test

import (
	"fmt"
	"time"

	"agentd/internal/schedule"
)

// A cron expression in a time zone: 02:30 does not exist in Berlin on
// the day clocks jump from 02:00 to 03:00, so that day's fire is at
// 03:00; on the day 02:30 happens twice, it fires at the first.
func ExampleCron_Next() {
	c, err := schedule.ParseCron("30 2 * * *")
	if err != nil {
		panic(err)
	}
	berlin, _ := time.LoadLocation("Europe/Berlin")
	for _, day := range []string{"2026-03-28T12:00:00Z", "2026-10-24T12:00:00Z"} {
		after, _ := time.Parse(time.RFC3339, day)
		next := c.Next(after, berlin)
		fmt.Println(next.Format(time.RFC3339), c.Next(next, berlin).Format(time.RFC3339))
	}
	// Output:
	// 2026-03-29T03:00:00+02:00 2026-03-30T02:30:00+02:00
	// 2026-10-25T02:30:00+02:00 2026-10-26T02:30:00+01:00
}

func ExampleParseCron() {
	_, err := schedule.ParseCron("0 8 * * MON-SAT,8")
	fmt.Println(err)
	// Output: field day-of-week: 8 is out of range 0-7
}

// An interval is anchored to the Unix epoch: whenever it is asked, every
// node computes the same fire times.
func ExampleParseEvery() {
	e, err := schedule.ParseEvery("90s")
	if err != nil {
		panic(err)
	}
	after := time.Date(2026, 11, 26, 8, 0, 10, 0, time.UTC)
	next, _ := e.Next(after)
	fmt.Println(next.Format(time.RFC3339), schedule.RunID(next))
	// Output: 2026-11-26T08:01:30Z 20261126T080130Z
}

// A trigger's fields give its schedule, or errors that name the field.
func ExampleFromTrigger() {
	s, err := schedule.FromTrigger("0 8 * * 1-5", "America/New_York", "", "")
	if err != nil {
		panic(err)
	}
	next, _ := s.Next(time.Date(2026, 11, 27, 14, 0, 0, 0, time.UTC)) // a Friday
	fmt.Println(next.Format(time.RFC3339))

	_, err = schedule.FromTrigger("0 8 * * 1-5", "Mars/Base", "", "")
	fmt.Println(err)
	// Output:
	// 2026-11-30T08:00:00-05:00
	// /tz: unknown time zone "Mars/Base" (an IANA name such as Europe/Berlin)
}

// After three days down, a daily job's missed fires per catch-up policy.
func ExampleDue() {
	s, _ := schedule.FromTrigger("0 8 * * *", "", "", "")
	last := time.Date(2026, 11, 23, 8, 0, 0, 0, time.UTC)
	now := time.Date(2026, 11, 26, 12, 0, 0, 0, time.UTC)
	for _, policy := range []string{schedule.Skip, schedule.Once, schedule.All} {
		var ids []string
		for _, t := range schedule.Due(s, last, now, policy, 10) {
			ids = append(ids, schedule.RunID(t))
		}
		fmt.Println(policy, ids)
	}
	// Output:
	// skip []
	// once [20261126T080000Z]
	// all [20261124T080000Z 20261125T080000Z 20261126T080000Z]
}

// A job's next fires over its triggers together: a weekday cron in
// Berlin and a one-shot time.
func ExampleUpcoming() {
	cron, _ := schedule.FromTrigger("0 8 * * 1-5", "Europe/Berlin", "", "")
	at, _ := schedule.FromTrigger("", "", "", "2026-11-30T12:00:00Z")
	after := time.Date(2026, 11, 27, 12, 0, 0, 0, time.UTC) // a Friday
	for _, t := range schedule.Upcoming([]schedule.Schedule{cron, at}, after, 4) {
		fmt.Println(t.Format(time.RFC3339))
	}
	// Output:
	// 2026-11-30T07:00:00Z
	// 2026-11-30T12:00:00Z
	// 2026-12-01T07:00:00Z
	// 2026-12-02T07:00:00Z
}
