package gateway

// POST /hooks/{name}: a job's webhook. It needs no gateway token — a
// third-party service calls it — but the job's own signature (package
// job, webhook.go). An unknown job, a paused one and one without a
// webhook trigger are answered as a wrong signature is — the same 401,
// the same body, after the same HMAC — so that a caller without the
// secret learns nothing of which jobs exist; the log says why. Its
// failures (a 401, a body over the limit) are limited per client network
// as the token's are.

import (
	"context"
	"errors"
	"io"
	"net/http"
	"path"
	"strings"
	"time"

	"agentd/internal/job"
)

// Hooks runs a job for a webhook request (job.Runner), an optional
// ability of Options.Jobs.
type Hooks interface {
	Hook(ctx context.Context, name string, h job.Hook) (job.Result, error)
}

// HookDelivered is the 409 answer to a webhook delivery taken before.
type HookDelivered struct {
	Error
	// Run is the id of the run the delivery was taken by first.
	Run string `json:"run"`
}

func (s *Server) hook(w http.ResponseWriter, r *http.Request) {
	hooks, ok := s.o.Jobs.(Hooks)
	if !ok {
		s.unavailable(w, "jobs")
		return
	}
	name, ip := r.PathValue("name"), clientKey(r.RemoteAddr)
	if retry, allowed := s.hookLimit.allow(ip, time.Now()); !allowed {
		s.log.Warn("job webhook refused", "job", name, "client", ip, "reason", "too many failed attempts")
		SetRetryAfter(w.Header(), retry)
		s.fail(w, say(errRateLimited, "too many failed attempts; try again later"))
		return
	}
	body, err := io.ReadAll(r.Body)
	if err != nil {
		var tooBig *http.MaxBytesError
		if errors.As(err, &tooBig) {
			err = say(errTooLarge, "body larger than %d bytes", tooBig.Limit)
		}
		s.hookRefused(w, name, ip, err)
		return
	}
	delivery := r.Header.Get("X-Agentd-Delivery")
	if delivery == "" {
		delivery = r.Header.Get("X-GitHub-Delivery")
	}
	res, err := hooks.Hook(r.Context(), name, job.Hook{Timestamp: r.Header.Get("X-Agentd-Timestamp"),
		Signature: r.Header.Get("X-Agentd-Signature"), Delivery: delivery, Body: body})
	switch {
	case errors.Is(err, job.ErrDelivered):
		s.log.Warn("job webhook refused", "job", name, "client", ip, "reason", "delivery taken before", "run", res.Run)
		writeJSON(w, http.StatusConflict, HookDelivered{Error: Error{Error: "this delivery was taken before, by run " + res.Run,
			Code: "delivered"}, Run: res.Run})
	case err != nil:
		s.hookRefused(w, name, ip, err)
	default:
		s.log.Info("job webhook accepted", "job", name, "client", ip, "run", res.Run, "bytes", len(body))
		writeJSON(w, http.StatusAccepted, res)
	}
}

// hookRefused logs a refused webhook request (never its body or a
// secret), counts a failure against the client, and answers it.
func (s *Server) hookRefused(w http.ResponseWriter, name, ip string, err error) {
	s.logHookRefused(name, ip, err)
	s.hookFailed(ip, err)
	s.fail(w, err)
}

// hookFailed counts a refusal against the client if it is a failure the
// limiter counts: a wrong signature (or no such webhook), a body over
// the limit.
func (s *Server) hookFailed(ip string, err error) {
	if errors.Is(err, job.ErrBadSignature) || errors.Is(err, job.ErrNotFound) || errors.Is(err, errTooLarge) {
		s.hookLimit.fail(ip, time.Now())
	}
}

func (s *Server) logHookRefused(name, ip string, err error) {
	s.log.Warn("job webhook refused", "job", name, "client", ip, "reason", err.Error())
}

// refusedEarly logs a refusal of r by Protect before the mux (a body
// declared too large) if r is a webhook's, and counts it as hookRefused
// does: every refusal of one is logged and limited alike.
func (s *Server) refusedEarly(r *http.Request, err error) {
	rt := s.route(r)
	if rt == nil || !rt.logsRefusals {
		return
	}
	ip := clientKey(r.RemoteAddr)
	if strings.HasPrefix(r.URL.Path, "/connectors/") {
		s.log.Warn("connector webhook refused", "connector", path.Base(path.Dir(r.URL.Path)), "client", ip, "reason", err.Error())
	} else {
		s.logHookRefused(path.Base(r.URL.Path), ip, err)
	}
	s.hookFailed(ip, err)
}
