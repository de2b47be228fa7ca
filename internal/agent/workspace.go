package agent

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
)

// ErrUnsafeWorkspace is wrapped by the error of a workspace setting that
// would give the file and exec tools the data directory: the agents'
// identity keys, the secrets, the store.
var ErrUnsafeWorkspace = errors.New("the workspace would hold agentd's data")

// WorkspaceIn returns the folder of d's workspace in the data directory
// dataDir: its workspace setting (a relative path is under dataDir), else
// workspace/<id>. A workspace that is the data directory, holds it, is
// workspace/ itself (every agent's workspace) or lies in the data
// directory outside workspace/ is refused with an error naming the
// setting; symlinks are resolved before the paths are compared, so a link
// does not get around it. The folder need not exist yet.
func (d *Definition) WorkspaceIn(dataDir string) (string, error) {
	dir := filepath.Join(dataDir, WorkspaceDir, d.ID)
	if d.Workspace != "" {
		dir = d.Workspace
		if !filepath.IsAbs(dir) {
			dir = filepath.Join(dataDir, dir)
		}
		dir = filepath.Clean(dir) // as compared: "link/.." is the folder the link is in
	}
	ws, data, root := resolved(dir), resolved(dataDir), resolved(filepath.Join(dataDir, WorkspaceDir))
	var why string
	switch {
	case ws == data:
		why = "is the data directory"
	case within(ws, data):
		why = "holds the data directory " + data
	case ws == root:
		why = "is " + WorkspaceDir + "/ itself, which holds every agent's workspace"
	case within(root, ws):
		return dir, nil
	case within(data, ws):
		why = "lies in the data directory outside " + WorkspaceDir + "/ (keys, secrets, the store)"
	default:
		return dir, nil
	}
	setting := "workspace " + fmt.Sprintf("%q", d.Workspace)
	if d.Workspace == "" {
		setting = "the default workspace"
	}
	if d.File != "" {
		setting = d.File + ": " + setting
	}
	return "", fmt.Errorf("%w: %s (%s) %s; give the agent a folder outside the data directory, or leave workspace out for %s/%s",
		ErrUnsafeWorkspace, setting, ws, why, WorkspaceDir, d.ID)
}

// within reports whether p lies inside dir (not dir itself); both clean
// and absolute.
func within(dir, p string) bool {
	rel, err := filepath.Rel(dir, p)
	return err == nil && rel != "." && rel != ".." && !strings.HasPrefix(rel, ".."+string(filepath.Separator))
}

// resolved is p made absolute with its symlinks resolved: those of its
// longest part that exists, a dangling symlink's target, and the rest
// (not made yet) as written.
func resolved(p string) string { return resolveLinks(p, 0) }

// maxLinks bounds the dangling symlinks resolveLinks follows, as the
// kernel's ELOOP does.
const maxLinks = 40

// resolveLinks is resolved; links counts the dangling symlinks followed
// so far.
func resolveLinks(p string, links int) string {
	p, err := filepath.Abs(p)
	if err != nil {
		return filepath.Clean(p)
	}
	var rest []string
	for {
		if r, err := filepath.EvalSymlinks(p); err == nil {
			return filepath.Join(append([]string{r}, rest...)...)
		}
		if t, err := os.Readlink(p); err == nil && links < maxLinks {
			if !filepath.IsAbs(t) {
				t = filepath.Join(resolveLinks(filepath.Dir(p), links+1), t)
			}
			return filepath.Join(append([]string{resolveLinks(t, links+1)}, rest...)...)
		}
		parent := filepath.Dir(p)
		if parent == p {
			return filepath.Join(append([]string{p}, rest...)...)
		}
		rest = append([]string{filepath.Base(p)}, rest...)
		p = parent
	}
}
