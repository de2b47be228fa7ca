package files

import (
	"context"
	"fmt"
	"strings"

	"agentd/internal/diff"
	"agentd/internal/tool"
	"agentd/internal/workspace"
)

type applyPatch struct{ *files }

func (*applyPatch) Spec() tool.Spec {
	return tool.Spec{
		Name: "apply_patch",
		Description: "Applies a unified diff (git diff's or diff -u's) to files of the workspace: several files, " +
			"new files (--- /dev/null) and deleted ones (+++ /dev/null). Every hunk is checked before any file is written: " +
			"all apply or none. Hunks may sit at other line numbers than their headers say; their lines must match exactly.",
		InputSchema: schema(`"patch":{"type":"string","description":"The unified diff, with ---/+++ headers and @@ hunks; paths relative to the workspace (a/ and b/ prefixes are removed)."}`, "patch"),
		AskFirst:    true,
		OptIn:       true,
	}
}

type patchArgs struct {
	Patch string `json:"patch"`
}

// plan parses the patch and applies every hunk in memory.
func (t *applyPatch) plan(c *tool.Call) (*workspace.Workspace, plan, error) {
	var a patchArgs
	w, err := t.open("apply_patch", c, &a)
	if err != nil {
		return nil, nil, err
	}
	fps, err := diff.Parse(a.Patch)
	if err != nil {
		return nil, nil, fmt.Errorf("apply_patch: %w", err)
	}
	var p plan
	index := map[string]int{} // a path's change in p, when patched twice
	for _, fp := range fps {
		ch, err := t.change(w, fp, p, index)
		if err != nil {
			return nil, nil, fmt.Errorf("apply_patch: %w", err)
		}
		if i, ok := index[ch.path]; ok {
			p[i].new, p[i].delete = ch.new, ch.delete
			continue
		}
		index[ch.path] = len(p)
		p = append(p, ch)
	}
	if err := p.checkNew(); err != nil {
		return nil, nil, fmt.Errorf("apply_patch: %w", err)
	}
	return w, p, nil
}

// target is the file a part of a patch changes. When its two names differ
// (diff -u x.orig x), it is the new one if it exists, else the old one,
// as patch does; both must be inside.
func (t *applyPatch) target(w *workspace.Workspace, fp *diff.File) (string, error) {
	path, err := workspace.Clean(fp.Path())
	if err != nil || fp.OldPath == "" || fp.NewPath == "" {
		return path, err
	}
	old, err := workspace.Clean(fp.OldPath)
	if err != nil || old == path {
		return path, err
	}
	if _, err := w.Stat(path); err != nil {
		if _, err := w.Stat(old); err == nil {
			return old, nil
		}
	}
	return path, nil
}

// change works out one file's part of the patch, on top of what earlier
// parts of the same patch did to it.
func (t *applyPatch) change(w *workspace.Workspace, fp *diff.File, p plan, index map[string]int) (change, error) {
	path, err := t.target(w, fp)
	if err != nil {
		return change{}, err
	}
	var text string
	var existed bool
	if i, ok := index[path]; ok {
		text, existed = p[i].new, !p[i].delete
	} else if text, existed, err = t.current(w, path); err != nil {
		return change{}, err
	}
	switch {
	case fp.OldPath == "" && existed:
		return change{}, fmt.Errorf("%s: the patch creates it but it exists", path)
	case fp.OldPath != "" && !existed:
		return change{}, fmt.Errorf("%s: no such file (a patch creating it has --- /dev/null)", path)
	}
	updated, err := diff.Apply(text, fp)
	if err != nil {
		return change{}, err
	}
	if int64(len(updated)) > t.o.MaxFileBytes {
		return change{}, fmt.Errorf("%s: would be %d bytes, at most %d", path, len(updated), t.o.MaxFileBytes)
	}
	ch := change{path: path, old: text, new: updated, existed: existed, delete: fp.NewPath == ""}
	if i, ok := index[path]; ok { // the first part's old content is the file's
		ch.old, ch.existed = p[i].old, p[i].existed
	}
	return ch, nil
}

func (t *applyPatch) Preview(_ context.Context, c *tool.Call) (tool.Card, error) {
	_, p, err := t.plan(c)
	if err != nil {
		return tool.Card{}, err
	}
	title := "Patch " + strings.Join(p.paths(), ", ")
	if len(p) > 3 {
		title = fmt.Sprintf("Patch %d files: %s, …", len(p), strings.Join(p.paths()[:3], ", "))
	}
	return p.card(title), nil
}

func (t *applyPatch) Call(_ context.Context, c *tool.Call) (tool.Result, error) {
	w, p, err := t.plan(c)
	if err != nil {
		return tool.Result{}, err
	}
	if err := p.apply(w); err != nil {
		return tool.Result{}, fmt.Errorf("apply_patch: %w", err)
	}
	var sb strings.Builder
	fmt.Fprintf(&sb, "patched %d file(s):\n", len(p))
	for _, ch := range p {
		switch {
		case ch.delete:
			fmt.Fprintf(&sb, "D %s\n", ch.shown())
		case !ch.existed:
			fmt.Fprintf(&sb, "A %s (%d lines)\n", ch.shown(), lineCount(ch.new))
		default:
			fmt.Fprintf(&sb, "M %s (%s)\n", ch.shown(), ch.counts())
		}
	}
	return tool.Result{Output: sb.String()}, nil
}
