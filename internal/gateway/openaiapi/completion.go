package openaiapi

import (
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strconv"
	"strings"

	"agentd/internal/event"
	"agentd/internal/runtime"
)

// ChatCompletion answers a request without stream.
type ChatCompletion struct {
	ID      string   `json:"id"`
	Object  string   `json:"object"` // chat.completion
	Created int64    `json:"created"`
	Model   string   `json:"model"`
	Choices []Choice `json:"choices"`
	Usage   Usage    `json:"usage"`
}

// Choice is the one answer of a ChatCompletion.
type Choice struct {
	Index        int             `json:"index"`
	Message      ResponseMessage `json:"message"`
	Logprobs     *struct{}       `json:"logprobs"`
	FinishReason string          `json:"finish_reason"`
}

// ResponseMessage is the agent's answer.
type ResponseMessage struct {
	Role    string  `json:"role"`
	Content string  `json:"content"`
	Refusal *string `json:"refusal"`
}

// Usage is the tokens of every model call of the turn.
type Usage struct {
	PromptTokens     int `json:"prompt_tokens"`
	CompletionTokens int `json:"completion_tokens"`
	TotalTokens      int `json:"total_tokens"`
}

// Chunk is one server-sent event of a streamed answer.
type Chunk struct {
	ID      string          `json:"id"`
	Object  string          `json:"object"` // chat.completion.chunk
	Created int64           `json:"created"`
	Model   string          `json:"model"`
	Choices []ChunkChoice   `json:"choices"`
	Usage   json.RawMessage `json:"usage,omitempty"` // null in every chunk but the last when usage is asked for
}

// ChunkChoice carries a piece of the answer.
type ChunkChoice struct {
	Index        int       `json:"index"`
	Delta        Delta     `json:"delta"`
	Logprobs     *struct{} `json:"logprobs"`
	FinishReason *string   `json:"finish_reason"`
}

// Delta is what a chunk adds: the role in the first chunk, then text.
type Delta struct {
	Role    string  `json:"role,omitempty"`
	Content *string `json:"content,omitempty"`
}

// completion answers one chat completion request.
type completion struct {
	h       *handler
	w       http.ResponseWriter
	r       *http.Request
	req     *request
	key     string
	created int64
}

func completionID(turn int64) string { return "chatcmpl-" + strconv.FormatInt(turn, 10) }

// whole answers once the turn has ended.
func (c *completion) whole(in runtime.Input) {
	var t text
	t.emit = func(s string) error { t.all.WriteString(s); return nil }
	rc, end, err := c.h.rt.Stream(c.r.Context(), in, t.event)
	if err != nil {
		// A client that went away leaves the turn running (it is durable);
		// the answer reaches it only if agentd itself stopped waiting.
		writeError(c.w, c.h.fromRuntime(c.req.model, err))
		return
	}
	t.finish(end)
	// The input is in the session, whatever the turn's end: name it.
	c.w.Header().Set(SessionHeader, c.key)
	reason, aerr := finishReason(end, t.stop)
	if aerr != nil {
		writeError(c.w, aerr)
		return
	}
	writeJSON(c.w, http.StatusOK, ChatCompletion{
		ID: completionID(rc.Turn), Object: "chat.completion", Created: c.created, Model: c.req.model,
		Choices: []Choice{{Message: ResponseMessage{Role: "assistant", Content: t.all.String()}, FinishReason: reason}},
		Usage:   usage(end),
	})
}

var errWrite = errors.New("openaiapi: write to client")

// stream answers with server-sent events as the turn runs: a first chunk
// with the role, the text as it comes, a last chunk with the finish
// reason, the usage if asked, then [DONE]. A turn that fails after the
// stream started ends it with an error event. A client that goes away
// leaves the turn running.
func (c *completion) stream(in runtime.Input) {
	rc := http.NewResponseController(c.w)
	var (
		id      string
		started bool
		werr    error
	)
	send := func(v any) error {
		if werr != nil {
			return werr
		}
		b, err := json.Marshal(v)
		if err != nil {
			panic("openaiapi: encode chunk: " + err.Error())
		}
		if _, err := c.w.Write(append(append([]byte("data: "), b...), '\n', '\n')); err != nil {
			werr = fmt.Errorf("%w: %w", errWrite, err)
			return werr
		}
		if err := rc.Flush(); err != nil && !errors.Is(err, http.ErrNotSupported) {
			werr = fmt.Errorf("%w: %w", errWrite, err)
		}
		return werr
	}
	var usageNull json.RawMessage
	if c.req.includeUsage {
		usageNull = json.RawMessage("null")
	}
	chunk := func(d Delta, finish *string) Chunk {
		return Chunk{ID: id, Object: "chat.completion.chunk", Created: c.created, Model: c.req.model,
			Choices: []ChunkChoice{{Delta: d, FinishReason: finish}}, Usage: usageNull}
	}
	start := func(turn int64) error {
		if started {
			return werr
		}
		started = true
		id = completionID(turn)
		hd := c.w.Header()
		hd.Set("Content-Type", "text/event-stream")
		hd.Set("Cache-Control", "no-cache")
		hd.Set("X-Accel-Buffering", "no")
		hd.Set(SessionHeader, c.key)
		c.w.WriteHeader(http.StatusOK)
		empty := ""
		return send(chunk(Delta{Role: "assistant", Content: &empty}, nil))
	}
	var t text
	t.live = true
	t.emit = func(s string) error { return send(chunk(Delta{Content: &s}, nil)) }
	receipt, end, err := c.h.rt.Stream(c.r.Context(), in, func(e event.Event) error {
		if err := start(e.Turn); err != nil {
			return err
		}
		return t.event(e)
	})
	if err != nil {
		if errors.Is(err, errWrite) {
			return // the client went away; the turn goes on
		}
		aerr := c.h.fromRuntime(c.req.model, err)
		if !started {
			writeError(c.w, aerr)
			return
		}
		send(aerr.body())
		return
	}
	if start(receipt.Turn) != nil {
		return
	}
	if t.finish(end) != nil {
		return
	}
	reason, aerr := finishReason(end, t.stop)
	if aerr != nil {
		send(aerr.body())
		return
	}
	if send(chunk(Delta{}, &reason)) != nil {
		return
	}
	if c.req.includeUsage {
		u, _ := json.Marshal(usage(end))
		if send(Chunk{ID: id, Object: "chat.completion.chunk", Created: c.created, Model: c.req.model,
			Choices: []ChunkChoice{}, Usage: u}) != nil {
			return
		}
	}
	if werr == nil {
		c.w.Write([]byte("data: [DONE]\n\n"))
		rc.Flush()
	}
}

func usage(end event.TurnEndData) Usage {
	return Usage{PromptTokens: end.InputTokens, CompletionTokens: end.OutputTokens, TotalTokens: end.InputTokens + end.OutputTokens}
}

// finishReason maps how a turn ended to OpenAI's finish_reason, or to an
// error when it did not answer: a failed turn is a 502 (the agent's model or
// tools failed, not the request), a cancelled or interrupted one a 409.
func finishReason(end event.TurnEndData, stop string) (string, *apiError) {
	switch end.Status {
	case event.StatusDone:
		switch strings.ToLower(stop) {
		case "length", "max_tokens", "model_length", "model_context_window_exceeded":
			return "length", nil
		case "content_filter", "refusal", "safety":
			return "content_filter", nil
		}
		return "stop", nil
	case event.StatusBudget:
		return "length", nil
	case event.StatusCancelled:
		return "", &apiError{status: http.StatusConflict, typ: typeInvalid, code: "turn_cancelled",
			message: "the agent's turn was cancelled: " + safeReason(end.Reason)}
	case event.StatusInterrupted:
		return "", &apiError{status: http.StatusConflict, typ: typeInvalid, code: "turn_interrupted",
			message: "the agent's turn was interrupted by a newer message: " + safeReason(end.Reason)}
	}
	msg := "the agent's turn failed"
	if r := safeReason(end.Reason); r != "" {
		msg += ": " + r
	}
	return "", &apiError{status: http.StatusBadGateway, typ: typeServer, code: "turn_failed", message: msg}
}

// text turns a turn's events into the answer: the text of each model step,
// steps separated by a blank line, and the stop reason of the last model
// call that succeeded. Live, it passes text deltas on as they come and
// completes each step from its logged text (deltas can be missed when the
// event stream falls behind); otherwise it uses the logged text only.
type text struct {
	live bool
	emit func(string) error
	all  strings.Builder // what emit was given, when not live

	sent    bool   // anything was emitted
	step    int    // the step being emitted, 0 before the first
	attempt int    // of its deltas
	done    int    // the last step whose logged text was seen
	cur     string // what was emitted of step's current attempt
	opened  bool   // step's first text was emitted (with its separator)
	stop    string
}

func (t *text) put(step int, s string) error {
	if s == "" {
		return nil
	}
	if step != t.step {
		t.step, t.cur, t.opened = step, "", false
	}
	if !t.opened && t.sent {
		s = "\n\n" + s
	}
	t.opened, t.sent = true, true
	return t.emit(s)
}

func (t *text) event(e event.Event) error {
	switch e.Kind {
	case event.TextDelta:
		if !t.live {
			return nil
		}
		var d event.DeltaData
		if e.Decode(&d) != nil || d.Reasoning || d.Step <= t.done || d.Step < t.step {
			return nil
		}
		if d.Step != t.step || d.Attempt != t.attempt {
			// A new step, or a retry of this one: what an earlier attempt
			// streamed cannot be taken back.
			if d.Step != t.step {
				t.step, t.opened = d.Step, false
			}
			t.attempt, t.cur = d.Attempt, ""
		}
		t.cur += d.Text
		return t.put(d.Step, d.Text)
	case event.Text:
		var d event.TextData
		if e.Decode(&d) != nil || (d.Step != 0 && d.Step <= t.done) {
			return nil
		}
		if d.Step != 0 && d.Step < t.step {
			// Deltas of a later step came first; this step was streamed.
			t.done = d.Step
			return nil
		}
		rest := d.Text
		if d.Step == t.step && t.opened {
			rest = ""
			if strings.HasPrefix(d.Text, t.cur) {
				rest = d.Text[len(t.cur):]
			}
		}
		if d.Step != 0 {
			t.done = d.Step
		}
		if rest == "" {
			return nil
		}
		cur := t.cur
		if d.Step != t.step {
			cur = ""
		}
		err := t.put(d.Step, rest)
		t.cur = cur + rest
		return err
	case event.ModelCall:
		var d event.ModelCallData
		if e.Decode(&d) == nil && d.Error == "" {
			t.stop = d.StopReason
		}
	}
	return nil
}

// finish emits the turn's reply when no step's text was seen.
func (t *text) finish(end event.TurnEndData) error {
	if !t.sent && end.Reply != "" {
		return t.put(t.step, end.Reply)
	}
	return nil
}

// ensure the interface stays what the runtime offers.
var _ Runtime = (*runtime.Runtime)(nil)
