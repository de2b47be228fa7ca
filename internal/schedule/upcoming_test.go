package schedule_test

import (
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"agentd/internal/schedule"
)

func TestUpcoming(t *testing.T) {
	after := mustTime(t, "2026-11-26T12:00:00Z")
	sched := func(cron, tz, every, at string) schedule.Schedule {
		s, err := schedule.FromTrigger(cron, tz, every, at)
		if err != nil {
			t.Fatal(err)
		}
		return s
	}
	for _, tt := range []struct {
		name string
		ss   []schedule.Schedule
		n    int
		want []string
	}{
		{"none", nil, 5, nil},
		{"an interval", []schedule.Schedule{sched("", "", "2s", "")}, 3,
			[]string{"2026-11-26T12:00:02Z", "2026-11-26T12:00:04Z", "2026-11-26T12:00:06Z"}},
		{"cron in a zone, in UTC", []schedule.Schedule{sched("30 9 * * *", "Asia/Kolkata", "", "")}, 2,
			[]string{"2026-11-27T04:00:00Z", "2026-11-28T04:00:00Z"}},
		{"merged, a shared time once", []schedule.Schedule{sched("", "", "3s", ""), sched("", "", "2s", "")}, 5,
			[]string{"2026-11-26T12:00:02Z", "2026-11-26T12:00:03Z", "2026-11-26T12:00:04Z", "2026-11-26T12:00:06Z", "2026-11-26T12:00:08Z"}},
		{"an at runs out", []schedule.Schedule{sched("", "", "", "2026-11-26T13:00:00Z")}, 5, []string{"2026-11-26T13:00:00Z"}},
		{"an at passed", []schedule.Schedule{sched("", "", "", "2026-11-26T11:00:00Z")}, 5, nil},
		{"the same at twice", []schedule.Schedule{sched("", "", "", "2026-11-26T13:00:00Z"), sched("", "", "", "2026-11-26T13:00:00Z")}, 5,
			[]string{"2026-11-26T13:00:00Z"}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			var got []string
			for _, f := range schedule.Upcoming(tt.ss, after, tt.n) {
				if f.Location() != time.UTC {
					t.Errorf("%v is not in UTC", f)
				}
				got = append(got, f.Format(time.RFC3339))
			}
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("(-want +got)\n%s", diff)
			}
		})
	}
}
