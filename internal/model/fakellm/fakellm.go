// Package fakellm is a real HTTP server that speaks the OpenAI Chat
// Completions and the Anthropic Messages wire formats, streaming (SSE) and
// not, and answers from a small line-based script instead of a model.
//
// agentd's tests point their providers at it, `agentd bench` measures the
// framework's own overhead against it, and `agentd fakellm` runs it for
// demos. A script decides, per request, what to say, which tools to call,
// what to think, and how to fail (rate limits, overload, context overflow,
// refused streams, truncated and stalled streams); a request's max_tokens
// cuts the reply as a model's limit does. Which response answers a request
// depends only on the request, never on server state, so replies are the
// same across retries and restarts; the one exception is `fail ...
// times=N` (and `stall times=N`), which counts.
//
// The script format is described in docs/fakellm.md.
package fakellm

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"agentd/internal/jsonstr"
)

// MaxBodyBytes is the largest request body the server reads.
const MaxBodyBytes = 32 << 20

// modelNames are the model names GET /v1/models lists; all answer alike.
// Requests may name any model: the name is echoed back in responses, and
// the first of these stands in for a missing one.
var modelNames = [...]string{"fake", "fake-mini", "fake-large"}

// Options configures a Server. The zero value (or nil) is ready to use.
type Options struct {
	Logger *slog.Logger // nil: discard
}

// Stats counts the requests a Server has received, per route.
type Stats struct {
	ChatCompletions int64 // POST /v1/chat/completions
	Messages        int64 // POST /v1/messages
	Models          int64 // GET /v1/models
	Healthz         int64 // GET /healthz
	NotFound        int64 // any other path
	Failures        int64 // scripted failures served (fail directives, nostream refusals)
	BadRequests     int64 // requests fakellm itself rejected (bad JSON, no messages, wrong method)
}

// Server answers model API requests from a script. It is an http.Handler,
// safe for concurrent use.
type Server struct {
	script     *Script
	log        *slog.Logger
	ids        atomic.Uint64
	pool       sync.Pool // *exchange
	modelsBody []byte

	mu    sync.Mutex
	fails map[uint64]int // fail and stall ... times=N: times served per request key

	chat, messages, models, healthz, notFound, failures, bad atomic.Int64

	// Header values, shared read-only by all responses.
	hSSE, hJSON, hNoCache []string
}

// New returns a server that answers from s; a nil s echoes the last user
// message.
func New(s *Script, opts *Options) *Server {
	if opts == nil {
		opts = &Options{}
	}
	log := opts.Logger
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	srv := &Server{
		script:   s,
		log:      log,
		fails:    make(map[uint64]int),
		hSSE:     []string{"text/event-stream"},
		hJSON:    []string{"application/json"},
		hNoCache: []string{"no-cache"},
	}
	srv.pool.New = func() any { return new(exchange) }
	srv.modelsBody = modelsBody()
	return srv
}

// Stats returns the request counts so far.
func (s *Server) Stats() Stats {
	return Stats{
		ChatCompletions: s.chat.Load(),
		Messages:        s.messages.Load(),
		Models:          s.models.Load(),
		Healthz:         s.healthz.Load(),
		NotFound:        s.notFound.Load(),
		Failures:        s.failures.Load(),
		BadRequests:     s.bad.Load(),
	}
}

// Serve accepts connections on ln until ctx is cancelled, then shuts down
// gracefully: it stops accepting, lets responses in progress finish (waits
// in delay directives end at once) and returns nil. It returns an error if
// the listener fails.
func (s *Server) Serve(ctx context.Context, ln net.Listener) error {
	hs := &http.Server{
		Handler:           s,
		ReadHeaderTimeout: 10 * time.Second,
		BaseContext:       func(net.Listener) context.Context { return ctx },
		ErrorLog:          slog.NewLogLogger(s.log.Handler(), slog.LevelWarn),
	}
	errc := make(chan error, 1)
	go func() { errc <- hs.Serve(ln) }()
	select {
	case err := <-errc:
		return fmt.Errorf("fakellm: serve: %w", err)
	case <-ctx.Done():
	}
	sctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 5*time.Second)
	defer cancel()
	err := hs.Shutdown(sctx)
	<-errc // http.ErrServerClosed
	if err != nil {
		hs.Close()
		return fmt.Errorf("fakellm: shutdown: %w", err)
	}
	return nil
}

// format is a wire format.
type format uint8

const (
	openAI format = iota
	anthropic
)

// ServeHTTP routes:
//
//	POST /v1/chat/completions   OpenAI Chat Completions
//	POST /v1/messages           Anthropic Messages
//	GET  /v1/models             the model list (both formats' fields)
//	GET  /healthz               "ok"
//
// The API routes are also served without the /v1 prefix.
func (s *Server) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	switch r.URL.Path {
	case "/v1/chat/completions", "/chat/completions":
		s.chat.Add(1)
		s.complete(w, r, openAI)
	case "/v1/messages", "/messages":
		s.messages.Add(1)
		s.complete(w, r, anthropic)
	case "/v1/models", "/models":
		s.models.Add(1)
		if !s.allow(w, r, openAI, http.MethodGet) {
			return
		}
		w.Header()["Content-Type"] = s.hJSON
		w.Write(s.modelsBody)
	case "/healthz":
		s.healthz.Add(1)
		if !s.allow(w, r, openAI, http.MethodGet) {
			return
		}
		w.Header().Set("Content-Type", "text/plain; charset=utf-8")
		io.WriteString(w, "ok\n")
	default:
		s.notFound.Add(1)
		s.writeError(w, openAI, http.StatusNotFound, "invalid_request_error", "", "",
			"fakellm: no route "+r.Method+" "+r.URL.Path, -1)
	}
}

// allow reports whether r uses method (GET also allows HEAD) and otherwise
// answers 405.
func (s *Server) allow(w http.ResponseWriter, r *http.Request, f format, method string) bool {
	if r.Method == method || method == http.MethodGet && r.Method == http.MethodHead {
		return true
	}
	s.bad.Add(1)
	w.Header().Set("Allow", method)
	s.writeError(w, f, http.StatusMethodNotAllowed, errType(f, 400), "", "",
		"fakellm: "+r.URL.Path+" wants "+method, -1)
	return false
}

// exchange holds the buffers of one request; exchanges are pooled.
type exchange struct {
	body    []byte
	scratch []byte // rendered texts, arguments and ids
	out     []byte // the event or body being written
	pre     []byte // the OpenAI chunk prefix
	calls   []outCall
	rp      reply
	sse     sse
}

func (s *Server) getExchange() *exchange { return s.pool.Get().(*exchange) }

func (s *Server) putExchange(ex *exchange) {
	const keep = 1 << 20
	if cap(ex.body) > keep || cap(ex.scratch) > keep || cap(ex.out) > keep {
		return
	}
	ex.body, ex.scratch, ex.out, ex.pre = ex.body[:0], ex.scratch[:0], ex.out[:0], ex.pre[:0]
	clear(ex.calls)
	ex.calls = ex.calls[:0]
	ex.rp = reply{}
	s.pool.Put(ex)
}

// wireRequest is what fakellm reads of a request in either format.
type wireRequest struct {
	Model         string          `json:"model"`
	Messages      []wireMessage   `json:"messages"`
	System        json.RawMessage `json:"system"` // Anthropic
	Stream        bool            `json:"stream"`
	StreamOptions struct {
		IncludeUsage bool `json:"include_usage"`
	} `json:"stream_options"` // OpenAI
	MaxTokens           int `json:"max_tokens"`
	MaxCompletionTokens int `json:"max_completion_tokens"` // OpenAI
}

// maxTokens returns the most output tokens the request allows, 0 for no
// limit.
func (r *wireRequest) maxTokens() int {
	if r.MaxCompletionTokens > 0 {
		return r.MaxCompletionTokens
	}
	return max(r.MaxTokens, 0)
}

type wireMessage struct {
	Role    string          `json:"role"`
	Content json.RawMessage `json:"content"`
}

// wireBlock is a content part (OpenAI) or content block (Anthropic).
type wireBlock struct {
	Type     string          `json:"type"`
	Text     string          `json:"text"`
	Content  json.RawMessage `json:"content"`   // tool_result
	ImageURL *wireImageURL   `json:"image_url"` // OpenAI image_url
	Source   *wireSource     `json:"source"`    // Anthropic image
}

type wireImageURL struct {
	URL string `json:"url"`
}

type wireSource struct {
	Type      string `json:"type"` // base64 or url
	MediaType string `json:"media_type"`
	Data      string `json:"data"`
	URL       string `json:"url"`
}

var errTooLarge = errors.New("request body too large")

func readBody(r *http.Request, buf []byte) ([]byte, error) {
	if r.ContentLength > MaxBodyBytes {
		return buf, errTooLarge
	}
	if n := int(r.ContentLength); n > 0 && cap(buf) < n+1 {
		buf = make([]byte, 0, n+1)
	}
	for {
		if len(buf) == cap(buf) {
			buf = append(buf, 0)[:len(buf)]
		}
		n, err := r.Body.Read(buf[len(buf):cap(buf)])
		buf = buf[:len(buf)+n]
		if len(buf) > MaxBodyBytes {
			return buf, errTooLarge
		}
		if err == io.EOF {
			return buf, nil
		}
		if err != nil {
			return buf, err
		}
	}
}

func (s *Server) complete(w http.ResponseWriter, r *http.Request, f format) {
	if !s.allow(w, r, f, http.MethodPost) {
		return
	}
	ex := s.getExchange()
	defer s.putExchange(ex)

	var err error
	ex.body, err = readBody(r, ex.body[:0])
	if err != nil {
		s.bad.Add(1)
		if errors.Is(err, errTooLarge) {
			s.writeError(w, f, http.StatusRequestEntityTooLarge, errType(f, 413), "", "",
				"fakellm: request body larger than "+strconv.Itoa(MaxBodyBytes)+" bytes", -1)
			return
		}
		s.writeError(w, f, http.StatusBadRequest, errType(f, 400), "", "", "fakellm: reading body: "+err.Error(), -1)
		return
	}
	var req wireRequest
	if err := json.Unmarshal(ex.body, &req); err != nil {
		s.badRequest(w, f, "fakellm: invalid JSON body: "+err.Error())
		return
	}
	msgs := req.Messages
	if len(msgs) == 0 {
		s.badRequest(w, f, "fakellm: messages: want a non-empty array of messages")
		return
	}
	t := turn{format: f, msgs: msgs, system: req.System}
	if err := t.analyze(); err != nil {
		s.badRequest(w, f, "fakellm: "+err.Error())
		return
	}
	if err := t.scanImages(); err != nil {
		s.badRequest(w, f, "fakellm: "+err.Error())
		return
	}
	resp, ruleLine := s.pick(&t)
	if s.log.Enabled(r.Context(), slog.LevelDebug) {
		s.log.LogAttrs(r.Context(), slog.LevelDebug, "fakellm request",
			slog.String("path", r.URL.Path), slog.Bool("stream", req.Stream),
			slog.Int("messages", len(msgs)), slog.Int("response", t.index),
			slog.Int("rule_line", ruleLine), slog.Int("response_line", resp.line))
	}
	if resp.delay > 0 {
		timer := time.NewTimer(resp.delay)
		select {
		case <-timer.C:
		case <-r.Context().Done():
			// The client is gone or the server is shutting down: drop the
			// connection, as a server that went away would.
			timer.Stop()
			panic(http.ErrAbortHandler)
		}
	}
	if ns := resp.noStream; ns != nil && req.Stream {
		s.failures.Add(1)
		s.writeError(w, f, ns.status, errType(f, ns.status), "", "", ns.msg, -1)
		return
	}
	inTokens := max(1, len(ex.body)/4)
	if resp.fail != nil && s.first(resp.fail.times, failKey, ex.body, t.index) {
		s.failures.Add(1)
		s.scriptedFailure(w, f, resp.fail, inTokens)
		return
	}
	rp := render(ex, resp, &t, inTokens)
	rp.stall = resp.stall != nil && s.first(resp.stall.times, stallKey, ex.body, t.index)
	if limit := req.maxTokens(); limit > 0 && rp.out > limit {
		rp.cut(ex, limit)
	}
	model := req.Model
	if model == "" {
		model = modelNames[0]
	}
	id := s.ids.Add(1)
	if req.Stream {
		s.stream(w, r, ex, f, model, id, req.StreamOptions.IncludeUsage, resp.gap)
		return
	}
	if f == openAI {
		ex.out = bodyOpenAI(ex.out[:0], ex, rp, model, id)
	} else {
		ex.out = bodyAnthropic(ex.out[:0], ex, rp, model, id)
	}
	h := w.Header()
	h["Content-Type"] = s.hJSON
	out := ex.out
	if rp.truncate || rp.stall {
		// Half a JSON body: a client sees a response it cannot parse, or
		// one that stops coming.
		out = out[:len(out)/2]
	} else {
		h["Content-Length"] = []string{strconv.Itoa(len(out))}
	}
	w.Write(out)
	if rp.stall {
		if fl, ok := w.(http.Flusher); ok {
			fl.Flush()
		}
		<-r.Context().Done()
	}
}

// stream writes an SSE response. A truncated response stops after half of
// its events.
func (s *Server) stream(w http.ResponseWriter, r *http.Request, ex *exchange, f format, model string, id uint64, includeUsage bool, gap time.Duration) {
	e := &ex.sse
	*e = sse{w: w, limit: -1}
	e.flush, _ = w.(http.Flusher)
	gen := func() {
		if f == openAI {
			streamOpenAI(e, ex, &ex.rp, model, id, includeUsage)
		} else {
			streamAnthropic(e, ex, &ex.rp, model, id)
		}
	}
	if ex.rp.truncate || ex.rp.stall {
		e.count = true
		gen()
		e.limit, e.n, e.count = max(1, e.n/2), 0, false
		e.stall = ex.rp.stall
	}
	h := w.Header()
	h["Content-Type"] = s.hSSE
	h["Cache-Control"] = s.hNoCache
	w.WriteHeader(http.StatusOK)
	e.gap, e.done = gap, r.Context().Done()
	gen()
	*e = sse{}
}

// sse writes server-sent events, flushing each.
type sse struct {
	w     io.Writer
	flush http.Flusher
	n     int  // events sent or counted
	limit int  // stop after this many events; -1: no limit
	count bool // count events, write nothing
	stall bool // at the limit, hold the connection open until done
	stop  bool
	// gap paces a stream: the pause before every event but the first,
	// ended early by done (the client went away).
	gap  time.Duration
	done <-chan struct{}
}

// send writes one event; it reports false once the stream has stopped.
func (e *sse) send(b []byte) bool {
	if e.stop {
		return false
	}
	if e.limit >= 0 && e.n >= e.limit {
		e.stop = true
		if e.stall {
			<-e.done
		}
		return false
	}
	e.n++
	if e.count {
		return true
	}
	if e.gap > 0 && e.n > 1 {
		t := time.NewTimer(e.gap)
		select {
		case <-t.C:
		case <-e.done:
			t.Stop()
			e.stop = true
			return false
		}
	}
	if _, err := e.w.Write(b); err != nil {
		e.stop = true
		return false
	}
	if e.flush != nil {
		e.flush.Flush()
	}
	return true
}

func (s *Server) badRequest(w http.ResponseWriter, f format, msg string) {
	s.bad.Add(1)
	s.writeError(w, f, http.StatusBadRequest, errType(f, 400), "", "", msg, -1)
}

// Salts of the counts first keeps, one per directive that counts.
const (
	failKey  = 0
	stallKey = 0x9e3779b97f4a7c15
)

// first reports whether this request is one of the first times identical
// ones (by their messages and response index) for the directive that salt
// names, and counts it; times 0 means every request.
func (s *Server) first(times int, salt uint64, body []byte, index int) bool {
	if times == 0 {
		return true
	}
	var req struct {
		Messages json.RawMessage `json:"messages"`
	}
	json.Unmarshal(body, &req) // it parsed before
	key := fnv64(fnvOffset64^salt, req.Messages)
	key = (key ^ uint64(index)) * fnvPrime64
	s.mu.Lock()
	defer s.mu.Unlock()
	n := s.fails[key]
	if n >= times {
		return false
	}
	s.fails[key] = n + 1
	return true
}

const (
	fnvOffset64 = 14695981039346656037
	fnvPrime64  = 1099511628211
)

func fnv64[T ~string | ~[]byte](h uint64, b T) uint64 {
	for i := 0; i < len(b); i++ {
		h ^= uint64(b[i])
		h *= fnvPrime64
	}
	return h
}

// pick chooses the response for a request and returns it with its rule's
// line (0 for the built-in echo).
func (s *Server) pick(t *turn) (*response, int) {
	sc := s.script
	if sc == nil {
		return echoResponse, 0
	}
	var r *rule
	for _, x := range sc.rules {
		if x.re.MatchString(t.lastUser) {
			r = x
			break
		}
	}
	if r == nil {
		r = sc.def
	}
	if r == nil || t.index >= len(r.responses) {
		return echoResponse, 0
	}
	return r.responses[t.index], r.line
}

// turn is what fakellm derives from a request's messages.
type turn struct {
	format   format
	msgs     []wireMessage
	userIdx  int    // index of the last user text message; -1: none
	lastUser string // its text
	index    int    // assistant messages after it: the response index

	toolResult     string
	toolResultDone bool

	images int // image parts or blocks in the request

	system json.RawMessage // Anthropic's system prompt

	// The content blocks of message cachedIdx, parsed last: analyze and
	// lastToolResult often both read the last message.
	cachedIdx    int
	cachedBlocks []wireBlock
}

// blocks parses an array content; i is the message's index, -1 for content
// that is not a message's own (a tool_result's).
func (t *turn) blocks(raw []byte, i int) ([]wireBlock, error) {
	if i >= 0 && i == t.cachedIdx {
		return t.cachedBlocks, nil
	}
	var blocks []wireBlock
	if err := json.Unmarshal(raw, &blocks); err != nil {
		return nil, err
	}
	if i >= 0 {
		t.cachedIdx, t.cachedBlocks = i, blocks
	}
	return blocks, nil
}

func (t *turn) analyze() error {
	t.userIdx, t.cachedIdx = -1, -1
	for i := len(t.msgs) - 1; i >= 0; i-- {
		m := &t.msgs[i]
		if m.Role == "assistant" {
			t.index++
			continue
		}
		if m.Role != "user" {
			continue
		}
		if t.format == openAI && i > 0 && t.msgs[i-1].Role == "tool" && t.imagesOnly(m.Content, i) {
			// The images of the tool results before it (tool messages
			// hold text only): part of the results, not user text.
			continue
		}
		text, isText, err := t.text(m.Content, i)
		if err != nil {
			return fmt.Errorf("messages[%d].content: %w", i, err)
		}
		if isText {
			t.userIdx, t.lastUser = i, text
			return nil
		}
	}
	return nil
}

// text returns the text of a message's content and whether it counts as
// user text: an Anthropic content made only of tool_result blocks does not.
//
// i is the message's index, -1 for a tool_result's content.
func (t *turn) text(raw json.RawMessage, i int) (string, bool, error) {
	raw = trimSpace(raw)
	if len(raw) == 0 || string(raw) == "null" {
		return "", true, nil
	}
	if raw[0] == '"' {
		if bytes.IndexByte(raw, '\\') < 0 && len(raw) >= 2 {
			return string(raw[1 : len(raw)-1]), true, nil // nothing to unescape
		}
		var s string
		err := json.Unmarshal(raw, &s)
		return s, true, err
	}
	blocks, err := t.blocks(raw, i)
	if err != nil {
		return "", false, errors.New("want a string or an array of content blocks")
	}
	isText := t.format == openAI || len(blocks) == 0
	var text string
	first := true
	for j := range blocks {
		b := &blocks[j]
		if b.Type != "tool_result" {
			isText = true
		}
		if b.Type == "text" {
			if !first {
				text += "\n"
			}
			text += b.Text
			first = false
		}
	}
	return text, isText, nil
}

// lastToolResult returns the content of the most recent tool result: the
// last "tool" message (OpenAI) or the last tool_result block (Anthropic).
func (t *turn) lastToolResult() string {
	if t.toolResultDone {
		return t.toolResult
	}
	t.toolResultDone = true
	for i := len(t.msgs) - 1; i >= 0; i-- {
		m := &t.msgs[i]
		switch {
		case t.format == openAI && m.Role == "tool":
			t.toolResult, _, _ = t.text(m.Content, i)
			return t.toolResult
		case t.format == anthropic && m.Role == "user":
			c := trimSpace(m.Content)
			if len(c) == 0 || c[0] != '[' {
				continue
			}
			blocks, err := t.blocks(c, i)
			if err != nil {
				continue
			}
			for j := len(blocks) - 1; j >= 0; j-- {
				if blocks[j].Type == "tool_result" {
					t.toolResult, _, _ = t.text(blocks[j].Content, -1)
					return t.toolResult
				}
			}
		}
	}
	return ""
}

// systemPrompt returns the request's system prompt: Anthropic's system
// field, or the OpenAI system (or developer) messages, joined.
func (t *turn) systemPrompt() string {
	if t.format == anthropic {
		s, _, _ := t.text(t.system, -1)
		return s
	}
	var parts []string
	for i := range t.msgs {
		if m := &t.msgs[i]; m.Role == "system" || m.Role == "developer" {
			s, _, _ := t.text(m.Content, i)
			parts = append(parts, s)
		}
	}
	return strings.Join(parts, "\n")
}

func trimSpace(b []byte) []byte {
	for len(b) > 0 && (b[0] == ' ' || b[0] == '\n' || b[0] == '\r' || b[0] == '\t') {
		b = b[1:]
	}
	for len(b) > 0 && (b[len(b)-1] == ' ' || b[len(b)-1] == '\n' || b[len(b)-1] == '\r' || b[len(b)-1] == '\t') {
		b = b[:len(b)-1]
	}
	return b
}

func modelsBody() []byte {
	const created = 1700000000
	createdAt := time.Unix(created, 0).UTC().Format(time.RFC3339)
	b := []byte(`{"object":"list","data":[`)
	for i, m := range modelNames {
		if i > 0 {
			b = append(b, ',')
		}
		b = append(b, `{"id":`...)
		b = jsonstr.Append(b, m)
		b = append(b, `,"object":"model","type":"model","created":`...)
		b = appendInt(b, created)
		b = append(b, `,"created_at":"`+createdAt+`","owned_by":"fakellm","display_name":`...)
		b = jsonstr.Append(b, m)
		b = append(b, '}')
	}
	b = append(b, `],"has_more":false,"first_id":`...)
	b = jsonstr.Append(b, modelNames[0])
	b = append(b, `,"last_id":`...)
	b = jsonstr.Append(b, modelNames[len(modelNames)-1])
	return append(b, "}\n"...)
}
