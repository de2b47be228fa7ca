package embed

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"net/http"
	"strconv"
	"strings"
	"sync/atomic"
	"time"
)

// Defaults for Options.
const (
	DefaultBaseURL   = "https://api.openai.com/v1"
	DefaultModel     = "text-embedding-3-small"
	DefaultBatchSize = 64
	DefaultTimeout   = 30 * time.Second
	DefaultRetries   = 3
	DefaultBackoff   = 500 * time.Millisecond
)

const (
	maxBackoff    = 10 * time.Second // longest wait between two attempts
	maxRetryAfter = 30 * time.Second // a longer Retry-After ends the attempts
	maxBody       = 64 << 20         // largest response body read
	maxMessage    = 300              // longest server message kept in an error
)

// Options configures an OpenAI client. A nil *Options means all defaults.
type Options struct {
	// BaseURL is the API root; {BaseURL}/embeddings is called. Default
	// DefaultBaseURL. For Ollama use "http://localhost:11434/v1", for vLLM
	// "http://host:8000/v1".
	BaseURL string
	// APIKey is sent as "Authorization: Bearer <key>"; empty sends none, as
	// local servers expect. It never appears in errors.
	APIKey string
	// Model is the embedding model; default DefaultModel.
	Model string
	// Dim is the expected vector length; responses of another length are
	// ErrBadResponse. 0 learns it from the first response.
	Dim int
	// SendDimensions asks the server for Dim-element vectors with the
	// "dimensions" request field. Only some models support it (OpenAI's
	// text-embedding-3 family); others reject the request.
	SendDimensions bool
	// Float asks for vectors as JSON number arrays. By default they are
	// requested base64-encoded, about a quarter of the size; servers that
	// ignore encoding_format and answer with arrays are understood either
	// way, so Float is only needed for servers that reject the field.
	Float bool
	// HTTPClient sends the requests; nil means http.DefaultClient.
	HTTPClient *http.Client
	// BatchSize is the largest number of texts sent in one request; default
	// DefaultBatchSize.
	BatchSize int
	// Timeout bounds each request attempt; default DefaultTimeout.
	Timeout time.Duration
	// MaxRetries is how many times a request is repeated after a 429, a 5xx,
	// a timeout or a network error; 0 means DefaultRetries, negative none.
	MaxRetries int
	// Backoff is the wait before the first retry, doubled for each next one
	// (with jitter, at most 10s) unless the server sends Retry-After;
	// default DefaultBackoff.
	Backoff time.Duration
	// Provider labels the client in Name and errors; default "openai".
	Provider string
}

// OpenAI is an Embedder for OpenAI-compatible embeddings APIs. It is safe
// for concurrent use.
type OpenAI struct {
	url     string
	key     string
	model   string
	name    string
	sendDim bool
	float   bool
	http    *http.Client
	batch   int
	timeout time.Duration
	retries int
	backoff time.Duration
	dim     atomic.Int64 // Options.Dim, or learned from the first response
}

var _ Embedder = (*OpenAI)(nil)

// NewOpenAI returns a client for the endpoint o describes.
func NewOpenAI(o *Options) *OpenAI {
	var opt Options
	if o != nil {
		opt = *o
	}
	if opt.BaseURL == "" {
		opt.BaseURL = DefaultBaseURL
	}
	if opt.Model == "" {
		opt.Model = DefaultModel
	}
	if opt.Provider == "" {
		opt.Provider = "openai"
	}
	if opt.HTTPClient == nil {
		opt.HTTPClient = http.DefaultClient
	}
	if opt.BatchSize <= 0 {
		opt.BatchSize = DefaultBatchSize
	}
	if opt.Timeout <= 0 {
		opt.Timeout = DefaultTimeout
	}
	switch {
	case opt.MaxRetries == 0:
		opt.MaxRetries = DefaultRetries
	case opt.MaxRetries < 0:
		opt.MaxRetries = 0
	}
	if opt.Backoff <= 0 {
		opt.Backoff = DefaultBackoff
	}
	c := &OpenAI{
		url:     strings.TrimRight(opt.BaseURL, "/") + "/embeddings",
		key:     opt.APIKey,
		model:   opt.Model,
		name:    opt.Provider + ":" + opt.Model,
		sendDim: opt.SendDimensions && opt.Dim > 0,
		float:   opt.Float,
		http:    opt.HTTPClient,
		batch:   opt.BatchSize,
		timeout: opt.Timeout,
		retries: opt.MaxRetries,
		backoff: opt.Backoff,
	}
	if opt.Dim > 0 {
		c.dim.Store(int64(opt.Dim))
	}
	return c
}

// Name returns "<provider>:<model>", e.g. "openai:text-embedding-3-small".
func (c *OpenAI) Name() string { return c.name }

// Dim returns the vector length: Options.Dim, or the length learned from the
// first response, or 0 before it.
func (c *OpenAI) Dim() int { return int(c.dim.Load()) }

// Embed sends texts to {BaseURL}/embeddings, BatchSize at a time, and
// returns their vectors scaled to unit length, in order. Blank texts are not
// sent: they get a zero vector (nil while Dim is still unknown).
//
// Failures wrap ErrUnavailable, ErrAuth, ErrRejected or ErrBadResponse; when
// ctx ends first, the error wraps ctx.Err() instead.
func (c *OpenAI) Embed(ctx context.Context, texts []string) ([][]float32, error) {
	out := make([][]float32, len(texts))
	var idx []int
	var batch []string
	flush := func() error {
		if len(batch) == 0 {
			return nil
		}
		vecs, err := c.post(ctx, batch)
		if err != nil {
			return err
		}
		for j, v := range vecs {
			out[idx[j]] = v
		}
		idx, batch = idx[:0], batch[:0]
		return nil
	}
	for i, t := range texts {
		if strings.TrimSpace(t) == "" {
			continue
		}
		idx = append(idx, i)
		batch = append(batch, t)
		if len(batch) == c.batch {
			if err := flush(); err != nil {
				return nil, err
			}
		}
	}
	if err := flush(); err != nil {
		return nil, err
	}
	if d := c.Dim(); d > 0 {
		for i, v := range out {
			if v == nil {
				out[i] = make([]float32, d)
			}
		}
	}
	return out, nil
}

// request is the JSON body of an embeddings request.
type request struct {
	Model          string   `json:"model"`
	Input          []string `json:"input"`
	EncodingFormat string   `json:"encoding_format,omitempty"`
	Dimensions     int      `json:"dimensions,omitempty"`
}

// post embeds one batch, retrying transient failures.
func (c *OpenAI) post(ctx context.Context, input []string) ([][]float32, error) {
	req := request{Model: c.model, Input: input}
	if !c.float {
		req.EncodingFormat = "base64"
	}
	if c.sendDim {
		req.Dimensions = c.Dim()
	}
	body, err := json.Marshal(req)
	if err != nil {
		return nil, fmt.Errorf("%w: %s: encoding request: %v", ErrRejected, c.name, err)
	}
	for attempt := 0; ; attempt++ {
		vecs, retryAfter, err := c.once(ctx, body, len(input))
		if err == nil {
			return vecs, nil
		}
		if ctx.Err() != nil {
			return nil, fmt.Errorf("embed: %s: %w", c.name, ctx.Err())
		}
		if !errors.Is(err, ErrUnavailable) || attempt >= c.retries || retryAfter > maxRetryAfter {
			return nil, err
		}
		wait := retryAfter
		if wait <= 0 {
			wait = jitter(min(c.backoff<<attempt, maxBackoff))
		}
		t := time.NewTimer(wait)
		select {
		case <-ctx.Done():
			t.Stop()
			return nil, fmt.Errorf("embed: %s: %w", c.name, ctx.Err())
		case <-t.C:
		}
	}
}

// jitter returns a duration between d/2 and d.
func jitter(d time.Duration) time.Duration {
	if d <= 1 {
		return d
	}
	return d/2 + rand.N(d/2+1)
}

// once makes one request. It returns the server's Retry-After, if any, with
// a retryable error.
func (c *OpenAI) once(ctx context.Context, body []byte, n int) ([][]float32, time.Duration, error) {
	actx, cancel := context.WithTimeout(ctx, c.timeout)
	defer cancel()
	hreq, err := http.NewRequestWithContext(actx, http.MethodPost, c.url, bytes.NewReader(body))
	if err != nil {
		return nil, 0, fmt.Errorf("%w: %s: %v", ErrRejected, c.name, c.redact(err.Error()))
	}
	hreq.Header.Set("Content-Type", "application/json")
	hreq.Header.Set("Accept", "application/json")
	if c.key != "" {
		hreq.Header.Set("Authorization", "Bearer "+c.key)
	}
	resp, err := c.http.Do(hreq)
	if err != nil {
		return nil, 0, c.transportError(ctx, actx, err)
	}
	defer resp.Body.Close()
	data, err := io.ReadAll(io.LimitReader(resp.Body, maxBody+1))
	if err != nil {
		return nil, 0, c.transportError(ctx, actx, err)
	}
	if len(data) > maxBody {
		return nil, 0, fmt.Errorf("%w: %s: response larger than %d bytes", ErrBadResponse, c.name, maxBody)
	}
	if resp.StatusCode/100 != 2 {
		kind := statusKind(resp.StatusCode)
		msg := c.redact(errorMessage(data, resp.StatusCode))
		err := fmt.Errorf("%w: %s: HTTP %d: %s", kind, c.name, resp.StatusCode, msg)
		if kind == ErrUnavailable {
			return nil, retryAfter(resp.Header.Get("Retry-After"), time.Now()), err
		}
		return nil, 0, err
	}
	want := c.Dim()
	vecs, err := decodeResponse(data, n, want)
	if err != nil {
		return nil, 0, fmt.Errorf("%s: %w", c.name, err)
	}
	if want == 0 && len(vecs) > 0 {
		got := int64(len(vecs[0]))
		if !c.dim.CompareAndSwap(0, got) && c.dim.Load() != got {
			return nil, 0, fmt.Errorf("%w: %s: got %d-element vectors, want %d", ErrBadResponse, c.name, got, c.dim.Load())
		}
	}
	return vecs, 0, nil
}

// transportError classifies a failure to send the request or read the
// response.
func (c *OpenAI) transportError(ctx, actx context.Context, err error) error {
	if ctx.Err() != nil {
		return fmt.Errorf("embed: %s: %w", c.name, ctx.Err())
	}
	if actx.Err() != nil {
		return fmt.Errorf("%w: %s: no response within %v", ErrUnavailable, c.name, c.timeout)
	}
	return fmt.Errorf("%w: %s: %s", ErrUnavailable, c.name, c.redact(err.Error()))
}

// redact removes the API key from s, in case a server or proxy echoes it.
func (c *OpenAI) redact(s string) string {
	if c.key == "" {
		return s
	}
	return strings.ReplaceAll(s, c.key, "[redacted]")
}

// statusKind maps a non-2xx HTTP status to an error kind.
func statusKind(status int) error {
	switch {
	case status == http.StatusUnauthorized || status == http.StatusForbidden:
		return ErrAuth
	case status == http.StatusRequestTimeout || status == http.StatusTooEarly ||
		status == http.StatusTooManyRequests || status >= 500:
		return ErrUnavailable
	case status >= 400:
		return ErrRejected
	default:
		return ErrBadResponse
	}
}

// errorMessage extracts a readable message from an error body:
// {"error":{"message":...}}, {"error":"..."}, {"message":...} or
// {"detail":...}; otherwise the start of the body or the status text.
func errorMessage(body []byte, status int) string {
	var v struct {
		Error   json.RawMessage `json:"error"`
		Message string          `json:"message"`
		Detail  json.RawMessage `json:"detail"`
	}
	msg := ""
	if json.Unmarshal(body, &v) == nil {
		var obj struct {
			Message string `json:"message"`
		}
		var s string
		switch {
		case json.Unmarshal(v.Error, &obj) == nil && obj.Message != "":
			msg = obj.Message
		case json.Unmarshal(v.Error, &s) == nil && s != "":
			msg = s
		case v.Message != "":
			msg = v.Message
		case json.Unmarshal(v.Detail, &s) == nil && s != "":
			msg = s
		}
	}
	if msg == "" {
		msg = strings.TrimSpace(string(body))
	}
	if msg == "" {
		msg = http.StatusText(status)
	}
	if len(msg) > maxMessage {
		msg = strings.ToValidUTF8(msg[:maxMessage], "") + "…"
	}
	return msg
}

// retryAfter parses a Retry-After header: seconds or an HTTP date. It
// returns 0 when the header is absent or unreadable.
func retryAfter(h string, now time.Time) time.Duration {
	h = strings.TrimSpace(h)
	if h == "" {
		return 0
	}
	if s, err := strconv.ParseFloat(h, 64); err == nil {
		if s <= 0 || s != s {
			return 0
		}
		return time.Duration(min(s, 86400) * float64(time.Second))
	}
	if t, err := http.ParseTime(h); err == nil {
		return max(t.Sub(now), 0)
	}
	return 0
}
