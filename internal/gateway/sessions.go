package gateway

// The routes of sessions and their turns: listing, reading and long-polling
// a session's log, sending it messages (answered at once, when the turn
// ends, or as the turn's events stream), and resetting, cancelling,
// closing and reopening it.

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"strconv"
	"time"

	"agentd/internal/event"
	"agentd/internal/model"
	"agentd/internal/runtime"
	"agentd/internal/store"
)

func addr(r *http.Request) string { return r.PathValue("agent") + "/" + r.PathValue("key") }

// SessionInfo is a session as the API shows it.
type SessionInfo struct {
	ID        int64     `json:"id"`
	Address   string    `json:"address"`
	Agent     string    `json:"agent"`
	Key       string    `json:"key"`
	State     string    `json:"state"`
	LastSeq   int64     `json:"last_seq"`
	CreatedAt time.Time `json:"created_at"`
	UpdatedAt time.Time `json:"updated_at"`
	// Title names the conversation for people: its first message's first
	// line, a few words a model wrote, or a person's name for it (TitleBy:
	// input, model or user). Absent until the first message.
	Title   string `json:"title,omitempty"`
	TitleBy string `json:"title_by,omitempty"`
	// Undelivered counts the session's replies a chat connector finally
	// failed to deliver that no person has retried or dismissed yet.
	Undelivered int `json:"undelivered,omitempty"`
}

func info(s store.Session) SessionInfo {
	return SessionInfo{ID: s.ID, Address: s.Address(), Agent: s.Agent, Key: s.Key, State: s.State, LastSeq: s.LastSeq, CreatedAt: s.CreatedAt, UpdatedAt: s.UpdatedAt,
		Title: s.Title, TitleBy: s.TitleBy, Undelivered: s.Undelivered}
}

func (s *Server) sessions(w http.ResponseWriter, r *http.Request) {
	q := r.URL.Query()
	state, err := enumParam(q, "state", store.States())
	if err != nil {
		s.fail(w, err)
		return
	}
	f := store.SessionFilter{Agent: q.Get("agent"), State: state}
	if v := q.Get("limit"); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n < 0 {
			s.fail(w, badRequest("limit must be a non-negative integer"))
			return
		}
		f.Limit = n
	}
	list, err := s.o.Sessions.Sessions(r.Context(), f)
	if err != nil {
		s.fail(w, err)
		return
	}
	out := make([]SessionInfo, 0, len(list))
	for _, x := range list {
		out = append(out, info(x))
	}
	writeJSON(w, 200, out)
}

func (s *Server) session(w http.ResponseWriter, r *http.Request) {
	sess, _, err := s.o.Runtime.Events(r.Context(), addr(r), 0, 1)
	if err != nil {
		s.fail(w, err)
		return
	}
	writeJSON(w, 200, info(sess))
}

// EventsPage is a page of a session's log.
type EventsPage struct {
	Session SessionInfo   `json:"session"`
	Events  []event.Event `json:"events"`
	// Next is the sequence number to pass as after= for the next page.
	Next int64 `json:"next"`
}

func (s *Server) events(w http.ResponseWriter, r *http.Request) {
	q := r.URL.Query()
	after, err := intParam(q.Get("after"), 0)
	if err != nil {
		s.fail(w, badRequest("after: %v", err))
		return
	}
	limit, err := intParam(q.Get("limit"), 1000)
	if err != nil || limit <= 0 || limit > 10000 {
		s.fail(w, badRequest("limit must be an integer from 1 to 10000"))
		return
	}
	wait, err := durParam(q.Get("wait"))
	if err != nil {
		s.fail(w, err)
		return
	}
	a := addr(r)
	sess, evs, err := s.o.Runtime.Events(r.Context(), a, after, int(limit))
	if err != nil {
		s.fail(w, err)
		return
	}
	if len(evs) == 0 && wait > 0 {
		// Long-poll: wait for the next logged event of this session.
		sub := s.o.Runtime.Bus().Subscribe(sess.ID, 64)
		defer sub.Close()
		// Re-read after subscribing so nothing falls between the two.
		if sess, evs, err = s.o.Runtime.Events(r.Context(), a, after, int(limit)); err != nil {
			s.fail(w, err)
			return
		}
		t := time.NewTimer(wait)
		defer t.Stop()
	wait:
		for len(evs) == 0 {
			select {
			case e, ok := <-sub.C:
				if !ok || e.Seq > after {
					if sess, evs, err = s.o.Runtime.Events(r.Context(), a, after, int(limit)); err != nil {
						s.fail(w, err)
						return
					}
					if !ok {
						break wait
					}
				}
			case <-t.C:
				break wait
			case <-r.Context().Done():
				return
			}
		}
	}
	next := after
	if len(evs) > 0 {
		next = evs[len(evs)-1].Seq
	}
	if evs == nil {
		evs = []event.Event{}
	}
	writeJSON(w, 200, EventsPage{Session: info(sess), Events: evs, Next: next})
}

// MessageRequest is the body of POST .../messages.
type MessageRequest struct {
	Text           string `json:"text"`
	IdempotencyKey string `json:"idempotency_key,omitempty"`
	System         bool   `json:"system,omitempty"`
	Silent         bool   `json:"silent,omitempty"`
	Origin         string `json:"origin,omitempty"`
	Source         string `json:"source,omitempty"`
	// Options are the message lifecycle's options: channelId, context,
	// actions, postProcess, toolArgs.
	Options json.RawMessage `json:"options,omitempty"`
	// Images are attached images (see runtime.Input.Images).
	Images []MessageImage `json:"images,omitempty"`
	// Reopen reopens the session first if it is closed.
	Reopen bool `json:"reopen,omitempty"`
	// Literal sends the text as it is written: a text that starts with a
	// chat prefix ("/standup …", "@researcher …") is not routed.
	Literal bool `json:"literal,omitempty"`
}

// MessageImage is an image of a MessageRequest.
type MessageImage struct {
	MIMEType string `json:"mime_type"` // image/png, image/jpeg, image/gif or image/webp
	Data     []byte `json:"data"`      // standard base64 in JSON
}

// MessageResponse answers POST .../messages.
type MessageResponse struct {
	runtime.Receipt
	End *event.TurnEndData `json:"end,omitempty"` // with wait=true
}

func (s *Server) message(w http.ResponseWriter, r *http.Request) {
	var req MessageRequest
	if !s.decode(w, r, &req) {
		return
	}
	src := req.Source
	if src == "" {
		src = "api"
	}
	if src == event.SourceHeartbeat {
		// A heartbeat's turn is hidden from the chat and, quiet, from the
		// model: only agentd's heartbeats may start one.
		s.fail(w, badRequest("source %q is agentd's own, for its heartbeats", src))
		return
	}
	in := runtime.Input{Session: addr(r), Text: req.Text, Source: src, IdempotencyKey: req.IdempotencyKey,
		System: req.System, Silent: req.Silent, Origin: req.Origin, Options: req.Options, Reopen: req.Reopen}
	for _, img := range req.Images {
		in.Images = append(in.Images, model.Image{MIMEType: img.MIMEType, Data: img.Data})
	}
	if err := s.routeCommand(r.Context(), &in, req.Literal); err != nil {
		s.fail(w, err)
		return
	}
	s.deliver(w, r, in)
}

// deliver submits in and answers as the request's ?stream and ?wait ask:
// the turn's events as NDJSON, the receipt with the turn's end, or the
// receipt (202) at once.
func (s *Server) deliver(w http.ResponseWriter, r *http.Request, in runtime.Input) {
	q := r.URL.Query()
	stream, err := boolParam(q, "stream")
	if err != nil {
		s.fail(w, err)
		return
	}
	wait, err := boolParam(q, "wait")
	if err != nil {
		s.fail(w, err)
		return
	}
	switch {
	case stream:
		s.stream(w, r, in)
	case wait:
		rc, end, err := s.o.Runtime.Send(r.Context(), in)
		if err != nil {
			s.fail(w, err)
			return
		}
		writeJSON(w, 200, MessageResponse{Receipt: rc, End: &end})
	default:
		rc, err := s.o.Runtime.Submit(r.Context(), in)
		if err != nil {
			s.fail(w, err)
			return
		}
		writeJSON(w, 202, MessageResponse{Receipt: rc})
	}
}

// StreamLine is one line of a streamed turn: events as they happen, then
// a last line with the receipt and the end (or an error).
type StreamLine struct {
	Receipt *runtime.Receipt   `json:"receipt,omitempty"`
	Event   *event.Event       `json:"event,omitempty"`
	End     *event.TurnEndData `json:"end,omitempty"`
	Error   *Error             `json:"error,omitempty"`
	// Status, with Error, is the HTTP status the error has as the answer
	// to a request (the stream began with 200), and RetryAfter, when not
	// 0, the seconds to wait before sending again (its Retry-After).
	Status     int `json:"status,omitempty"`
	RetryAfter int `json:"retry_after,omitempty"`
}

func (s *Server) stream(w http.ResponseWriter, r *http.Request, in runtime.Input) {
	fl, _ := w.(http.Flusher)
	enc := json.NewEncoder(w)
	started := false
	start := func() {
		if !started {
			started = true
			w.Header().Set("Content-Type", "application/x-ndjson")
			w.WriteHeader(200)
		}
	}
	rc, end, err := s.o.Runtime.Stream(r.Context(), in, func(e event.Event) error {
		start()
		if err := enc.Encode(StreamLine{Event: &e}); err != nil {
			return err
		}
		if fl != nil {
			fl.Flush()
		}
		return nil
	})
	if err != nil && !started {
		s.fail(w, err)
		return
	}
	start()
	if err != nil {
		f := s.describe(err)
		enc.Encode(StreamLine{Error: &f.Body, Status: f.Status, RetryAfter: retrySeconds(f.RetryAfter)})
		return
	}
	enc.Encode(StreamLine{Receipt: &rc, End: &end})
}

func (s *Server) reset(w http.ResponseWriter, r *http.Request) {
	rc, err := s.o.Runtime.Reset(r.Context(), addr(r), r.URL.Query().Get("reason"))
	if err != nil {
		s.fail(w, err)
		return
	}
	writeJSON(w, 200, rc)
}

func (s *Server) cancel(w http.ResponseWriter, r *http.Request) {
	if err := s.o.Runtime.Cancel(r.Context(), addr(r)); err != nil {
		s.fail(w, err)
		return
	}
	writeJSON(w, 200, map[string]bool{"cancelled": true})
}

func (s *Server) closeSession(w http.ResponseWriter, r *http.Request) {
	if err := s.o.Runtime.CloseSession(r.Context(), addr(r)); err != nil {
		s.fail(w, err)
		return
	}
	writeJSON(w, 200, map[string]bool{"closed": true})
}

// ReopenResponse answers POST .../reopen.
type ReopenResponse struct {
	// Reopened is false when the session was not closed (nothing changed).
	Reopened bool `json:"reopened"`
}

func (s *Server) reopen(w http.ResponseWriter, r *http.Request) {
	reopened, err := s.o.Runtime.Reopen(r.Context(), addr(r))
	if err != nil {
		s.fail(w, err)
		return
	}
	writeJSON(w, 200, ReopenResponse{Reopened: reopened})
}

func (s *Server) turn(w http.ResponseWriter, r *http.Request) {
	id, err := strconv.ParseInt(r.PathValue("id"), 10, 64)
	if err != nil || id <= 0 {
		s.fail(w, badRequest("turn id must be a positive integer"))
		return
	}
	wait, err := durParam(r.URL.Query().Get("wait"))
	if err != nil {
		s.fail(w, err)
		return
	}
	ctx := r.Context()
	if wait > 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, wait)
		defer cancel()
	} else {
		var cancel context.CancelFunc
		ctx, cancel = context.WithDeadline(ctx, time.Time{}) // report, do not wait
		defer cancel()
	}
	end, err := s.o.Runtime.Wait(ctx, id)
	if errors.Is(err, store.ErrNotFound) {
		err = notFound("turn %d", id)
	}
	if errors.Is(err, context.DeadlineExceeded) {
		writeJSON(w, 200, map[string]any{"turn": id, "done": false})
		return
	}
	if err != nil {
		s.fail(w, err)
		return
	}
	writeJSON(w, 200, map[string]any{"turn": id, "done": true, "end": end})
}
