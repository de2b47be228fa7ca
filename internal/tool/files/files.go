// Package files is the file tools of an agent's workspace: read_file,
// write_file, edit_file, apply_patch, list_dir, glob and grep. Every path
// is relative to the calling agent's workspace and goes through its
// os.Root (package workspace), so no call reads or writes outside it. The
// tools that change files are AskFirst and say what they will change
// (tool.Previewer: a card with the diff) before anyone decides.
package files

import (
	"errors"
	"fmt"
	"runtime"

	"agentd/internal/tool"
	"agentd/internal/workspace"
)

// Workspaces finds the workspace of the calling agent.
type Workspaces interface {
	For(agentID string) (*workspace.Workspace, error)
}

// Options tune the file tools. A nil *Options takes every default.
type Options struct {
	// MaxReadBytes is the most text read_file returns in one call; the
	// rest is left for another call with an offset. Default 256 KiB.
	MaxReadBytes int
	// MaxFileBytes is the largest file written, edited, patched or
	// searched by grep. Default 16 MiB.
	MaxFileBytes int64
	// GrepMaxResults is how many matching lines grep returns when the call
	// does not say. Default 200.
	GrepMaxResults int
	// MaxEntries caps what list_dir and glob return. Default 1000.
	MaxEntries int
	// Workers is how many directories and files grep and glob read at
	// once. Default 2 × GOMAXPROCS, at least 4.
	Workers int
}

// Defaults of Options.
const (
	DefaultMaxReadBytes   = 256 << 10
	DefaultMaxFileBytes   = 16 << 20
	DefaultGrepMaxResults = 200
	DefaultMaxEntries     = 1000
	// CardDiffBytes is the most of a diff an approval card carries; the
	// rest is counted in Card.DiffOmitted.
	CardDiffBytes = 64 << 10
)

func (o *Options) withDefaults() Options {
	var r Options
	if o != nil {
		r = *o
	}
	if r.MaxReadBytes <= 0 {
		r.MaxReadBytes = DefaultMaxReadBytes
	}
	if r.MaxFileBytes <= 0 {
		r.MaxFileBytes = DefaultMaxFileBytes
	}
	if r.GrepMaxResults <= 0 {
		r.GrepMaxResults = DefaultGrepMaxResults
	}
	if r.MaxEntries <= 0 {
		r.MaxEntries = DefaultMaxEntries
	}
	if r.Workers <= 0 {
		r.Workers = max(4, 2*runtime.GOMAXPROCS(0))
	}
	return r
}

// ErrArgs is wrapped by the errors of a call whose arguments cannot be
// used as they are; the message says what to change.
var ErrArgs = errors.New("bad arguments")

// Tools returns the seven file tools over ws.
func Tools(ws Workspaces, o *Options) []tool.Tool {
	f := &files{ws: ws, o: o.withDefaults()}
	return []tool.Tool{
		&readFile{f}, &writeFile{f}, &editFile{f}, &applyPatch{f},
		&listDir{f}, &globTool{f}, &grepTool{f},
	}
}

// files is what the tools share.
type files struct {
	ws Workspaces
	o  Options
}

// open finds the calling agent's workspace and decodes the arguments.
func (f *files) open(name string, c *tool.Call, args any) (*workspace.Workspace, error) {
	if err := tool.DecodeArgs(c.Args, args); err != nil {
		return nil, fmt.Errorf("%s: %w: %v", name, ErrArgs, err)
	}
	w, err := f.ws.For(c.Agent)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", name, err)
	}
	return w, nil
}

// schema builds an object schema from its properties and required names.
func schema(props string, required ...string) []byte {
	req := "[]"
	if len(required) > 0 {
		req = `["` + joinQuoted(required) + `"]`
	}
	return []byte(`{"type":"object","properties":{` + props + `},"required":` + req + `,"additionalProperties":false}`)
}

func joinQuoted(xs []string) string {
	s := xs[0]
	for _, x := range xs[1:] {
		s += `","` + x
	}
	return s
}
