package schedule_test

import (
	"errors"
	"testing"
	"time"

	"agentd/internal/schedule"
)

func TestParseEvery(t *testing.T) {
	for _, tt := range []struct {
		in   string
		want time.Duration
		err  string
	}{
		{in: "2s", want: 2 * time.Second},
		{in: "1s", want: time.Second},
		{in: "90s", want: 90 * time.Second},
		{in: "5m", want: 5 * time.Minute},
		{in: "1h30m", want: 90 * time.Minute},
		{in: "10ms", err: `want an interval of at least 1s such as 30s or 2h, not "10ms"`},
		{in: "0s", err: `want an interval of at least 1s such as 30s or 2h, not "0s"`},
		{in: "-5s", err: `want an interval of at least 1s such as 30s or 2h, not "-5s"`},
		{in: "+5s", err: `want an interval of at least 1s such as 30s or 2h, not "+5s"`},
		{in: "", err: `want an interval of at least 1s such as 30s or 2h, not ""`},
		{in: "daily", err: `want an interval of at least 1s such as 30s or 2h, not "daily"`},
		{in: "1.5s", err: `want an interval of whole seconds, not "1.5s"`},
	} {
		e, err := schedule.ParseEvery(tt.in)
		switch {
		case tt.err != "" && (err == nil || err.Error() != tt.err || !errors.Is(err, schedule.ErrInvalid)):
			t.Errorf("ParseEvery(%q) = %v, want %q", tt.in, err, tt.err)
		case tt.err == "" && (err != nil || e.Interval != tt.want):
			t.Errorf("ParseEvery(%q) = %v, %v, want %s", tt.in, e, err, tt.want)
		}
	}
}

// TestEveryNext: fire times are multiples of the interval since the Unix
// epoch (plus the offset), whatever instant they are asked from.
func TestEveryNext(t *testing.T) {
	for _, tt := range []struct {
		every, offset time.Duration
		after, want   string
	}{
		{2 * time.Second, 0, "2026-11-26T08:00:00.5Z", "2026-11-26T08:00:02Z"},
		{2 * time.Second, 0, "2026-11-26T08:00:02Z", "2026-11-26T08:00:04Z"},
		{2 * time.Second, 0, "2026-11-26T08:00:03.999Z", "2026-11-26T08:00:04Z"},
		{90 * time.Second, 0, "1970-01-01T00:01:40Z", "1970-01-01T00:03:00Z"},
		{7 * time.Second, 0, "2026-11-26T08:00:00Z", "2026-11-26T08:00:05Z"}, // 1795680000 = 7·256525714 + 2
		{7 * time.Second, 0, "1969-12-31T23:59:59Z", "1970-01-01T00:00:00Z"},
		{7 * time.Second, 0, "1969-12-31T23:59:52Z", "1969-12-31T23:59:53Z"},
		{time.Hour, 15 * time.Minute, "2026-11-26T10:20:00Z", "2026-11-26T11:15:00Z"},
		{time.Hour, 15 * time.Minute, "2026-11-26T10:14:59Z", "2026-11-26T10:15:00Z"},
		{time.Hour, 75 * time.Minute, "2026-11-26T10:14:59Z", "2026-11-26T10:15:00Z"},
		{time.Hour, -15 * time.Minute, "2026-11-26T10:14:59Z", "2026-11-26T10:45:00Z"},
		{24 * time.Hour, 0, "2026-11-26T10:14:59+05:00", "2026-11-27T00:00:00Z"},
	} {
		e := &schedule.Every{Interval: tt.every, Offset: tt.offset}
		got, ok := e.Next(mustTime(t, tt.after))
		if !ok || got.Format(time.RFC3339) != tt.want {
			t.Errorf("every %s+%s after %s = %s %v, want %s", tt.every, tt.offset, tt.after, got.Format(time.RFC3339), ok, tt.want)
		}
	}
}

func TestEveryZeroNeverFires(t *testing.T) {
	if next, ok := (&schedule.Every{}).Next(time.Unix(0, 0)); ok {
		t.Errorf("a zero Every fires at %s", next)
	}
}

func TestAt(t *testing.T) {
	a, err := schedule.ParseAt("2026-12-01T09:00:00.75+01:00")
	if err != nil {
		t.Fatal(err)
	}
	at := mustTime(t, "2026-12-01T08:00:00Z")
	for _, tt := range []struct {
		after string
		ok    bool
	}{{"2026-12-01T07:59:59Z", true}, {"2026-12-01T08:00:00Z", false}, {"2027-01-01T00:00:00Z", false}} {
		got, ok := a.Next(mustTime(t, tt.after))
		if ok != tt.ok || ok && !got.Equal(at) {
			t.Errorf("Next(%s) = %s %v, want %v", tt.after, got, ok, tt.ok)
		}
	}
	if _, err := schedule.ParseAt("tomorrow"); err == nil || err.Error() != `want an RFC 3339 time such as 2026-12-01T08:00:00Z, not "tomorrow"` {
		t.Errorf("ParseAt(tomorrow) = %v", err)
	}
}

func TestRunID(t *testing.T) {
	for _, tt := range []struct{ at, want string }{
		{"2026-11-26T08:00:00Z", "20261126T080000Z"},
		{"2026-11-26T09:00:00+01:00", "20261126T080000Z"},
		{"2026-11-26T08:00:02.9Z", "20261126T080002Z"},
	} {
		if got := schedule.RunID(mustTime(t, tt.at)); got != tt.want {
			t.Errorf("RunID(%s) = %s, want %s", tt.at, got, tt.want)
		}
	}
}
