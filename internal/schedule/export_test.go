package schedule

import "time"

// Matches reports whether the wall time w (held in a UTC time) matches
// the expression, for the tests' minute-by-minute reference.
func (c *Cron) Matches(w time.Time) bool {
	return c.month&(1<<w.Month()) != 0 && c.day(w) && c.hour&(1<<w.Hour()) != 0 && c.minute&(1<<w.Minute()) != 0
}
