package telegram

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"mime/multipart"
	"net/http"
	"net/url"
	"strings"
	"time"

	"agentd/internal/connector"
)

// callTimeout bounds one Bot API call other than the long poll.
const callTimeout = 30 * time.Second

// maxAnswer bounds an answer's body (a getUpdates batch of 100 messages is
// far below).
const maxAnswer = 8 << 20

// client calls the Bot API: POST <api>/bot<token>/<method>. The token is
// in the URL path, so no error text of net/http reaches a caller without
// passing through redact.
type client struct {
	api    string // without a trailing "/"
	token  string
	http   *http.Client
	redact func(string) string
}

// answer is the Bot API's envelope
// (https://core.telegram.org/bots/api#making-requests).
type answer struct {
	OK          bool            `json:"ok"`
	Result      json.RawMessage `json:"result"`
	ErrorCode   int             `json:"error_code"`
	Description string          `json:"description"`
	Parameters  struct {
		RetryAfter      int   `json:"retry_after"`
		MigrateToChatID int64 `json:"migrate_to_chat_id"`
	} `json:"parameters"`
}

// call makes method with params as JSON and decodes the result into out
// (nil: ignored).
func (c *client) call(ctx context.Context, method string, params, out any) error {
	body, err := json.Marshal(params)
	if err != nil {
		return fmt.Errorf("telegram: %s: %w", method, err)
	}
	return c.do(ctx, method, "application/json", bytes.NewReader(body), out)
}

// upload makes method as multipart/form-data: fields, and one file.
func (c *client) upload(ctx context.Context, method string, fields map[string]string, field, name, typ string, data []byte, out any) error {
	var buf bytes.Buffer
	mw := multipart.NewWriter(&buf)
	for k, v := range fields {
		mw.WriteField(k, v)
	}
	h := make(map[string][]string)
	h["Content-Disposition"] = []string{fmt.Sprintf(`form-data; name=%q; filename=%q`, field, safeName(name))}
	if typ != "" {
		h["Content-Type"] = []string{typ}
	}
	w, err := mw.CreatePart(h)
	if err != nil {
		return fmt.Errorf("telegram: %s: %w", method, err)
	}
	w.Write(data)
	mw.Close()
	return c.do(ctx, method, mw.FormDataContentType(), &buf, out)
}

// safeName keeps a file name fit for a header's quoted string.
func safeName(s string) string {
	s = strings.Map(func(r rune) rune {
		if r < 0x20 || r == '"' || r == '\\' || r == 0x7f {
			return '_'
		}
		return r
	}, s)
	if s == "" {
		return "file"
	}
	return s
}

func (c *client) do(ctx context.Context, method, ctype string, body io.Reader, out any) error {
	if _, ok := ctx.Deadline(); !ok {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, callTimeout)
		defer cancel()
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, c.api+"/bot"+c.token+"/"+method, body)
	if err != nil {
		return c.wrap(method, err)
	}
	req.Header.Set("Content-Type", ctype)
	resp, err := c.http.Do(req)
	if err != nil {
		return c.wrap(method, err)
	}
	defer resp.Body.Close()
	raw, err := io.ReadAll(io.LimitReader(resp.Body, maxAnswer))
	if err != nil {
		return c.wrap(method, err)
	}
	var a answer
	if err := json.Unmarshal(raw, &a); err != nil {
		return c.wrap(method, fmt.Errorf("HTTP %d: not a Bot API answer", resp.StatusCode))
	}
	if !a.OK {
		return c.apiError(method, resp.StatusCode, &a)
	}
	if out != nil {
		if err := json.Unmarshal(a.Result, out); err != nil {
			return c.wrap(method, fmt.Errorf("decode result: %w", err))
		}
	}
	return nil
}

// redactedError is an error whose text was redacted; it unwraps to the
// cause's cause (a net/http *url.Error's inner error, which names no URL)
// so errors.Is(err, context.Canceled) still holds.
type redactedError struct {
	msg   string
	cause error
}

func (e *redactedError) Error() string { return e.msg }
func (e *redactedError) Unwrap() error { return e.cause }

// wrap makes err a telegram error whose text holds no secret.
func (c *client) wrap(method string, err error) error {
	cause := err
	var ue *url.Error
	if errors.As(err, &ue) {
		cause = ue.Err
	}
	return &redactedError{msg: c.redact("telegram: " + method + ": " + err.Error()), cause: cause}
}

// apiError maps a Bot API refusal to connector's errors
// (https://core.telegram.org/bots/api#making-requests: error_code,
// description, parameters.retry_after).
func (c *client) apiError(method string, status int, a *answer) error {
	desc := c.redact(a.Description)
	code := a.ErrorCode
	if code == 0 {
		code = status
	}
	prefix := "telegram: " + method + ": " + desc
	low := strings.ToLower(desc)
	switch {
	case code == 429:
		return fmt.Errorf("telegram: %s: %w", method, &connector.RetryAfter{D: time.Duration(max(a.Parameters.RetryAfter, 1)) * time.Second})
	case code == 401 || code == 404:
		// 401 Unauthorized: a wrong token; 404 Not Found: a malformed one.
		return fmt.Errorf("%s: %w", prefix, connector.ErrAuth)
	case code == 409:
		if strings.Contains(low, "terminated by other getupdates") {
			return fmt.Errorf("%s (another process polls this bot)", prefix)
		}
		return fmt.Errorf("%s: %w", prefix, connector.ErrConfig)
	case strings.Contains(low, "can't parse entities"):
		return fmt.Errorf("%s: %w", prefix, connector.ErrMarkup)
	case strings.Contains(low, "message is too long"):
		return fmt.Errorf("%s: %w", prefix, connector.ErrTooLong)
	case code == 403 || code == 400:
		// Chat not found, blocked by the user, kicked, a group that became
		// a supergroup (parameters.migrate_to_chat_id): no retry mends it.
		if a.Parameters.MigrateToChatID != 0 {
			prefix += fmt.Sprintf(" (the group is now chat %d)", a.Parameters.MigrateToChatID)
		}
		return fmt.Errorf("%s: %w", prefix, connector.ErrPermanent)
	}
	return errors.New(prefix) // 5xx and others: retried
}

// isNotModified is the refusal of an edit that changes nothing.
func isNotModified(err error) bool {
	return err != nil && strings.Contains(err.Error(), "message is not modified")
}
