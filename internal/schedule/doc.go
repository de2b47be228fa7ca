// Package schedule is the time arithmetic of agentd's job triggers: when
// a cron expression (in a time zone), an interval (every) or a one-shot
// time (at) fires next, which missed fires are due after downtime
// (catch-up), and the run id of a fire. It is pure: no goroutines, no
// I/O, no clock of its own; the scheduler passes the times in, so the
// same inputs give the same fire times on every node and after every
// restart, and a test covers a year of fires in milliseconds.
package schedule

import (
	"errors"
	"fmt"
)

// ErrInvalid: a cron expression, interval, time or time zone does not
// parse. Errors.Is finds it in every error this package returns.
var ErrInvalid = errors.New("invalid schedule")

// invalidError is a parse error whose message is only its reason (no
// prefix), so a caller can put it after a field's name.
type invalidError struct{ msg string }

func (e *invalidError) Error() string        { return e.msg }
func (e *invalidError) Is(target error) bool { return target == ErrInvalid }

// FieldError is an error in one field of a trigger, named by a JSON
// pointer under the trigger ("/cron", "/tz", "/every", "/at"; "" for the
// trigger as a whole).
type FieldError struct {
	Pointer string
	Err     error
}

func (e *FieldError) Error() string {
	if e.Pointer == "" {
		return e.Err.Error()
	}
	return e.Pointer + ": " + e.Err.Error()
}

func (e *FieldError) Unwrap() error { return e.Err }

// invalid returns an ErrInvalid error with the formatted message.
func invalid(format string, args ...any) error {
	return &invalidError{msg: fmt.Sprintf(format, args...)}
}
