package schedule_test

import (
	"errors"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"agentd/internal/schedule"
)

func TestFromTrigger(t *testing.T) {
	after := mustTime(t, "2026-11-26T12:00:00Z")
	for _, tt := range []struct {
		cron, tz, every, at string
		want                string // the next fire time, or the error
	}{
		{cron: "0 8 * * 1-5", tz: "Europe/Berlin", want: "2026-11-27T08:00:00+01:00"},
		{cron: "0 8 * * 1-5", want: "2026-11-27T08:00:00Z"},
		{every: "2s", want: "2026-11-26T12:00:02Z"},
		{at: "2026-12-01T08:00:00Z", want: "2026-12-01T08:00:00Z"},
		{at: "2026-11-01T08:00:00Z", want: "none"},
		{cron: "61 * * * *", tz: "Mars/Base", want: "/cron: field minute: 61 is out of range 0-59\n" +
			`/tz: unknown time zone "Mars/Base" (an IANA name such as Europe/Berlin)`},
		{cron: "@daily", tz: "Local", want: `/tz: unknown time zone "Local" (an IANA name such as Europe/Berlin)`},
		{tz: "Europe/Berlin", every: "5m", want: "/tz: a time zone goes with a cron expression"},
		{tz: "Europe/Berlin", want: "/tz: a time zone goes with a cron expression"},
		{want: "a schedule is one of cron, every or at (this one has 0)"},
		{cron: "* * * * *", every: "10ms", want: `/every: want an interval of at least 1s such as 30s or 2h, not "10ms"` +
			"\na schedule is one of cron, every or at (this one has 2)"},
		{at: "soon", want: `/at: want an RFC 3339 time such as 2026-12-01T08:00:00Z, not "soon"`},
	} {
		s, err := schedule.FromTrigger(tt.cron, tt.tz, tt.every, tt.at)
		got := "none"
		switch {
		case err != nil:
			got = err.Error()
			var fe *schedule.FieldError
			if !errors.Is(err, schedule.ErrInvalid) || !errors.As(err, &fe) {
				t.Errorf("%+v: %v is not an ErrInvalid *FieldError", tt, err)
			}
		default:
			if next, ok := s.Next(after); ok {
				got = next.Format(time.RFC3339)
			}
		}
		if got != tt.want {
			t.Errorf("FromTrigger(%q, %q, %q, %q) = %q, want %q", tt.cron, tt.tz, tt.every, tt.at, got, tt.want)
		}
	}
}

func TestDue(t *testing.T) {
	daily, err := schedule.FromTrigger("0 8 * * *", "", "", "")
	if err != nil {
		t.Fatal(err)
	}
	tenSec := &schedule.Every{Interval: 10 * time.Second}
	oneSec := &schedule.Every{Interval: time.Second}
	at, _ := schedule.ParseAt("2026-12-01T08:00:00Z")
	for _, tt := range []struct {
		name      string
		s         schedule.Schedule
		last, now string
		policy    string
		max       int
		want      []string
	}{
		{"new job: the fire on time", daily, "", "2026-11-26T08:00:30Z", schedule.Once, 0, []string{"2026-11-26T08:00:00Z"}},
		{"new job: the fire on time, a little past its minute", daily, "", "2026-11-26T08:00:59Z", schedule.All, 5, []string{"2026-11-26T08:00:00Z"}},
		{"new job: nothing before now", daily, "", "2026-11-26T09:00:00Z", schedule.All, 5, nil},
		{"new job: the latest on time", tenSec, "", "2026-11-26T08:00:35Z", schedule.All, 5, []string{"2026-11-26T08:00:30Z"}},
		{"skip: none missed", daily, "2026-11-23T08:00:00Z", "2026-11-26T12:00:00Z", schedule.Skip, 0, nil},
		{"once: the latest missed", daily, "2026-11-23T08:00:00Z", "2026-11-26T12:00:00Z", schedule.Once, 0, []string{"2026-11-26T08:00:00Z"}},
		{"default is once", daily, "2026-11-23T08:00:00Z", "2026-11-26T12:00:00Z", "", 0, []string{"2026-11-26T08:00:00Z"}},
		{"all: every missed one", daily, "2026-11-23T08:00:00Z", "2026-11-26T12:00:00Z", schedule.All, 10,
			[]string{"2026-11-24T08:00:00Z", "2026-11-25T08:00:00Z", "2026-11-26T08:00:00Z"}},
		{"all: at most max, the latest", daily, "2026-11-23T08:00:00Z", "2026-11-26T12:00:00Z", schedule.All, 2,
			[]string{"2026-11-25T08:00:00Z", "2026-11-26T08:00:00Z"}},
		{"all: max below 1 is 1", daily, "2026-11-23T08:00:00Z", "2026-11-26T12:00:00Z", schedule.All, 0, []string{"2026-11-26T08:00:00Z"}},
		{"skip: the fire on time", daily, "2026-11-25T08:00:00Z", "2026-11-26T08:00:05Z", schedule.Skip, 0, []string{"2026-11-26T08:00:00Z"}},
		{"skip: on time after missed ones", daily, "2026-11-20T08:00:00Z", "2026-11-26T08:00:05Z", schedule.Skip, 0, []string{"2026-11-26T08:00:00Z"}},
		{"already fired", daily, "2026-11-26T08:00:00Z", "2026-11-26T08:00:30Z", schedule.All, 5, nil},
		{"not yet", daily, "2026-11-25T08:00:00Z", "2026-11-26T07:59:59Z", schedule.Once, 0, nil},
		{"now is a fire time", daily, "2026-11-25T08:00:00Z", "2026-11-26T08:00:00Z", schedule.Once, 0, []string{"2026-11-26T08:00:00Z"}},
		{"every: a year down, all", oneSec, "2025-11-26T08:00:00Z", "2026-11-26T08:00:00.5Z", schedule.All, 3,
			[]string{"2026-11-26T07:59:58Z", "2026-11-26T07:59:59Z", "2026-11-26T08:00:00Z"}},
		{"every: a year down, once", oneSec, "2025-11-26T08:00:00Z", "2026-11-26T08:00:00.5Z", schedule.Once, 0, []string{"2026-11-26T08:00:00Z"}},
		{"every: a year down, skip a late one", tenSec, "2025-11-26T08:00:00Z", "2026-11-26T08:01:05Z", schedule.Skip, 0, []string{"2026-11-26T08:01:00Z"}},
		{"at: new job on time", at, "", "2026-12-01T08:00:10Z", schedule.Once, 0, []string{"2026-12-01T08:00:00Z"}},
		{"at: new job, passed", at, "", "2026-12-02T00:00:00Z", schedule.Once, 0, nil},
		{"at: missed while down", at, "2026-11-30T00:00:00Z", "2026-12-02T00:00:00Z", schedule.Once, 0, []string{"2026-12-01T08:00:00Z"}},
		{"at: fired", at, "2026-12-01T08:00:00Z", "2026-12-02T00:00:00Z", schedule.All, 5, nil},
	} {
		var last time.Time
		if tt.last != "" {
			last = mustTime(t, tt.last)
		}
		var got []string
		for _, f := range schedule.Due(tt.s, last, mustTime(t, tt.now), tt.policy, tt.max) {
			got = append(got, f.Format(time.RFC3339))
		}
		if diff := cmp.Diff(tt.want, got); diff != "" {
			t.Errorf("%s: Due (-want +got):\n%s", tt.name, diff)
		}
	}
}
