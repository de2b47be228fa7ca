package schedule

import "time"

// Upcoming returns the first n fire times after after of a job's
// schedules together, in order, each time once (two triggers that fire
// at the same instant are one fire time), in UTC. Fewer come back when
// the schedules run out (an at trigger that has passed).
//
// It is what a person is shown as a job's next fires; the scheduler
// fires the same times, since both ask the schedules the same question.
func Upcoming(ss []Schedule, after time.Time, n int) []time.Time {
	next := make([]time.Time, len(ss))
	more := make([]bool, len(ss))
	for i, s := range ss {
		next[i], more[i] = s.Next(after)
	}
	var out []time.Time
	for len(out) < n {
		k := -1
		for i := range ss {
			if more[i] && (k < 0 || next[i].Before(next[k])) {
				k = i
			}
		}
		if k < 0 {
			break
		}
		if t := next[k].UTC(); len(out) == 0 || !out[len(out)-1].Equal(t) {
			out = append(out, t)
		}
		next[k], more[k] = ss[k].Next(next[k])
	}
	return out
}
