// Package workspace is the folder an agent's file and exec tools are
// confined to. Every access goes through an os.Root, so a path cannot leave
// the folder: absolute paths, ".." escapes and symlinks pointing out are
// refused by the kernel-relative lookups os.Root does, and a NUL byte is
// refused before any lookup. A regular file with more than one link is
// refused too, for reading and writing: it could be another name of a file
// outside. Writes are atomic: a temporary file beside the target, renamed
// over it, so a crash leaves the old content or the new, never a part.
package workspace

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"unicode/utf8"
)

// Errors of the workspace; each is wrapped with the path it is about.
var (
	ErrOutside    = errors.New("path is outside the workspace")
	ErrNotDir     = errors.New("not a directory")
	ErrHardLink   = errors.New("file has more than one link (a hard link may be a name of a file outside the workspace)")
	ErrBinary     = errors.New("binary file")
	ErrNotRegular = errors.New("not a regular file")
	ErrTooLarge   = errors.New("file too large")
)

// Workspace is one confined folder. Its methods are safe for concurrent use
// (os.Root is).
type Workspace struct {
	dir  string
	root *os.Root
}

// Open opens the workspace at dir, creating it 0700 (with its parents) if
// it is missing.
func Open(dir string) (*Workspace, error) {
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, fmt.Errorf("workspace: %w", err)
	}
	abs, err := filepath.Abs(dir)
	if err != nil {
		return nil, fmt.Errorf("workspace: %w", err)
	}
	if abs, err = filepath.EvalSymlinks(abs); err != nil {
		return nil, fmt.Errorf("workspace: %w", err)
	}
	root, err := os.OpenRoot(abs)
	if err != nil {
		return nil, fmt.Errorf("workspace: %w", err)
	}
	return &Workspace{dir: abs, root: root}, nil
}

// Dir is the workspace's host path, absolute, symlinks resolved.
func (w *Workspace) Dir() string { return w.dir }

// Root is the os.Root every access goes through.
func (w *Workspace) Root() *os.Root { return w.root }

// OpenDir returns a new open handle of the workspace's directory, the
// one its Root holds (opened relative to it, not looked up by path), for
// the sandbox to bind: a path renamed or swapped for a symlink since Open
// does not change what it names. The caller closes it.
func (w *Workspace) OpenDir() (*os.File, error) {
	f, err := w.root.Open(".")
	if err != nil {
		return nil, fmt.Errorf("workspace: %w", err)
	}
	return f, nil
}

// Close closes the root.
func (w *Workspace) Close() error { return w.root.Close() }

// Clean checks a path given by a model and returns it cleaned and
// slash-separated, "." for the workspace itself ("" names it too). An
// absolute path, a ".." that leaves the workspace, or a NUL byte is
// ErrOutside; symlinks are checked later, by os.Root, as the path is used.
func Clean(rel string) (string, error) {
	if strings.IndexByte(rel, 0) >= 0 {
		return "", fmt.Errorf("%q: %w (a NUL byte)", rel, ErrOutside)
	}
	if rel == "" {
		return ".", nil
	}
	if filepath.IsAbs(rel) || strings.HasPrefix(rel, "/") {
		return "", fmt.Errorf("%s: %w (paths are relative to the workspace)", rel, ErrOutside)
	}
	c := filepath.Clean(filepath.FromSlash(rel))
	if !filepath.IsLocal(c) && c != "." {
		return "", fmt.Errorf("%s: %w", rel, ErrOutside)
	}
	return filepath.ToSlash(c), nil
}

// wrap names the path in an error of os.Root, mapping an escape by
// symlink to ErrOutside.
func wrap(rel string, err error) error {
	if err == nil {
		return nil
	}
	if strings.Contains(err.Error(), "path escapes from parent") {
		return fmt.Errorf("%s: %w (by a symlink)", rel, ErrOutside)
	}
	var pe *fs.PathError
	if errors.As(err, &pe) {
		return fmt.Errorf("%s: %w", rel, pe.Err)
	}
	return fmt.Errorf("%s: %w", rel, err)
}

// Stat returns the file info of rel, following symlinks inside.
func (w *Workspace) Stat(rel string) (fs.FileInfo, error) {
	c, err := Clean(rel)
	if err != nil {
		return nil, err
	}
	fi, err := w.root.Stat(c)
	return fi, wrap(rel, err)
}

// Open opens rel for reading: a regular file with one link. What is not
// one is refused before it is opened (opening a FIFO wakes its writer,
// opening a device may act on it) and again after, by the open file, in
// case it was swapped between: O_NONBLOCK keeps a FIFO swapped in from
// blocking the open.
func (w *Workspace) Open(rel string) (*os.File, fs.FileInfo, error) {
	c, err := Clean(rel)
	if err != nil {
		return nil, nil, err
	}
	fi, err := w.root.Stat(c)
	if err != nil {
		return nil, nil, wrap(rel, err)
	}
	if err := checkRegular(rel, fi); err != nil {
		return nil, nil, err
	}
	f, err := w.root.OpenFile(c, os.O_RDONLY|syscall.O_NONBLOCK|syscall.O_NOCTTY, 0)
	if err != nil {
		return nil, nil, wrap(rel, err)
	}
	fi, err = f.Stat()
	if err == nil {
		err = checkRegular(rel, fi)
	}
	if err != nil {
		f.Close()
		return nil, nil, err
	}
	return f, fi, nil
}

// checkRegular refuses what is not a regular file with one link.
func checkRegular(rel string, fi fs.FileInfo) error {
	if fi.IsDir() {
		return fmt.Errorf("%s: is a directory", rel)
	}
	if !fi.Mode().IsRegular() {
		return fmt.Errorf("%s: %w", rel, ErrNotRegular)
	}
	if st, ok := fi.Sys().(*syscall.Stat_t); ok && st.Nlink > 1 {
		return fmt.Errorf("%s: %w", rel, ErrHardLink)
	}
	return nil
}

// ReadFile reads rel whole; a file larger than max bytes (max > 0) is
// ErrTooLarge.
func (w *Workspace) ReadFile(rel string, max int64) ([]byte, error) {
	f, fi, err := w.Open(rel)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	if max > 0 && fi.Size() > max {
		return nil, fmt.Errorf("%s: %w (%d bytes, at most %d)", rel, ErrTooLarge, fi.Size(), max)
	}
	var r io.Reader = f
	if max > 0 {
		r = io.LimitReader(f, max+1)
	}
	data, err := io.ReadAll(r)
	if err != nil {
		return nil, wrap(rel, err)
	}
	if max > 0 && int64(len(data)) > max {
		return nil, fmt.Errorf("%s: %w (grew past %d bytes)", rel, ErrTooLarge, max)
	}
	return data, nil
}

// TextSniff is how many bytes CheckText looks at for a NUL.
const TextSniff = 8000

// CheckText says whether data (the head of a file, or all of it) is text:
// a NUL in its first TextSniff bytes or invalid UTF-8 is ErrBinary, wrapped
// with the content type http.DetectContentType guesses. A UTF-8 sequence
// cut at the end of data is not counted against it.
func CheckText(data []byte) error {
	head := data[:min(len(data), TextSniff)]
	valid := utf8.Valid(data)
	if !valid {
		// a rune cut by the end of a head read is not invalid
		if i := lastRuneStart(data); i >= 0 && utf8.Valid(data[:i]) && !utf8.FullRune(data[i:]) {
			valid = true
		}
	}
	if bytes.IndexByte(head, 0) < 0 && valid {
		return nil
	}
	return fmt.Errorf("%w (%s)", ErrBinary, http.DetectContentType(head))
}

func lastRuneStart(b []byte) int {
	for i := len(b) - 1; i >= 0 && i >= len(b)-utf8.UTFMax; i-- {
		if utf8.RuneStart(b[i]) {
			return i
		}
	}
	return -1
}

// HostDir returns the directory rel as a host path, for a command's
// working directory. It is ErrOutside when rel (or a symlink on its way)
// leaves the workspace and ErrNotDir when it is not a directory.
func (w *Workspace) HostDir(rel string) (string, error) {
	c, err := Clean(rel)
	if err != nil {
		return "", err
	}
	fi, err := w.root.Stat(c)
	if err != nil {
		return "", wrap(rel, err)
	}
	if !fi.IsDir() {
		return "", fmt.Errorf("%s: %w", rel, ErrNotDir)
	}
	host, err := filepath.EvalSymlinks(filepath.Join(w.dir, filepath.FromSlash(c)))
	if err != nil {
		return "", wrap(rel, err)
	}
	if host != w.dir && !strings.HasPrefix(host, w.dir+string(filepath.Separator)) {
		return "", fmt.Errorf("%s: %w", rel, ErrOutside) // swapped for a symlink between the two looks
	}
	return host, nil
}
