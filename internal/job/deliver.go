package job

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"

	"agentd/internal/runtime"
)

// deliver sends a run's output, or its failure, where d says: as a system
// message to a session (once: its idempotency key is the run's; a
// closed session refuses it, and stays closed), or
// POSTed as JSON (the Result) to a webhook URL through the SSRF guard. A
// nil d, or None, delivers nothing.
func (r *Runner) deliver(ctx context.Context, name string, d *Delivery, res *Result) error {
	switch {
	case d == nil || d.None:
		return nil
	case d.Session != "":
		text := res.Output
		if res.Failed() {
			text = fmt.Sprintf("job %s run %s failed: %s", name, res.Run, res.Error)
		}
		if text == "" {
			text = fmt.Sprintf("job %s run %s ended with no output", name, res.Run)
		}
		_, err := r.rt.Submit(ctx, runtime.Input{Session: d.Session, Text: text, Source: "job", System: true, Silent: d.Silent,
			Origin: "job:" + name, IdempotencyKey: "job:" + name + ":" + res.Run + ":deliver"})
		return err
	case d.Webhook != "":
		return r.post(ctx, d.Webhook, res)
	}
	return nil
}

// post POSTs res as JSON to url; a status other than 2xx is an error.
func (r *Runner) post(ctx context.Context, url string, res *Result) error {
	if err := r.checkURL(url); err != nil {
		return err
	}
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
