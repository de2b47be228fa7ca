package gateway

import (
	"agentd/internal/job"
	"agentd/internal/schedule"
)

// NextFires is how many next fire times GET /v1/jobs/{name} shows.
const NextFires = 5

// jobSchedules returns the schedules of a job's time triggers: cron (in
// its tz), every, at and a heartbeat's every. They are computed here from
// the row, so every node shows when a job fires, not only the one whose
// scheduler fires it; the times are the scheduler's, as both read the
// triggers through package schedule. A heartbeat's every reads as an
// every trigger (its quiet hours are not taken out). A trigger that does
// not parse (checked when the row was saved) is left out, as the
// scheduler leaves it.
func jobSchedules(ts []job.Trigger) []schedule.Schedule {
	var out []schedule.Schedule
	for _, t := range ts {
		var s schedule.Schedule
		var err error
		switch {
		case t.Heartbeat != nil:
			s, err = schedule.ParseEvery(t.Heartbeat.Every)
		case t.Cron != "" || t.Every != "" || t.At != "":
			s, err = schedule.FromTrigger(t.Cron, t.TZ, t.Every, t.At)
		default:
			continue
		}
		if err == nil {
			out = append(out, s)
		}
	}
	return out
}
