// Package command is agentd's slash commands: a `command` extension row
// (/standup [team]) names typed arguments, a prompt template they fill,
// the agent that answers and a budget. A Router holds the active commands;
// every chat surface asks it what a line that starts with "/" means (the
// gateway's message submission, which the API, the console, `agentd chat`
// and `agentd send` all go through), so a command behaves the same
// everywhere.
//
// A command whose agent is not the session's runs in the command agent's
// own session keyed by the caller's session (see Route), so that the
// caller's conversation is not given to another agent and a second use of
// the command continues the first.
package command

import (
	"bytes"
	_ "embed"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"strconv"
	"strings"
	"time"
	"unicode"

	"agentd/internal/agent"
)

// Sentinel errors.
var (
	// ErrUsage: a command's arguments are missing or invalid; the error
	// says which and how the command is used. No turn starts.
	ErrUsage = errors.New("bad command")
	// ErrInvalid: a command row's spec does not decode.
	ErrInvalid = errors.New("invalid command")
)

// TypeName is the extension type of commands.
const TypeName = "command"

//go:embed schema.json
var schemaJSON []byte

// Schema is the JSON Schema of a command row's spec.
func Schema() json.RawMessage { return schemaJSON }

// Argument types.
const (
	String = "string"
	Number = "number"
	Enum   = "enum"
)

// Spec is a command row's spec.
type Spec struct {
	// Description is the line /help shows.
	Description string     `json:"description,omitempty"`
	Arguments   []Argument `json:"arguments,omitempty"`
	// Prompt is the text submitted, with {{name}} replaced by each
	// argument's value (package prompt).
	Prompt string `json:"prompt"`
	// Agent answers; "" for the agent of the session the command is typed
	// in.
	Agent string `json:"agent,omitempty"`
	// Budget tightens the agent's budgets for the command's turn.
	Budget *Budget `json:"budget,omitempty"`
	// Silent logs the prompt as a system message for the session's next
	// turn without starting one.
	Silent bool `json:"silent,omitempty"`
}

// Argument is one typed argument of a command.
type Argument struct {
	Name string `json:"name"`
	// Type is String (the default), Number or Enum (one of Values).
	Type     string   `json:"type,omitempty"`
	Values   []string `json:"values,omitempty"`
	Required bool     `json:"required,omitempty"`
	// Default is the value when the argument is left out: a string, or a
	// number for a Number.
	Default any `json:"default,omitempty"`
	// Rest lets the last argument take the rest of the line, spaces and
	// all.
	Rest        bool   `json:"rest,omitempty"`
	Description string `json:"description,omitempty"`
}

// Budget is a command's or a job's budget for its turn; each limit set
// tightens the agent's own (engine.Tighter).
type Budget struct {
	MaxSteps        int     `json:"max_steps,omitempty"`
	MaxOutputTokens int     `json:"max_output_tokens,omitempty"`
	MaxUSD          float64 `json:"max_usd,omitempty"`
	// MaxWallTime is a Go duration ("90s", "5m").
	MaxWallTime string `json:"max_wall_time,omitempty"`
}

// Budgets returns b as an agent's budgets; nil for a nil b.
func (b *Budget) Budgets() (*agent.Budgets, error) {
	if b == nil {
		return nil, nil
	}
	out := &agent.Budgets{MaxSteps: b.MaxSteps, MaxOutputTokens: b.MaxOutputTokens, MaxUSDPerTurn: b.MaxUSD}
	if b.MaxWallTime != "" {
		d, err := time.ParseDuration(b.MaxWallTime)
		if err != nil || d <= 0 {
			return nil, fmt.Errorf("max_wall_time: want a positive duration such as 90s or 5m, not %q", b.MaxWallTime)
		}
		out.MaxWallTime = agent.Duration(d)
	}
	return out, nil
}

// Decode decodes a spec (already valid against Schema): unknown fields
// are refused.
func Decode(raw json.RawMessage) (*Spec, error) {
	var s Spec
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.DisallowUnknownFields()
	dec.UseNumber()
	if err := dec.Decode(&s); err != nil {
		return nil, fmt.Errorf("%w: %w", ErrInvalid, err)
	}
	return &s, nil
}

// kind is the argument's type, String when left out.
func (a *Argument) kind() string {
	if a.Type == "" {
		return String
	}
	return a.Type
}

// defaultText is the argument's default as text, and whether it has one.
func (a *Argument) defaultText() (string, bool) {
	switch v := a.Default.(type) {
	case nil:
		return "", false
	case string:
		return v, true
	case json.Number:
		return v.String(), true
	case float64:
		return strconv.FormatFloat(v, 'f', -1, 64), true
	}
	return fmt.Sprint(a.Default), true
}

// check returns why value is not a value of the argument, or "".
func (a *Argument) check(value string) string {
	switch a.kind() {
	case Number:
		f, err := strconv.ParseFloat(value, 64)
		if err != nil || math.IsInf(f, 0) || math.IsNaN(f) {
			return fmt.Sprintf("%s must be a number, not %q", a.Name, value)
		}
	case Enum:
		for _, v := range a.Values {
			if v == value {
				return ""
			}
		}
		return fmt.Sprintf("%s must be one of %s, not %q", a.Name, strings.Join(a.Values, ", "), value)
	}
	return ""
}

// Usage is how the command is used: "/standup <team> [days]".
func Usage(name string, s *Spec) string { return usage("/"+name, s) }

// usage is how the command is used, typed as said ("/standup" or
// "!standup").
func usage(said string, s *Spec) string {
	var b strings.Builder
	b.WriteString(said)
	for _, a := range s.Arguments {
		n := a.Name
		if a.kind() == Enum {
			n = strings.Join(a.Values, "|")
		}
		if a.Rest {
			n += "…"
		}
		if a.Required {
			fmt.Fprintf(&b, " <%s>", n)
		} else {
			fmt.Fprintf(&b, " [%s]", n)
		}
	}
	return b.String()
}

// Args parses a command's argument text into each argument's value (its
// default when left out): words separated by spaces, the last argument
// taking the rest of the line when it is a Rest one. A missing required
// argument, a value of the wrong type or a word too many is an ErrUsage
// naming it, with the command's usage.
func Args(name string, s *Spec, text string) (map[string]string, error) {
	return args("/"+name, s, text)
}

// args is Args for a command typed as said ("/standup" or "!standup"),
// which its errors name.
func args(said string, s *Spec, text string) (map[string]string, error) {
	out := map[string]string{}
	rest := strings.TrimFunc(text, unicode.IsSpace)
	for i, a := range s.Arguments {
		var word string
		if a.Rest && i == len(s.Arguments)-1 {
			word, rest = rest, ""
		} else {
			word, rest = cutWord(rest)
		}
		if word == "" {
			if d, ok := a.defaultText(); ok {
				out[a.Name] = d
				continue
			}
			if a.Required {
				return nil, usageErr(said, s, "missing argument "+a.Name)
			}
			out[a.Name] = ""
			continue
		}
		if why := a.check(word); why != "" {
			return nil, usageErr(said, s, why)
		}
		out[a.Name] = word
	}
	if rest != "" {
		return nil, usageErr(said, s, fmt.Sprintf("unexpected %q", rest))
	}
	return out, nil
}

// cutWord splits s, which starts with no space, at its first space.
func cutWord(s string) (word, rest string) {
	i := strings.IndexFunc(s, unicode.IsSpace)
	if i < 0 {
		return s, ""
	}
	return s[:i], strings.TrimLeftFunc(s[i:], unicode.IsSpace)
}

func usageErr(said string, s *Spec, why string) error {
	return fmt.Errorf("%w: %s: %s; usage: %s", ErrUsage, said, why, usage(said, s))
}
