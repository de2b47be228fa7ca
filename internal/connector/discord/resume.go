package discord

import (
	"context"
	"encoding/json"

	"agentd/internal/connector"
)

// resumePoint is where a gateway session can be resumed, as a Handler
// with the connector.Resumer ability keeps it: the session's id, the URL
// Discord gave for resuming it and the last dispatch the handler took.
// Run saves it after every dispatch handled (in order) and on start
// RESUMEs from it, so Discord replays what a stopped process never
// handled; a point Discord no longer knows gets INVALID_SESSION and Run
// IDENTIFYs afresh with a catch-up, as without one. A crash between a
// handled dispatch and its save leaves the point one dispatch behind:
// that one is replayed and its key dedups it.
type resumePoint struct {
	SessionID string `json:"session_id"`
	ResumeURL string `json:"resume_url"`
	Seq       int64  `json:"seq"`
}

// loadResume starts s from the point h saved, if any.
func (p *Platform) loadResume(ctx context.Context, h connector.Handler, s *session) {
	r, ok := h.(connector.Resumer)
	if !ok {
		return
	}
	b, err := r.ResumePoint(ctx)
	if err != nil {
		p.log.Warn("discord: no saved resume point", "err", p.redactErr(err))
		return
	}
	var rp resumePoint
	if b == nil || json.Unmarshal(b, &rp) != nil || rp.SessionID == "" || rp.ResumeURL == "" {
		return
	}
	s.id, s.resumeURL = rp.SessionID, rp.ResumeURL
	s.setSeq(rp.Seq)
}

// saveResume records s's resume point with h. A failed save is logged,
// not fatal: an older point only replays more, which keys dedup. A new
// session's point is saved only once its catch-up finished: a restart
// before that resumes the old point, gets INVALID_SESSION and catches up
// again, rather than resuming past messages no catch-up read.
func (p *Platform) saveResume(ctx context.Context, h connector.Handler, s *session) {
	r, ok := h.(connector.Resumer)
	if !ok || !s.resumable() || s.catchupDue {
		return
	}
	b, _ := json.Marshal(resumePoint{SessionID: s.id, ResumeURL: s.resumeURL, Seq: s.seq})
	if err := r.SaveResumePoint(ctx, b); err != nil {
		p.log.Warn("discord: resume point not saved", "err", p.redactErr(err))
	}
}
