package tool

import (
	"context"
	"encoding/json"
	"time"
)

// Kinds of approval card (Card.Kind).
const (
	CardCommand = "command" // a command: Command, Dir, Sandbox
	CardDiff    = "diff"    // a change to files: Path, Diff
	CardURL     = "url"     // a request to the network: URL, Method
)

// Card is what a person sees before deciding a call that waits for
// approval: what will happen, in the words of the tool that knows. The
// engine records it with the approval request; the console, the CLI and
// the API show it. A tool without a card is shown by its arguments.
type Card struct {
	Kind  string `json:"kind"`
	Title string `json:"title"` // one line: "Run go test ./... in src/ (bwrap, no network)"

	// A command: its argv as it will run, the working directory relative
	// to the workspace ("" is its root), and the sandbox that holds it
	// ("bwrap, no network", "none"). An argument or a directory holding
	// control characters is shown as Visible quotes it.
	Command []string `json:"command,omitempty"`
	Dir     string   `json:"dir,omitempty"`
	Sandbox string   `json:"sandbox,omitempty"`
	Shell   bool     `json:"shell,omitempty"`
	// The input it is given (exec's stdin, a process write's data), its
	// control characters but line breaks and tabs escaped, cut past a
	// size the card says: InputOmitted bytes left out.
	Input        string `json:"input,omitempty"`
	InputOmitted int    `json:"input_omitted,omitempty"`

	// A change to files: the paths changed and the unified diff
	// (truncated past a size the card says: DiffOmitted bytes left out).
	Paths       []string `json:"paths,omitempty"`
	Diff        string   `json:"diff,omitempty"`
	DiffOmitted int      `json:"diff_omitted,omitempty"`

	// A request to the network.
	URL    string `json:"url,omitempty"`
	Method string `json:"method,omitempty"`

	// Exact is what "always allow this exact call" remembers: the
	// command line, the URL, the paths; "" means the tool offers no such
	// choice (only this once, or for the session).
	Exact string `json:"exact,omitempty"`
}

// Previewer is the optional ability of a tool to say what a call will do
// before it runs, for the approval card. Preview must not change
// anything; an error (a path outside the workspace, an edit that does not
// apply) fails the call before anyone is asked, as the call itself would.
type Previewer interface {
	Preview(ctx context.Context, c *Call) (Card, error)
}

// Inert is the optional ability of a tool some of whose calls change
// nothing and start nothing (process's poll and list): such a call runs
// without a person's approval when the Ask verdict comes from the tool's
// own AskFirst marking (Decision.Default), not from a tools.ask pattern.
type Inert interface {
	Inert(args json.RawMessage) bool
}

// Deadliner is the optional ability of a tool whose calls may run longer
// than the agent's tools.timeout (exec, bounded by exec.timeout): the
// registry gives a call of it Deadline(agent) when that is longer.
type Deadliner interface {
	Deadline(agentID string) time.Duration
}
