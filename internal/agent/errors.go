package agent

import (
	"errors"
	"fmt"
	"strings"
)

// Sentinel errors.
var (
	// ErrNotFound is returned by LoadDefinition when there is no file for
	// the agent.
	ErrNotFound = errors.New("agent not found")
	// ErrInvalidID is returned for an agent id that cannot name a file.
	ErrInvalidID = errors.New("invalid agent id")
)

// FieldError is one problem in a configuration file.
type FieldError struct {
	File  string // relative to the data directory, e.g. "agents/assistant.yaml"
	Line  int    // 1-based; 0 when the problem has no line (an unreadable file)
	Field string // dotted path, e.g. "model.params.temperature"; "" for the file as a whole
	Msg   string
}

// Error formats e as "file:line: field: msg".
func (e FieldError) Error() string {
	var b strings.Builder
	b.WriteString(e.File)
	if e.Line > 0 {
		fmt.Fprintf(&b, ":%d", e.Line)
	}
	b.WriteString(": ")
	if e.Field != "" {
		b.WriteString(e.Field)
		b.WriteString(": ")
	}
	b.WriteString(e.Msg)
	return b.String()
}

// ConfigError holds every problem found in one configuration file.
type ConfigError struct {
	Errors []FieldError
}

// Error prints one problem per line.
func (e *ConfigError) Error() string {
	lines := make([]string, len(e.Errors))
	for i, fe := range e.Errors {
		lines[i] = fe.Error()
	}
	return strings.Join(lines, "\n")
}
