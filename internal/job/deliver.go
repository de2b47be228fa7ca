package job

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strings"
	"time"

	"agentd/internal/runtime"
	"agentd/internal/store"
)

// DeliveryHeader is the header of a webhook delivery that carries its
// id, "<job>:<run>": the same on every try and after a restart, so that
// a receiver drops the repeat a crash between its answer and the
// delivery's record can cause.
const DeliveryHeader = "X-Agentd-Delivery"

// settle delivers a run's output where its job says (deliver), or the
// failure alert of a run that failed or was skipped (on_failure), trying up to r.tries times with a doubling backoff,
// then records the delivery on the run (RecordDelivery): made, or given
// up with its error, which res then says too. A run with nothing to
// deliver is recorded at once, so that it is not found undelivered
// again. Stopped (Close, a crash) before the record, the run stays
// undelivered in the store and Recover delivers it.
func (r *Runner) settle(ctx context.Context, s *Spec, res *Result) {
	d := s.Deliver
	if res.Failed() || res.Status == store.RunSkipped {
		d = s.OnFailure
	}
	if res.Quiet {
		d = nil // a heartbeat with nothing to say
	}
	err := r.deliver(ctx, res.Job, d, res)
	for try := 1; err != nil && try < r.tries && !r.stopping(err) && !errors.Is(err, errRefused); try++ {
		r.log.Info("job delivery failed; trying again", "job", res.Job, "run", res.Run, "try", try, "err", err)
		select {
		case <-time.After(r.backoff << (try - 1)):
		case <-ctx.Done():
		}
		err = r.deliver(ctx, res.Job, d, res)
	}
	if err != nil && r.stopping(err) {
		return // undelivered: Recover delivers it at the next start
	}
	failure := ""
	if err != nil {
		failure = err.Error()
		r.log.Warn("job delivery failed", "job", res.Job, "run", res.Run, "tries", r.tries, "err", err)
	}
	res.DeliveryError = failure
	got, err := r.runs.RecordDelivery(ctx, res.Job, res.Run, time.Time{}, failure)
	switch {
	case err == nil:
		res.Delivered = got.DeliveredAt
	case errors.Is(err, store.ErrConflict):
		// Another node recovered and delivered it while this one did
		// (the receiver has it twice, with the same id), or its end was
		// not recorded (the run is still open: Recover runs it again).
		r.log.Info("job delivery not recorded here", "job", res.Job, "run", res.Run, "err", err)
	case r.stopping(err):
		// Stopped between the delivery and its record: the run stays
		// undelivered and Recover delivers it again (with the same id).
		r.log.Info("job delivery not recorded: stopping", "job", res.Job, "run", res.Run, "err", err)
	default:
		r.log.Error("job delivery not recorded", "job", res.Job, "run", res.Run, "err", err)
	}
}

// errRefused marks a delivery that no try can make: its URL is refused.
var errRefused = errors.New("job: delivery refused")

// deliver sends a run's output, or its failure, where d says: as a system
// message to a session (once: its idempotency key is the run's; a
// closed session refuses it, and stays closed), or
// POSTed as JSON (the Result) to a webhook URL through the SSRF guard,
// with the delivery's id in DeliveryHeader. A nil d, or None, delivers
// nothing.
func (r *Runner) deliver(ctx context.Context, name string, d *Delivery, res *Result) error {
	switch {
	case d == nil || d.None:
		return nil
	case d.Session != "":
		text := res.Output
		switch {
		case res.Failed():
			text = fmt.Sprintf("job %s run %s failed: %s", name, res.Run, res.Error)
		case res.Status == store.RunSkipped:
			text = fmt.Sprintf("job %s run %s was skipped: %s", name, res.Run, res.Error)
		}
		if text == "" {
			text = fmt.Sprintf("job %s run %s ended with no output", name, res.Run)
		}
		_, err := r.rt.Submit(ctx, runtime.Input{Session: d.Session, Text: text, Source: "job", System: true, Silent: d.Silent,
			Origin: "job:" + name, IdempotencyKey: "job:" + name + ":" + res.Run + ":deliver"})
		return err
	case d.Webhook != "":
		if err := r.checkURL(d.Webhook); err != nil {
			return fmt.Errorf("%w: %w", errRefused, hideURL(err, d.Webhook))
		}
		return hideURL(r.post(ctx, d.Webhook, name+":"+res.Run, res), d.Webhook)
	}
	return nil
}

// post POSTs res as JSON to url, id in DeliveryHeader; a status other
// than 2xx is an error.
func (r *Runner) post(ctx context.Context, url, id string, res *Result) error {
	body, err := json.Marshal(res)
	if err != nil {
		return err
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, url, bytes.NewReader(body))
	if err != nil {
		return err
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("User-Agent", "agentd-job")
	req.Header.Set(DeliveryHeader, id)
	resp, err := r.client.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	io.Copy(io.Discard, io.LimitReader(resp.Body, 64<<10))
	if resp.StatusCode/100 != 2 {
		return fmt.Errorf("webhook answered %s", resp.Status)
	}
	return nil
}

// hideURL returns err with the delivery URL raw written as its scheme and
// host alone: chat services' incoming webhooks (Slack, Discord, Teams)
// carry their credential in the path or the query, and net/http's errors
// quote the URL whole, while a delivery's error goes to the log and the
// run history, read by people who never see the row.
func hideURL(err error, raw string) error {
	if err == nil || raw == "" || !strings.Contains(err.Error(), raw) {
		return err
	}
	return &hiddenURL{err: err, text: strings.ReplaceAll(err.Error(), raw, shortURL(raw))}
}

// hiddenURL is an error whose text has a URL cut to its scheme and host;
// it unwraps to the error it stands for.
type hiddenURL struct {
	err  error
	text string
}

func (h *hiddenURL) Error() string { return h.text }
func (h *hiddenURL) Unwrap() error { return h.err }

// shortURL is raw's scheme and host, with "/…" where a path or a query
// is left out.
func shortURL(raw string) string {
	u, err := url.Parse(raw)
	if err != nil || u.Host == "" {
		return "(the delivery URL)"
	}
	short := u.Scheme + "://" + u.Host
	if (u.Path != "" && u.Path != "/") || u.RawQuery != "" || u.Fragment != "" {
		short += "/…"
	}
	return short
}
