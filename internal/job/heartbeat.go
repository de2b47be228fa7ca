package job

// The heartbeat trigger: a periodic turn in the agent's main session
// ("<agent>/main", the person's chat), fired by the Scheduler like an
// every trigger (at the multiples of its interval from the epoch, missed
// fires skipped), none during its quiet hours. Its prompt is the
// trigger's, or its prompt_file read at each fire, or the job's; it asks
// the agent to answer exactly HeartbeatOK when nothing needs attention,
// and such a run is recorded done and quiet, and delivered nowhere.

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"time"

	"agentd/internal/event"
	"agentd/internal/schedule"
	"agentd/internal/store"
)

// MainSession is the key of an agent's main session, the person's chat,
// where its heartbeats run.
const MainSession = "main"

// HeartbeatOK is the answer of an agent to a heartbeat when nothing
// needs attention.
const HeartbeatOK = event.HeartbeatOK

// heartbeatRule is added to a heartbeat's prompt that does not mention
// HeartbeatOK.
const heartbeatRule = "\n\nIf nothing needs attention, answer exactly " + HeartbeatOK + " and nothing else."

// MaxPromptFile bounds a heartbeat's prompt_file, in bytes.
const MaxPromptFile = 64 << 10

// quietRun reports whether a stored run is a heartbeat's whose answer was
// HeartbeatOK.
func quietRun(jr store.JobRun) bool {
	return jr.Trigger == store.TriggerHeartbeat && jr.Status == store.RunDone && strings.TrimSpace(jr.Output) == HeartbeatOK
}

// inputSource is the Source of a run's input: a heartbeat's is
// event.SourceHeartbeat, which marks its turn in the log, so that the
// model's context and the console's chat leave it out when it had
// nothing to say; any other run's is "job".
func inputSource(trigger string) string {
	if trigger == store.TriggerHeartbeat {
		return event.SourceHeartbeat
	}
	return "job"
}

// scheduledTag is the tag of the run id of a scheduled fire of trigger:
// a heartbeat's is "heartbeat", so that it is not taken for a cron or
// every fire of the same job at the same time.
func scheduledTag(trigger string) string {
	if trigger == store.TriggerHeartbeat {
		return "heartbeat"
	}
	return ""
}

// heartbeatOf returns the job's heartbeat trigger (Check allows one).
func heartbeatOf(s *Spec) *Heartbeat {
	for _, t := range s.Triggers {
		if t.Heartbeat != nil {
			return t.Heartbeat
		}
	}
	return nil
}

// promptOf returns the prompt template of a run: a heartbeat's (read
// from its file now, so an edit needs no restart) for a heartbeat's run
// or a job without a prompt of its own, else the job's.
func (r *Runner) promptOf(ru *run) (string, error) {
	h := heartbeatOf(ru.spec)
	if h == nil || (ru.fire.Trigger != store.TriggerHeartbeat && ru.spec.Prompt != "") {
		return ru.spec.Prompt, nil
	}
	p := ru.spec.Prompt
	switch {
	case h.Prompt != "":
		p = h.Prompt
	case h.PromptFile != "":
		b, err := r.readPromptFile(ru.spec.Agent, h.PromptFile)
		if err != nil {
			return "", err
		}
		p = string(b)
	}
	if !strings.Contains(p, HeartbeatOK) {
		p += heartbeatRule
	}
	return p, nil
}

// readPromptFile reads a heartbeat's prompt_file, at most MaxPromptFile
// bytes, from the agent's workspace (<data>/workspace/<agent>) and only
// from there: an absolute path, "..", or a symbolic link out of it is
// refused (os.Root), so a row cannot put the data directory's keys and
// secrets, or any other file of the machine, into a model's prompt.
func (r *Runner) readPromptFile(agent, name string) ([]byte, error) {
	dir := filepath.Join(r.dir, Workspace, agent)
	if filepath.IsAbs(name) {
		return nil, fmt.Errorf("heartbeat prompt_file: %q is absolute; it is a path in the agent's workspace %s", name, dir)
	}
	root, err := os.OpenRoot(dir)
	if err != nil {
		return nil, promptFileErr(name, dir, err)
	}
	defer root.Close()
	f, err := root.Open(name)
	if err != nil {
		return nil, promptFileErr(name, dir, err)
	}
	defer f.Close()
	b, err := io.ReadAll(io.LimitReader(f, MaxPromptFile+1))
	if err != nil {
		return nil, fmt.Errorf("heartbeat prompt_file: %w", err)
	}
	if len(b) > MaxPromptFile {
		return nil, fmt.Errorf("heartbeat prompt_file %s: over %d bytes", name, MaxPromptFile)
	}
	return b, nil
}

// promptFileErr says why prompt_file name was not read from the
// workspace dir: the reason alone ("no such file or directory", "path
// escapes from parent"), not the path the system saw.
func promptFileErr(name, dir string, err error) error {
	var pe *fs.PathError
	if errors.As(err, &pe) {
		err = pe.Err
	}
	return fmt.Errorf("heartbeat prompt_file: %s in the agent's workspace %s: %w", name, dir, err)
}

// path returns a path of a row: absolute, or relative to the data
// directory.
func (r *Runner) path(p string) string {
	if filepath.IsAbs(p) {
		return filepath.Clean(p)
	}
	return filepath.Join(r.dir, p)
}

// QuietHours is a daily span of wall-clock time in a zone, From up to
// To (minutes after midnight); To before From spans midnight.
type QuietHours struct {
	From, To int
	Loc      *time.Location
}

// ParseQuietHours parses "HH:MM-HH:MM" read in the zone tz ("" UTC).
func ParseQuietHours(s, tz string) (*QuietHours, error) {
	loc, err := schedule.LoadZone(tz)
	if err != nil {
		return nil, err
	}
	from, to, ok := strings.Cut(s, "-")
	q := &QuietHours{Loc: loc}
	if ok {
		q.From, ok = clock(from)
	}
	if ok {
		q.To, ok = clock(to)
	}
	if !ok || q.From == q.To {
		return nil, fmt.Errorf("want quiet hours as HH:MM-HH:MM such as 22:00-07:00, two different times, not %q", s)
	}
	return q, nil
}

// clock parses "HH:MM" as minutes after midnight.
func clock(s string) (int, bool) {
	t, err := time.Parse("15:04", s)
	if err != nil {
		return 0, false
	}
	return t.Hour()*60 + t.Minute(), true
}

// In reports whether t falls in the quiet hours.
func (q *QuietHours) In(t time.Time) bool {
	w := t.In(q.Loc)
	m := w.Hour()*60 + w.Minute()
	if q.From < q.To {
		return m >= q.From && m < q.To
	}
	return m >= q.From || m < q.To
}

// end returns the end of the quiet hours t is in: the first instant
// after t that is not quiet, to the minute.
func (q *QuietHours) end(t time.Time) time.Time {
	w := t.In(q.Loc).Truncate(time.Minute)
	// At most a day of minutes; a DST change moves the wall clock, not
	// this walk.
	for i := 0; i <= 24*60+60 && q.In(w); i++ {
		w = w.Add(time.Minute)
	}
	return w
}

// quietSchedule is a schedule with its fire times inside quiet hours
// left out.
type quietSchedule struct {
	s schedule.Schedule
	q *QuietHours
}

// Next returns the first fire time of s after after that is not quiet.
func (qs quietSchedule) Next(after time.Time) (time.Time, bool) {
	t, ok := qs.s.Next(after)
	for ok && qs.q.In(t) {
		t, ok = qs.s.Next(qs.q.end(t).Add(-time.Nanosecond))
	}
	return t, ok
}

// heartbeatSchedule returns the schedule of a heartbeat.
func heartbeatSchedule(h *Heartbeat) (schedule.Schedule, error) {
	e, err := schedule.ParseEvery(h.Every)
	if err != nil {
		return nil, err
	}
	if h.QuietHours == "" {
		return e, nil
	}
	q, err := ParseQuietHours(h.QuietHours, h.TZ)
	if err != nil {
		return nil, err
	}
	return quietSchedule{s: e, q: q}, nil
}
