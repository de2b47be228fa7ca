package files

import (
	"context"
	"fmt"
	"strings"

	"agentd/internal/tool"
	"agentd/internal/workspace"
)

type writeFile struct{ *files }

func (*writeFile) Spec() tool.Spec {
	return tool.Spec{
		Name: "write_file",
		Description: "Writes a text file of the workspace whole, creating it and its folders if missing, replacing it if not. " +
			"To change part of a file, use edit_file or apply_patch.",
		InputSchema: schema(`"path":{"type":"string","description":"The file, relative to the workspace."},`+
			`"content":{"type":"string","description":"The whole new content."}`, "path", "content"),
		Idempotent: true,
		AskFirst:   true,
		OptIn:      true,
	}
}

type writeArgs struct {
	Path    string `json:"path"`
	Content string `json:"content"`
}

func (t *writeFile) plan(c *tool.Call) (*workspace.Workspace, plan, error) {
	var a writeArgs
	w, err := t.open("write_file", c, &a)
	if err != nil {
		return nil, nil, err
	}
	p, err := workspace.Clean(a.Path)
	if err != nil {
		return nil, nil, fmt.Errorf("write_file: %w", err)
	}
	if int64(len(a.Content)) > t.o.MaxFileBytes {
		return nil, nil, fmt.Errorf("write_file: %w: content is %d bytes, at most %d", ErrArgs, len(a.Content), t.o.MaxFileBytes)
	}
	old, existed, err := t.current(w, p)
	if err != nil && !existed {
		return nil, nil, fmt.Errorf("write_file: %w", err)
	}
	// a binary file may be replaced by text; its old content is not shown
	pl := plan{{path: p, old: old, new: a.Content, existed: existed}}
	if err := pl.checkNew(); err != nil {
		return nil, nil, fmt.Errorf("write_file: %w", err)
	}
	return w, pl, nil
}

func (t *writeFile) Preview(_ context.Context, c *tool.Call) (tool.Card, error) {
	_, p, err := t.plan(c)
	if err != nil {
		return tool.Card{}, err
	}
	verb := "Create"
	if p[0].existed {
		verb = "Replace"
	}
	return p.card(fmt.Sprintf("%s %s (%s)", verb, p[0].shown(), p[0].counts())), nil
}

func (t *writeFile) Call(_ context.Context, c *tool.Call) (tool.Result, error) {
	w, p, err := t.plan(c)
	if err != nil {
		return tool.Result{}, err
	}
	if err := p.apply(w); err != nil {
		return tool.Result{}, fmt.Errorf("write_file: %w", err)
	}
	verb := "created"
	if p[0].existed {
		verb = "replaced"
	}
	return tool.Result{Output: fmt.Sprintf("%s %s (%d bytes, %d lines)", verb, p[0].shown(), len(p[0].new), lineCount(p[0].new))}, nil
}

func lineCount(s string) int {
	n := strings.Count(s, "\n")
	if s != "" && !strings.HasSuffix(s, "\n") {
		n++
	}
	return n
}

type editFile struct{ *files }

func (*editFile) Spec() tool.Spec {
	return tool.Spec{
		Name: "edit_file",
		Description: "Replaces text in a file of the workspace: old must occur exactly once (copy it from the file, " +
			"with its indentation and a few lines around it to make it unique), or set replace_all to replace every occurrence.",
		InputSchema: schema(`"path":{"type":"string","description":"The file, relative to the workspace."},`+
			`"old":{"type":"string","description":"The exact text to replace."},`+
			`"new":{"type":"string","description":"The text to put in its place."},`+
			`"replace_all":{"type":"boolean","description":"Replace every occurrence. Default false."}`, "path", "old", "new"),
		AskFirst: true,
		OptIn:    true,
	}
}

type editArgs struct {
	Path       string `json:"path"`
	Old        string `json:"old"`
	New        string `json:"new"`
	ReplaceAll bool   `json:"replace_all"`
}

// plan reads the file and replaces old, refusing an edit that does not
// say exactly what it changes.
func (t *editFile) plan(c *tool.Call) (*workspace.Workspace, plan, []int, error) {
	var a editArgs
	w, err := t.open("edit_file", c, &a)
	if err != nil {
		return nil, nil, nil, err
	}
	p, err := workspace.Clean(a.Path)
	if err != nil {
		return nil, nil, nil, fmt.Errorf("edit_file: %w", err)
	}
	switch {
	case a.Old == "":
		return nil, nil, nil, fmt.Errorf("edit_file: %w: old is empty (to create a file, use write_file)", ErrArgs)
	case a.Old == a.New:
		return nil, nil, nil, fmt.Errorf("edit_file: %w: old and new are the same", ErrArgs)
	}
	text, existed, err := t.current(w, p)
	if err == nil && !existed {
		err = fmt.Errorf("%s: no such file (to create it, use write_file)", p)
	}
	if err != nil {
		return nil, nil, nil, fmt.Errorf("edit_file: %w", err)
	}
	at := occurrences(text, a.Old)
	switch {
	case len(at) == 0:
		return nil, nil, nil, fmt.Errorf("edit_file: %w", noMatch(p, text, a.Old))
	case len(at) > 1 && !a.ReplaceAll:
		return nil, nil, nil, fmt.Errorf("edit_file: %w", manyMatches(p, text, at))
	}
	n := 1
	if a.ReplaceAll {
		n = -1
	}
	updated := strings.Replace(text, a.Old, a.New, n)
	if int64(len(updated)) > t.o.MaxFileBytes {
		return nil, nil, nil, fmt.Errorf("edit_file: %w: the file would be %d bytes, at most %d", ErrArgs, len(updated), t.o.MaxFileBytes)
	}
	return w, plan{{path: p, old: text, new: updated, existed: true}}, lineNumbers(text, at), nil
}

func (t *editFile) Preview(_ context.Context, c *tool.Call) (tool.Card, error) {
	_, p, _, err := t.plan(c)
	if err != nil {
		return tool.Card{}, err
	}
	return p.card(fmt.Sprintf("Edit %s (%s)", p[0].shown(), p[0].counts())), nil
}

func (t *editFile) Call(_ context.Context, c *tool.Call) (tool.Result, error) {
	w, p, lines, err := t.plan(c)
	if err != nil {
		return tool.Result{}, err
	}
	if err := p.apply(w); err != nil {
		return tool.Result{}, fmt.Errorf("edit_file: %w", err)
	}
	what := "1 occurrence at line"
	if len(lines) > 1 {
		what = fmt.Sprintf("%d occurrences at lines", len(lines))
	}
	return tool.Result{Output: fmt.Sprintf("edited %s: replaced %s %s", p[0].shown(), what, joinInts(lines))}, nil
}
