package bench

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"os/exec"
	"time"
)

// Helpers are processes of this binary (`agentd bench floor-server`,
// `agentd bench fanout-clients`) that the bench starts so that what they
// do is measured apart from it: a floor's server, or the clients of a
// fan-out, which can then be pinned to other CPUs than the server's. The
// bench talks to one over its standard input and output, a JSON value a
// line each way; a helper ends when its standard input closes.

// startHelper starts `agentd bench <role>`, hands it cfg as a JSON line
// on its standard input and returns it once it has answered with a line.
func startHelper(ctx context.Context, exe, role string, cfg any, answer any) (*helper, error) {
	cmd := exec.CommandContext(ctx, exe, "bench", role)
	cmd.Stderr = os.Stderr
	in, err := cmd.StdinPipe()
	if err != nil {
		return nil, err
	}
	out, err := cmd.StdoutPipe()
	if err != nil {
		return nil, err
	}
	t0 := time.Now()
	if err := cmd.Start(); err != nil {
		return nil, fmt.Errorf("bench: %s: %w", role, err)
	}
	h := &helper{cmd: cmd, in: in, dec: json.NewDecoder(out), role: role}
	if err := h.send(cfg); err != nil {
		h.stop()
		return nil, err
	}
	if err := h.recv(answer); err != nil {
		h.stop()
		return nil, err
	}
	h.started = time.Since(t0)
	return h, nil
}

// helper is a helper process, as the bench sees it.
type helper struct {
	role    string
	cmd     *exec.Cmd
	in      io.WriteCloser
	dec     *json.Decoder
	started time.Duration // from start to its first answer
}

func (h *helper) pid() int { return h.cmd.Process.Pid }

func (h *helper) send(v any) error {
	b, err := json.Marshal(v)
	if err != nil {
		return err
	}
	if _, err := h.in.Write(append(b, '\n')); err != nil {
		return fmt.Errorf("bench: %s: %w", h.role, err)
	}
	return nil
}

// recv reads the helper's next line into v; a line {"error": "…"} is
// returned as an error.
func (h *helper) recv(v any) error {
	var raw json.RawMessage
	if err := h.dec.Decode(&raw); err != nil {
		return fmt.Errorf("bench: %s: %w", h.role, err)
	}
	var e struct{ Error string }
	if json.Unmarshal(raw, &e) == nil && e.Error != "" {
		return fmt.Errorf("bench: %s: %s", h.role, e.Error)
	}
	if v == nil {
		return nil
	}
	return json.Unmarshal(raw, v)
}

// stop closes the helper's standard input and waits for it to end,
// killing it if it has not within 10 seconds.
func (h *helper) stop() {
	h.in.Close()
	done := make(chan struct{})
	go func() { h.cmd.Wait(); close(done) }()
	select {
	case <-done:
	case <-time.After(10 * time.Second):
		h.cmd.Process.Kill()
		<-done
	}
}

// helperIO is a helper's side of the conversation.
type helperIO struct {
	dec *json.Decoder
	enc *json.Encoder
}

func newHelperIO(in io.Reader, out io.Writer) *helperIO {
	return &helperIO{dec: json.NewDecoder(in), enc: json.NewEncoder(out)}
}

// fail tells the bench what went wrong and returns err.
func (h *helperIO) fail(err error) error {
	h.enc.Encode(map[string]string{"error": err.Error()})
	return err
}
