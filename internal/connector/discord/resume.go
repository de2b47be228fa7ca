package discord

import (
	"context"
)

// ResumePoint is where a gateway session can be resumed: its id, the URL
// Discord gave for resuming it and the last dispatch the handler took.
type ResumePoint struct {
	SessionID string `json:"session_id"`
	ResumeURL string `json:"resume_url"`
	Seq       int64  `json:"seq"`
}

// Resumer is an ability of the Handler given to Run, found by type
// assertion: it keeps the resume point durable. Run saves it after every
// dispatch the handler took (in order), and on start RESUMEs from the one
// saved, so Discord replays what a process that stopped never handled; a
// point Discord no longer knows gets INVALID_SESSION and Run IDENTIFYs
// afresh with a catch-up, as without one. A crash between a handled
// dispatch and its save leaves the point one dispatch behind: that one is
// replayed and its key dedups it.
type Resumer interface {
	ResumePoint(ctx context.Context) (ResumePoint, bool, error)
	SaveResumePoint(ctx context.Context, rp ResumePoint) error
}

// loadResume starts s from the point h saved, if any.
func (p *Platform) loadResume(ctx context.Context, h any, s *session) {
	r, ok := h.(Resumer)
	if !ok {
		return
	}
	rp, ok, err := r.ResumePoint(ctx)
	if err != nil {
		p.log.Warn("discord: no saved resume point", "err", p.redactErr(err))
		return
	}
	if !ok || rp.SessionID == "" || rp.ResumeURL == "" {
		return
	}
	s.id, s.resumeURL = rp.SessionID, rp.ResumeURL
	s.setSeq(rp.Seq)
}

// saveResume records s's resume point with h. A failed save is logged,
// not fatal: the older point only replays more, which keys dedup.
func (p *Platform) saveResume(ctx context.Context, h any, s *session) {
	r, ok := h.(Resumer)
	if !ok || !s.resumable() {
		return
	}
	if err := r.SaveResumePoint(ctx, ResumePoint{SessionID: s.id, ResumeURL: s.resumeURL, Seq: s.seq}); err != nil {
		p.log.Warn("discord: resume point not saved", "err", p.redactErr(err))
	}
}
