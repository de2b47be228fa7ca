package gateway

import (
	"context"
	"net/http"

	"agentd/internal/job"
)

// Jobs runs `job` extensions on demand (job.Runner).
type Jobs interface {
	Run(ctx context.Context, name string, fire job.Fire, wait bool) (job.Result, error)
}

// JobRunRequest is the body of POST /v1/jobs/{name}/run (optional).
type JobRunRequest struct {
	// Vars are the run's payload: the prompt's {{payload.KEY}}.
	Vars map[string]string `json:"vars,omitempty"`
}

// jobRun runs a job now: 202 with the run (its session and turn) once its
// input is accepted, or with wait=true 200 with the run as it ended.
func (s *Server) jobRun(w http.ResponseWriter, r *http.Request) {
	if s.o.Jobs == nil {
		s.unavailable(w, "jobs")
		return
	}
	var req JobRunRequest
	if r.ContentLength != 0 && !s.decode(w, r, &req) {
		return
	}
	wait, err := boolParam(r.URL.Query(), "wait")
	if err != nil {
		s.fail(w, err)
		return
	}
	res, err := s.o.Jobs.Run(r.Context(), r.PathValue("name"), job.Fire{Payload: req.Vars}, wait)
	if err != nil {
		s.fail(w, err)
		return
	}
	status := http.StatusAccepted
	if wait {
		status = http.StatusOK
	}
	writeJSON(w, status, res)
}
