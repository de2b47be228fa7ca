// Package job is agentd's jobs: a `job` extension row names an agent, a
// prompt template, triggers, a budget (stricter than chat's by default),
// a session policy, a concurrency policy and where the output goes. The
// Runner keeps the active jobs and runs one on demand (`agentd ext run
// job/NAME`, `agentd jobs run`, POST /v1/jobs/{name}/run); the
// Scheduler fires the time triggers (cron, every, at) and heartbeats
// (heartbeat.go) through the same Runner, and, while it leads, watches
// the directories of watch triggers (watch.go); Hook fires a webhook
// trigger (webhook.go); the end of a run fires the jobs chained after
// its job (chain.go).
//
// Every run is recorded in the store's job runs (store.JobRunStore)
// before its input is submitted. A run is an input to the job's agent in
// its own session ("<agent>/job:<name>:<run>") or the job's named one,
// with an idempotency key; its turn is the runtime's like any other, so
// a run that a crash interrupts is resumed by the runtime, and Recover
// resubmits (a no-op for an input accepted before) and finishes every
// run left open. A scheduled fire's run id and key come from its
// scheduled time, so it is taken once however often it is fired. A run's
// delivery (its output, or its failure alert) is recorded on the run
// once made or given up (deliver.go); Recover delivers a run that ended
// without that record, so a delivery is made at least once, a webhook's
// with an id its receiver can drop a repeat by, and recorded once. A
// webhook delivery's id and its request's MAC are recorded on its run,
// each unique per job in the store, so that it is taken once however
// many nodes receive it and whatever delivery id a copy of it carries.
package job

import (
	"bytes"
	_ "embed"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"time"

	"agentd/internal/agent"
	"agentd/internal/command"
	"agentd/internal/engine"
)

// Sentinel errors.
var (
	// ErrNotFound: no active job has that name.
	ErrNotFound = errors.New("no such job")
	// ErrRunning: the job's concurrency is skip and a run of it is still
	// running.
	ErrRunning = errors.New("job already running")
	// ErrTaken: a scheduled fire was taken before (by this node before a
	// restart, or by another node): it runs once, and not again.
	ErrTaken = errors.New("job fire already taken")
	// ErrInvalid: a job row's spec does not decode.
	ErrInvalid = errors.New("invalid job")
)

// TypeName is the extension type of jobs.
const TypeName = "job"

//go:embed schema.json
var schemaJSON []byte

// Schema is the JSON Schema of a job row's spec.
func Schema() json.RawMessage { return schemaJSON }

// Concurrency policies: what a run does while another run of its job is
// running.
const (
	Skip  = "skip"  // it is refused (ErrRunning); the default
	Queue = "queue" // it waits for the other to end
	Allow = "allow" // it runs too
)

// Spec is a job row's spec.
type Spec struct {
	Description string `json:"description,omitempty"`
	Agent       string `json:"agent"`
	// Prompt is the run's input, a template (package prompt) of the
	// variables Vars lists.
	Prompt   string          `json:"prompt"`
	Triggers []Trigger       `json:"triggers,omitempty"`
	Budget   *command.Budget `json:"budget,omitempty"`
	// Session is the key of the agent's session every run goes to; ""
	// gives each run a fresh one, "job:<name>:<run>".
	Session     string    `json:"session,omitempty"`
	Concurrency string    `json:"concurrency,omitempty"`
	Deliver     *Delivery `json:"deliver,omitempty"`
	// OnFailure is where a failed run is reported.
	OnFailure *Delivery `json:"on_failure,omitempty"`
}

// Trigger is one way a job is fired; exactly one of its kinds is set
// (cron with tz and catch_up, at, every, watch, webhook, chain,
// heartbeat). Triggers are checked when the row is saved; a scheduler
// fires them.
type Trigger struct {
	Cron      string     `json:"cron,omitempty"` // 5 fields, minute precision
	TZ        string     `json:"tz,omitempty"`   // an IANA zone; default UTC
	At        string     `json:"at,omitempty"`   // RFC 3339
	Every     string     `json:"every,omitempty"`
	CatchUp   string     `json:"catch_up,omitempty"` // skip, once (default), all
	Watch     *Watch     `json:"watch,omitempty"`
	Webhook   *Webhook   `json:"webhook,omitempty"`
	Chain     *Chain     `json:"chain,omitempty"`
	Heartbeat *Heartbeat `json:"heartbeat,omitempty"`
}

// Watch fires on file-system changes under Path (watch.go).
type Watch struct {
	Path     string   `json:"path"`
	Glob     string   `json:"glob,omitempty"`
	Events   []string `json:"events,omitempty"`
	Debounce string   `json:"debounce,omitempty"`
}

// Webhook fires on a signed POST /hooks/{name} (webhook.go); its secret
// is read from the environment variable SecretEnv or the reference Secret
// (${secret:NAME}, ${env:NAME}), one of them, never stored in the row.
type Webhook struct {
	SecretEnv string `json:"secret_env,omitempty"`
	Secret    string `json:"secret,omitempty"`
}

// Chain fires after another job's run ends (chain.go).
type Chain struct {
	After string `json:"after"`
	On    string `json:"on,omitempty"` // success (default), failure, either
}

// Heartbeat is a periodic turn in the agent's main session
// (heartbeat.go): Prompt, or the file PromptFile read at each fire, or
// else the job's prompt; none during QuietHours, read in TZ.
type Heartbeat struct {
	Every      string `json:"every"`
	Prompt     string `json:"prompt,omitempty"`
	PromptFile string `json:"prompt_file,omitempty"`
	QuietHours string `json:"quiet_hours,omitempty"` // "22:00-07:00"
	TZ         string `json:"tz,omitempty"`          // an IANA zone; default UTC
}

// Delivery is where a run's output (or its failure) goes: a session (as
// a system message, Silent for the session's next turn without starting
// one), a webhook URL (POSTed as JSON through the SSRF guard), or None.
type Delivery struct {
	Session string `json:"session,omitempty"`
	Silent  bool   `json:"silent,omitempty"`
	Webhook string `json:"webhook,omitempty"`
	None    bool   `json:"none,omitempty"`
}

// DefaultBudget is a job's budget where its row sets none: stricter than
// chat's (agent.DefaultMaxSteps), since nobody watches a job's turn.
var DefaultBudget = agent.Budgets{MaxSteps: 10, MaxWallTime: agent.Duration(10 * time.Minute)}

// Budgets returns the budgets that tighten the agent's for a run: the
// row's, with DefaultBudget's steps and wall time where it sets none.
func (s *Spec) Budgets() (*agent.Budgets, error) {
	b, err := s.Budget.Budgets()
	if err != nil {
		return nil, err
	}
	if b == nil {
		b = &agent.Budgets{}
	}
	if b.MaxSteps == 0 {
		b.MaxSteps = DefaultBudget.MaxSteps
	}
	if b.MaxWallTime == 0 {
		b.MaxWallTime = DefaultBudget.MaxWallTime
	}
	return b, nil
}

// options returns the lifecycle options of a run's input.
func (s *Spec) options() (json.RawMessage, error) {
	b, err := s.Budgets()
	if err != nil {
		return nil, err
	}
	return json.Marshal(engine.LifecycleOptions{Budgets: b})
}

// Decode decodes a spec (already valid against Schema): unknown fields
// are refused.
func Decode(raw json.RawMessage) (*Spec, error) {
	var s Spec
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&s); err != nil {
		return nil, fmt.Errorf("%w: %w", ErrInvalid, err)
	}
	return &s, nil
}

// Vars are the variables a job's prompt may refer to; payload.KEY refers
// to one value of the payload.
var Vars = []string{"job", "run", "fired_at", "payload", "previous_output", "parent_output"}

// knownVar reports whether a prompt may refer to name.
func knownVar(name string) bool {
	if strings.HasPrefix(name, "payload.") {
		return true
	}
	for _, v := range Vars {
		if v == name {
			return true
		}
	}
	return false
}

// Fire is what one run of a job is given: its payload (the --var values,
// a webhook's body, the changed paths), when it fired, the job's previous
// run's output and a chain parent's.
type Fire struct {
	Payload map[string]string
	// Body is a webhook's request body, the payload instead of Payload:
	// {{payload}} is it as sent, {{payload.KEY}} a top-level field of it
	// if it is a JSON object.
	Body []byte
	// Delivery is a webhook delivery's id, MAC its request's MAC
	// (lowercase hex): a second run of the job with the same one of
	// either is refused (ErrDelivered).
	Delivery string
	MAC      string
	// At is the scheduled time (zero: now); Trigger what fired it
	// (store.TriggerCron, …; "" is store.TriggerManual).
	At      time.Time
	Trigger string
	// Previous is filled by the Runner.
	Previous string
	// Parent is a chain parent's output (its result is Body).
	Parent string
	// tag is the tag of the run's id when it is derived from something
	// else than the time (a chain parent's run, a heartbeat): the same
	// fire then has the same id on every node.
	tag string
}

// vars returns the variables of a run.
func (f *Fire) vars(job, run string) func(string) (string, bool) {
	return func(name string) (string, bool) {
		if k, ok := strings.CutPrefix(name, "payload."); ok {
			if f.Body != nil {
				return bodyField(f.Body, k), true
			}
			return f.Payload[k], true
		}
		switch name {
		case "job":
			return job, true
		case "run":
			return run, true
		case "fired_at":
			return f.At.UTC().Format(time.RFC3339), true
		case "payload":
			if f.Body != nil {
				return string(f.Body), true
			}
			if len(f.Payload) == 0 {
				return "{}", true
			}
			b, _ := json.Marshal(f.Payload) // keys sorted
			return string(b), true
		case "previous_output":
			return f.Previous, true
		case "parent_output":
			return f.Parent, true
		}
		return "", false
	}
}
