package files

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path"
	"regexp"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"

	"agentd/internal/tool"
	"agentd/internal/workspace"
)

type grepTool struct{ *files }

func (*grepTool) Spec() tool.Spec {
	return tool.Spec{
		Name: "grep",
		Description: "Searches the text files of the workspace for a regular expression (RE2 syntax; ^ and $ match at line ends). " +
			"Results are path:line:text, context lines path-line-text; binary files and .git are skipped.",
		InputSchema: schema(`"pattern":{"type":"string","description":"The regular expression."},`+
			`"path":{"type":"string","description":"A folder or a file to search, relative to the workspace. Default: all of it."},`+
			`"glob":{"type":"string","description":"Only files matching this: a name pattern (\"*.go\") or, with a /, a path pattern (\"src/**/*.ts\")."},`+
			`"context":{"type":"integer","minimum":0,"maximum":20,"description":"Lines of context around each match. Default 0."},`+
			`"ignore_case":{"type":"boolean","description":"Match regardless of case."},`+
			`"max_results":{"type":"integer","minimum":1,"description":"The most matching lines returned. Default 200."}`, "pattern"),
		ReadOnly: true,
		OptIn:    true,
	}
}

type grepArgs struct {
	Pattern    string `json:"pattern"`
	Path       string `json:"path"`
	Glob       string `json:"glob"`
	Context    int    `json:"context"`
	IgnoreCase bool   `json:"ignore_case"`
	MaxResults int    `json:"max_results"`
}

// fileHits are one file's matching lines, formatted.
type fileHits struct {
	path    string
	matches int
	text    string
}

// searcher is one grep call's shared state.
type searcher struct {
	re      *regexp.Regexp
	glob    string
	context int
	maxSize int64
	stopAt  int64 // matches past which the walk stops

	mu      sync.Mutex // guards hits
	hits    []fileHits
	matches atomic.Int64
	skipped atomic.Int64 // files too large or with several links
	stopped atomic.Bool
}

func (t *grepTool) Call(ctx context.Context, c *tool.Call) (tool.Result, error) {
	var a grepArgs
	w, err := t.open("grep", c, &a)
	if err != nil {
		return tool.Result{}, err
	}
	s, start, err := t.searcher(w, &a)
	if err != nil {
		return tool.Result{}, fmt.Errorf("grep: %w", err)
	}
	if start.file {
		dir, name := path.Split(start.rel)
		root, err := w.Root().OpenRoot(path.Clean("./" + dir))
		if err != nil {
			return tool.Result{}, fmt.Errorf("grep: %w", err)
		}
		s.searchFile(root, name, start.rel)
		root.Close()
	} else {
		wk := &walk{workers: t.o.Workers, file: s.visit}
		if err := wk.run(ctx, w.Root(), start.rel); err != nil {
			return tool.Result{}, fmt.Errorf("grep: %s: %w", start.rel, err)
		}
	}
	return tool.Result{Output: s.report(a.Pattern, a.MaxResults)}, nil
}

type grepStart struct {
	rel  string
	file bool
}

func (t *grepTool) searcher(w *workspace.Workspace, a *grepArgs) (*searcher, grepStart, error) {
	var st grepStart
	expr := "(?m)" + a.Pattern
	if a.IgnoreCase {
		expr = "(?i)" + expr
	}
	re, err := regexp.Compile(expr)
	if err != nil {
		return nil, st, fmt.Errorf("%w: pattern: %v", ErrArgs, err)
	}
	if a.Glob != "" {
		if err := checkPattern(a.Glob); err != nil {
			return nil, st, err
		}
	}
	if a.MaxResults <= 0 {
		a.MaxResults = t.o.GrepMaxResults
	}
	if st.rel, err = workspace.Clean(a.Path); err != nil {
		return nil, st, err
	}
	fi, err := w.Stat(st.rel)
	if err != nil {
		return nil, st, err
	}
	if st.file = !fi.IsDir(); st.file && !fi.Mode().IsRegular() {
		return nil, st, fmt.Errorf("%s: %w", tool.Visible(st.rel), workspace.ErrNotRegular) // not opened: a FIFO would wake its writer
	}
	s := &searcher{re: re, glob: a.Glob, context: min(max(a.Context, 0), 20), maxSize: t.o.MaxFileBytes,
		stopAt: int64(a.MaxResults) * 10}
	return s, st, nil
}

// visit is the walk's file callback: regular files the glob takes.
func (s *searcher) visit(dir *os.Root, name, rel string, d fs.DirEntry) bool {
	if !d.Type().IsRegular() || (s.glob != "" && !s.globMatch(name, rel)) {
		return true
	}
	s.searchFile(dir, name, rel)
	if s.matches.Load() >= s.stopAt {
		s.stopped.Store(true)
		return false
	}
	return true
}

func (s *searcher) globMatch(name, rel string) bool {
	if !strings.Contains(s.glob, "/") {
		ok, _ := path.Match(s.glob, name)
		return ok
	}
	return matchGlob(s.glob, rel)
}

var bufPool = sync.Pool{New: func() any { b := make([]byte, 0, 64<<10); return &b }}

// searchFile reads one file (a regular file with one link, not too large,
// without a NUL in its head) and keeps its matching lines.
func (s *searcher) searchFile(dir *os.Root, name, rel string) {
	f, err := dir.OpenFile(name, os.O_RDONLY|syscall.O_NONBLOCK|syscall.O_NOCTTY, 0)
	if err != nil {
		return
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil || !fi.Mode().IsRegular() {
		return
	}
	if st, ok := fi.Sys().(*syscall.Stat_t); (ok && st.Nlink > 1) || fi.Size() > s.maxSize {
		s.skipped.Add(1)
		return
	}
	bp := bufPool.Get().(*[]byte)
	defer bufPool.Put(bp)
	buf := *bp
	if int64(cap(buf)) < fi.Size()+1 {
		buf = make([]byte, 0, fi.Size()+1)
	}
	n, err := io.ReadFull(f, buf[:fi.Size()])
	if err != nil && err != io.ErrUnexpectedEOF {
		return
	}
	data := buf[:n]
	if cap(buf) <= 1<<20 { // a buffer grown for a large file is not kept
		*bp = buf[:0]
	}
	if bytes.IndexByte(data[:min(len(data), workspace.TextSniff)], 0) >= 0 {
		return
	}
	locs := s.re.FindAllIndex(data, -1)
	if len(locs) == 0 {
		return
	}
	text, count := s.format(rel, data, locs)
	s.matches.Add(int64(count))
	s.mu.Lock()
	s.hits = append(s.hits, fileHits{path: rel, matches: count, text: text})
	s.mu.Unlock()
}

// format renders a file's matching lines (and their context), grep-style:
// "path:12:text", "path-11-text", "--" between groups apart.
func (s *searcher) format(rel string, data []byte, locs [][]int) (string, int) {
	name := tool.Visible(rel) // a line break in a name would make a result line
	starts := lineStarts(data)
	lineOf := func(off int) int { return sort.Search(len(starts), func(i int) bool { return starts[i] > off }) - 1 }
	matched := map[int]bool{}
	var order []int
	for _, l := range locs {
		if n := lineOf(l[0]); !matched[n] {
			matched[n] = true
			order = append(order, n)
		}
	}
	var sb strings.Builder
	prev := -2
	for _, m := range order {
		from, to := max(m-s.context, prev+1), min(m+s.context, len(starts)-1)
		if s.context > 0 && prev >= 0 && from > prev+1 {
			sb.WriteString("--\n")
		}
		for n := from; n <= to; n++ {
			sep := "-"
			if matched[n] {
				sep = ":"
			}
			end := len(data)
			if n+1 < len(starts) {
				end = starts[n+1]
			}
			fmt.Fprintf(&sb, "%s%s%d%s%s\n", name, sep, n+1, sep, clip(strings.TrimRight(string(data[starts[n]:end]), "\n")))
		}
		prev = max(prev, to)
	}
	return sb.String(), len(order)
}

func lineStarts(data []byte) []int {
	starts := []int{0}
	for i, b := range data {
		if b == '\n' && i+1 < len(data) {
			starts = append(starts, i+1)
		}
	}
	return starts
}

// report sorts the files' hits by path and keeps the first max matching
// lines (and their context).
func (s *searcher) report(pattern string, maxResults int) string {
	sort.Slice(s.hits, func(i, j int) bool { return s.hits[i].path < s.hits[j].path })
	var sb strings.Builder
	shown := 0
	for _, h := range s.hits {
		if shown+h.matches > maxResults {
			for l := range strings.SplitSeq(strings.TrimSuffix(h.text, "\n"), "\n") {
				if shown == maxResults {
					break
				}
				if strings.HasPrefix(l, tool.Visible(h.path)+":") {
					shown++
				}
				sb.WriteString(l + "\n")
			}
			break
		}
		sb.WriteString(h.text)
		shown += h.matches
	}
	total := s.matches.Load()
	switch {
	case total == 0:
		sb.WriteString("no matches for " + pattern + "\n")
	case s.stopped.Load():
		fmt.Fprintf(&sb, "[the first %d matching lines; the search stopped after %d: narrow it with path or glob]\n", shown, total)
	case int64(shown) < total:
		fmt.Fprintf(&sb, "[%d of %d matching lines in %d files; narrow it with path or glob, or raise max_results]\n", shown, total, len(s.hits))
	}
	if n := s.skipped.Load(); n > 0 {
		fmt.Fprintf(&sb, "[%d files skipped: larger than %d bytes or with more than one link]\n", n, s.maxSize)
	}
	return sb.String()
}
