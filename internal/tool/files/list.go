package files

import (
	"context"
	"fmt"
	"io/fs"
	"os"
	"path"
	"sort"
	"strings"
	"sync"

	"agentd/internal/tool"
	"agentd/internal/workspace"
)

type listDir struct{ *files }

func (*listDir) Spec() tool.Spec {
	return tool.Spec{
		Name:        "list_dir",
		Description: "Lists a folder of the workspace: its folders first, then its files with their sizes and its symlinks with their targets.",
		InputSchema: schema(`"path":{"type":"string","description":"The folder, relative to the workspace. Default: the workspace itself."}`),
		ReadOnly:    true,
		OptIn:       true,
	}
}

type listArgs struct {
	Path string `json:"path"`
}

func (t *listDir) Call(_ context.Context, c *tool.Call) (tool.Result, error) {
	var a listArgs
	w, err := t.open("list_dir", c, &a)
	if err != nil {
		return tool.Result{}, err
	}
	rel, err := workspace.Clean(a.Path)
	if err == nil {
		_, err = w.HostDir(rel) // a directory, inside
	}
	if err != nil {
		return tool.Result{}, fmt.Errorf("list_dir: %w", err)
	}
	f, err := w.Root().Open(rel)
	if err != nil {
		return tool.Result{}, fmt.Errorf("list_dir: %s: %w", rel, err)
	}
	ents, err := f.ReadDir(-1)
	f.Close()
	if err != nil {
		return tool.Result{}, fmt.Errorf("list_dir: %s: %w", rel, err)
	}
	sort.Slice(ents, func(i, j int) bool {
		if di, dj := ents[i].IsDir(), ents[j].IsDir(); di != dj {
			return di
		}
		return ents[i].Name() < ents[j].Name()
	})
	return tool.Result{Output: t.format(w, rel, ents)}, nil
}

func (t *listDir) format(w *workspace.Workspace, rel string, ents []fs.DirEntry) string {
	dirs := 0
	for _, e := range ents {
		if e.IsDir() {
			dirs++
		}
	}
	var sb strings.Builder
	name := tool.Visible(rel + "/")
	if rel == "." {
		name = "the workspace"
	}
	fmt.Fprintf(&sb, "%s: %d folders, %d other entries\n", name, dirs, len(ents)-dirs)
	for i, e := range ents {
		if i == t.o.MaxEntries {
			fmt.Fprintf(&sb, "[%d more entries left out]\n", len(ents)-i)
			break
		}
		p := path.Join(rel, e.Name())
		name := tool.Visible(e.Name())
		switch {
		case e.IsDir():
			fmt.Fprintf(&sb, "dir   %s\n", tool.Visible(e.Name()+"/"))
		case e.Type()&fs.ModeSymlink != 0:
			target, _ := w.Root().Readlink(p)
			fmt.Fprintf(&sb, "link  %s -> %s\n", name, tool.Visible(target))
		case e.Type().IsRegular():
			size := int64(-1)
			if fi, err := e.Info(); err == nil {
				size = fi.Size()
			}
			fmt.Fprintf(&sb, "file  %s  %d bytes\n", name, size)
		default:
			fmt.Fprintf(&sb, "other %s (%s)\n", name, e.Type())
		}
	}
	return sb.String()
}

type globTool struct{ *files }

func (*globTool) Spec() tool.Spec {
	return tool.Spec{
		Name: "glob",
		Description: "Finds the files and folders of the workspace whose paths match a pattern: * and ? within a name, " +
			"[abc] classes, ** for any number of folders (\"**/*.go\", \"src/**/test_*.py\"). Paths come sorted; folders end with /.",
		InputSchema: schema(`"pattern":{"type":"string","description":"The pattern, relative to the workspace."}`, "pattern"),
		ReadOnly:    true,
		OptIn:       true,
	}
}

type globArgs struct {
	Pattern string `json:"pattern"`
}

func (t *globTool) Call(ctx context.Context, c *tool.Call) (tool.Result, error) {
	var a globArgs
	w, err := t.open("glob", c, &a)
	if err != nil {
		return tool.Result{}, err
	}
	pat, err := workspace.Clean(a.Pattern)
	if err == nil {
		err = checkPattern(pat)
	}
	if err != nil {
		return tool.Result{}, fmt.Errorf("glob: %w", err)
	}
	var (
		mu  sync.Mutex
		hit []string
	)
	add := func(p string) {
		mu.Lock()
		hit = append(hit, p)
		mu.Unlock()
	}
	wk := &walk{
		workers: t.o.Workers,
		dir: func(rel string) {
			if matchGlob(pat, rel) {
				add(tool.Visible(rel + "/"))
			}
		},
		file: func(_ *os.Root, _, rel string, _ fs.DirEntry) bool {
			if matchGlob(pat, rel) {
				add(tool.Visible(rel))
			}
			return true
		},
	}
	if err := wk.run(ctx, w.Root(), staticPrefix(pat)); err != nil && ctx.Err() != nil {
		return tool.Result{}, fmt.Errorf("glob: %w", err)
	}
	sort.Strings(hit)
	if len(hit) == 0 {
		return tool.Result{Output: "no paths match " + tool.Visible(pat)}, nil
	}
	out := strings.Join(hit[:min(len(hit), t.o.MaxEntries)], "\n") + "\n"
	if len(hit) > t.o.MaxEntries {
		out += fmt.Sprintf("[%d more paths left out: narrow the pattern]\n", len(hit)-t.o.MaxEntries)
	}
	return tool.Result{Output: out}, nil
}

// checkPattern refuses a pattern path.Match cannot read.
func checkPattern(pat string) error {
	for seg := range strings.SplitSeq(pat, "/") {
		if _, err := path.Match(seg, ""); err != nil {
			return fmt.Errorf("%w: %q: %v", ErrArgs, pat, err)
		}
	}
	return nil
}

// staticPrefix is the folder of pat before its first wildcard: where a
// walk for it starts.
func staticPrefix(pat string) string {
	segs := strings.Split(pat, "/")
	i := 0
	for i < len(segs)-1 && !strings.ContainsAny(segs[i], `*?[\`) {
		i++
	}
	if i == 0 {
		return "."
	}
	return strings.Join(segs[:i], "/")
}

// matchGlob matches a slash-separated path against pat, whose "**"
// segments match any number of folders.
func matchGlob(pat, name string) bool {
	return matchSegs(strings.Split(pat, "/"), strings.Split(name, "/"))
}

func matchSegs(p, n []string) bool {
	for len(p) > 0 {
		if p[0] == "**" {
			for len(p) > 0 && p[0] == "**" {
				p = p[1:]
			}
			if len(p) == 0 {
				return true
			}
			for i := range len(n) + 1 {
				if matchSegs(p, n[i:]) {
					return true
				}
			}
			return false
		}
		if len(n) == 0 {
			return false
		}
		if ok, _ := path.Match(p[0], n[0]); !ok {
			return false
		}
		p, n = p[1:], n[1:]
	}
	return len(n) == 0
}
