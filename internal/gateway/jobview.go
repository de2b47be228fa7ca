package gateway

import (
	"context"
	"errors"
	"net/http"
	"time"

	"agentd/internal/extension"
	"agentd/internal/job"
	"agentd/internal/schedule"
	"agentd/internal/store"
)

// JobRuns is the jobs' run history (store.JobRunStore).
type JobRuns interface {
	JobRuns(ctx context.Context, job, before string, limit int) ([]store.JobRun, error)
	LastRun(ctx context.Context, job string, triggers ...string) (store.JobRun, error)
}

// JobTimes tells when the jobs fire next (job.Scheduler): none on a
// node that does not lead the scheduling.
type JobTimes interface {
	Next() map[string]time.Time
}

// JobInfo is a job as GET /v1/jobs and GET /v1/jobs/{name} show it.
type JobInfo struct {
	Name        string        `json:"name"`
	Agent       string        `json:"agent"`
	Description string        `json:"description,omitempty"`
	Enabled     bool          `json:"enabled"` // false: paused
	Triggers    []job.Trigger `json:"triggers,omitempty"`
	// Next is the job's next scheduled fire: the scheduler's, or on a
	// node that does not schedule, the first of its triggers' fire times
	// (absent for a paused job or one without a time trigger; for one in
	// error, the scheduler's alone).
	Next time.Time `json:"next,omitzero"`
	// NextFires are its next NextFires fire times over all its time
	// triggers, from now, computed on any node (GET /v1/jobs/{name} and
	// the pause and resume answers; none for a paused job, one in error
	// or one without a time trigger).
	NextFires []time.Time `json:"next_fires,omitempty"`
	// Last is its newest run.
	Last *job.Result `json:"last,omitempty"`
	// Error says why the row is not active on this node.
	Error string `json:"error,omitempty"`
}

// NextFires is how many next fire times GET /v1/jobs/{name} shows.
const NextFires = 5

// JobList answers GET /v1/jobs.
type JobList struct {
	Jobs []JobInfo `json:"jobs"`
}

// JobRunsPage answers GET /v1/jobs/{name}/runs: runs newest first; Next
// is the before of the next page ("" at the end).
type JobRunsPage struct {
	Runs []job.Result `json:"runs"`
	Next string       `json:"next,omitempty"`
}

// jobParts returns the parts the job views read, or answers 501.
func (s *Server) jobParts(w http.ResponseWriter) bool {
	if s.o.Extensions == nil || s.o.JobRuns == nil {
		s.unavailable(w, "jobs")
		return false
	}
	return true
}

func (s *Server) jobList(w http.ResponseWriter, r *http.Request) {
	if !s.jobParts(w) {
		return
	}
	rows, err := s.o.Extensions.List(r.Context(), job.TypeName)
	if err != nil {
		s.fail(w, err)
		return
	}
	out := JobList{Jobs: []JobInfo{}}
	next := s.nextFires()
	for _, st := range rows {
		out.Jobs = append(out.Jobs, s.jobInfo(r.Context(), st, next, 1))
	}
	writeJSON(w, http.StatusOK, out)
}

func (s *Server) jobGet(w http.ResponseWriter, r *http.Request) {
	if !s.jobParts(w) {
		return
	}
	st, ok := s.jobRow(w, r)
	if ok {
		writeJSON(w, http.StatusOK, s.jobInfo(r.Context(), st, s.nextFires(), NextFires))
	}
}

// jobRow reads the job row the path names.
func (s *Server) jobRow(w http.ResponseWriter, r *http.Request) (extension.Status, bool) {
	name := r.PathValue("name")
	st, err := s.o.Extensions.Get(r.Context(), job.TypeName, name)
	if err != nil {
		if errors.Is(err, store.ErrNotFound) {
			err = notFound("no job %s", name)
		}
		s.fail(w, err)
		return st, false
	}
	return st, true
}

func (s *Server) nextFires() map[string]time.Time {
	if s.o.JobTimes == nil {
		return nil
	}
	return s.o.JobTimes.Next()
}

// jobInfo returns a job row as shown, with its next fire (and up to
// fires more in NextFires when fires > 1) and its last run.
func (s *Server) jobInfo(ctx context.Context, st extension.Status, next map[string]time.Time, fires int) JobInfo {
	info := JobInfo{Name: st.Name, Enabled: st.Enabled, Error: st.Error}
	if spec, err := job.Decode(st.Spec); err == nil {
		info.Agent, info.Description, info.Triggers = spec.Agent, spec.Description, spec.Triggers
	}
	if st.Enabled {
		info.Next = next[st.Name]
	}
	// A row in error runs its previous version, if any, whose triggers
	// the row no longer says: only the scheduler knows its times.
	// The list (fires 1) needs them only where this node does not
	// schedule: the scheduler's next fire stands.
	if st.Enabled && st.Error == "" && (fires > 1 || info.Next.IsZero()) {
		upcoming := schedule.Upcoming(job.Schedules(info.Triggers), time.Now(), fires)
		if info.Next.IsZero() && len(upcoming) > 0 {
			info.Next = upcoming[0]
		}
		if fires > 1 {
			info.NextFires = upcoming
		}
	}
	if jr, err := s.o.JobRuns.LastRun(ctx, st.Name); err == nil {
		res := job.ResultOf(jr)
		info.Last = &res
	}
	return info
}

func (s *Server) jobRuns(w http.ResponseWriter, r *http.Request) {
	if !s.jobParts(w) {
		return
	}
	if _, ok := s.jobRow(w, r); !ok {
		return
	}
	q := r.URL.Query()
	limit, err := intParam(q.Get("limit"), 0)
	if err != nil {
		s.fail(w, badRequest("limit: %v", err))
		return
	}
	runs, err := s.o.JobRuns.JobRuns(r.Context(), r.PathValue("name"), q.Get("before"), int(min(limit, store.MaxRunLimit)))
	if err != nil {
		s.fail(w, err)
		return
	}
	out := JobRunsPage{Runs: []job.Result{}}
	for _, jr := range runs {
		out.Runs = append(out.Runs, job.ResultOf(jr))
	}
	if want, _ := store.RunLimit(int(limit)); len(runs) == want {
		out.Next = runs[len(runs)-1].Run
	}
	writeJSON(w, http.StatusOK, out)
}

// jobPause and jobResume set the job row's enabled state: a paused job
// is not active, so nothing fires it; resumed, it catches up per its
// triggers' catch_up policy.
func (s *Server) jobPause(w http.ResponseWriter, r *http.Request)  { s.jobSetEnabled(w, r, false) }
func (s *Server) jobResume(w http.ResponseWriter, r *http.Request) { s.jobSetEnabled(w, r, true) }

func (s *Server) jobSetEnabled(w http.ResponseWriter, r *http.Request, on bool) {
	if !s.jobParts(w) {
		return
	}
	name := r.PathValue("name")
	st, err := s.o.Extensions.SetEnabled(r.Context(), job.TypeName, name, on, who(r))
	if err != nil {
		if errors.Is(err, store.ErrNotFound) {
			err = notFound("no job %s", name)
		}
		s.fail(w, err)
		return
	}
	writeJSON(w, http.StatusOK, s.jobInfo(r.Context(), st, s.nextFires(), NextFires))
}
