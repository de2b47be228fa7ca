package files

import (
	"errors"
	"fmt"
	"io/fs"
	"strings"

	"agentd/internal/diff"
	"agentd/internal/tool"
	"agentd/internal/workspace"
)

// change is what a writing call will do to one file, worked out before
// anything is written: the preview shows it, the call applies it.
type change struct {
	path     string
	old, new string
	existed  bool // old is the file's content; false: the file is created
	delete   bool
}

// plan is the changes of one call, all checked, none applied.
type plan []change

// current reads rel for a change: its text, or existed false when there is
// no such file.
func (f *files) current(w *workspace.Workspace, rel string) (text string, existed bool, err error) {
	data, err := w.ReadFile(rel, f.o.MaxFileBytes)
	if errors.Is(err, fs.ErrNotExist) {
		return "", false, nil
	}
	if err != nil {
		return "", false, err
	}
	if err := workspace.CheckText(data); err != nil {
		return "", true, fmt.Errorf("%s: %w", rel, err)
	}
	return string(data), true, nil
}

// apply writes the plan's files. Each file is replaced atomically; a
// failure part way leaves the files before it changed, and says so.
func (p plan) apply(w *workspace.Workspace) error {
	for i, c := range p {
		var err error
		if c.delete {
			err = w.Remove(c.path)
		} else {
			err = w.WriteFile(c.path, []byte(c.new))
		}
		if err != nil {
			if i > 0 {
				return fmt.Errorf("%w (the files before it were changed: %s)", err, strings.Join(p.paths()[:i], ", "))
			}
			return err
		}
	}
	return nil
}

// paths are the plan's paths as a card or a result shows them
// (tool.Visible).
func (p plan) paths() []string {
	out := make([]string, len(p))
	for i, c := range p {
		out[i] = tool.Visible(c.path)
	}
	return out
}

// unified is the plan's diff, file after file.
func (p plan) unified() string {
	var sb strings.Builder
	for _, c := range p {
		oldPath, newPath := tool.Visible(c.path), tool.Visible(c.path)
		if !c.existed {
			oldPath = ""
		}
		if c.delete {
			newPath = ""
		}
		sb.WriteString(diff.Unified(oldPath, newPath, c.old, c.new))
	}
	return sb.String()
}

// card is the approval card of the plan: its paths and its diff, capped
// at CardDiffBytes. Writes offer no "always allow this exact call".
func (p plan) card(title string) tool.Card {
	d := p.unified()
	omitted := 0
	if len(d) > CardDiffBytes {
		cut := strings.LastIndexByte(d[:CardDiffBytes], '\n') + 1
		omitted = len(d) - cut
		d = d[:cut]
	}
	return tool.Card{Kind: tool.CardDiff, Title: title, Paths: p.paths(), Diff: d, DiffOmitted: omitted}
}

// checkNew refuses a file the plan would create under a name holding
// control characters: a line break or an escape in a name can make a
// card, a listing or a grep result read other than it is.
func (p plan) checkNew() error {
	for _, c := range p {
		if !c.existed && !c.delete && strings.IndexFunc(c.path, tool.IsControl) >= 0 {
			return fmt.Errorf("%w: %s: a file is not created under a name with control characters (line breaks, tabs, escapes, bidirectional controls); choose another name", ErrArgs, tool.Visible(c.path))
		}
	}
	return nil
}

// shown is the change's path as a card or a result shows it.
func (c *change) shown() string { return tool.Visible(c.path) }

// counts is "+added −removed" lines of a change.
func (c *change) counts() string {
	add, del := diff.Count(c.old, c.new)
	return fmt.Sprintf("+%d −%d", add, del)
}
