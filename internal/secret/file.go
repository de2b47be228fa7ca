package secret

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
)

// FileName is the secrets file in the data directory.
const FileName = "secrets.env"

// maxFile bounds what is read of a secrets file.
const maxFile = 1 << 20

// Errors of the secrets file.
var (
	// ErrInsecure: the secrets file may be read or written by others
	// than its owner (its mode is not 0600), or is not a regular file.
	ErrInsecure = errors.New("secrets file is not private")
	// ErrBadValue: a value holds a line break or a NUL, which the
	// file's NAME=value lines cannot hold.
	ErrBadValue = errors.New("bad secret value")
)

// File is a secrets file: NAME=value lines (blank lines and lines
// starting with '#' are skipped; the value is the rest of the line,
// as is). It is read whenever a secret is needed, so a change is seen at
// the next call, and refused unless only its owner may read it.
type File struct {
	path string
}

// NewFile returns the secrets file in the data directory dir.
func NewFile(dir string) *File { return &File{path: filepath.Join(dir, FileName)} }

// Path is the file's path.
func (f *File) Path() string { return f.path }

// Load reads every secret. A missing file holds none.
func (f *File) Load() (map[string]string, error) {
	fh, err := os.Open(f.path)
	if errors.Is(err, fs.ErrNotExist) {
		return map[string]string{}, nil
	}
	if err != nil {
		return nil, fmt.Errorf("secret: %w", err)
	}
	defer fh.Close()
	fi, err := fh.Stat()
	if err != nil {
		return nil, fmt.Errorf("secret: %w", err)
	}
	if !fi.Mode().IsRegular() {
		return nil, fmt.Errorf("secret: %w: %s is not a regular file", ErrInsecure, f.path)
	}
	if fi.Mode().Perm()&0o077 != 0 {
		return nil, fmt.Errorf("secret: %w: %s has mode %04o; chmod 600 it", ErrInsecure, f.path, fi.Mode().Perm())
	}
	data, err := io.ReadAll(io.LimitReader(fh, maxFile+1))
	if err != nil {
		return nil, fmt.Errorf("secret: %w", err)
	}
	if len(data) > maxFile {
		return nil, fmt.Errorf("secret: %s is over %d bytes", f.path, maxFile)
	}
	return parseFile(f.path, data)
}

// parseFile parses the file's lines. An error names the line, never its
// value.
func parseFile(path string, data []byte) (map[string]string, error) {
	out := map[string]string{}
	sc := bufio.NewScanner(bytes.NewReader(data))
	sc.Buffer(make([]byte, 0, 4096), maxFile+1)
	for n := 1; sc.Scan(); n++ {
		line := strings.TrimSuffix(sc.Text(), "\r")
		if strings.TrimSpace(line) == "" || strings.HasPrefix(strings.TrimSpace(line), "#") {
			continue
		}
		name, value, ok := strings.Cut(line, "=")
		name = strings.TrimSpace(name)
		if !ok || !ValidName(name) {
			return nil, fmt.Errorf("secret: %s:%d: want NAME=value with a name of letters, digits and '_'", path, n)
		}
		out[name] = value
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("secret: %s: %w", path, err)
	}
	return out, nil
}

// Get returns the secret called name.
func (f *File) Get(name string) (string, bool, error) {
	m, err := f.Load()
	if err != nil {
		return "", false, err
	}
	v, ok := m[name]
	return v, ok, nil
}

// Names returns the names of the secrets, sorted.
func (f *File) Names() ([]string, error) {
	m, err := f.Load()
	if err != nil {
		return nil, err
	}
	names := make([]string, 0, len(m))
	for k := range m {
		names = append(names, k)
	}
	slices.Sort(names)
	return names, nil
}

// Set sets the secret called name to value, writing the file anew
// (mode 0600, through a temporary file renamed over it: a crash leaves
// the old file or the new one).
func (f *File) Set(name, value string) error {
	if !ValidName(name) {
		return fmt.Errorf("secret: %w: %q: a name is letters, digits and '_', not starting with a digit", ErrSyntax, name)
	}
	if strings.ContainsAny(value, "\n\r\x00") {
		return fmt.Errorf("secret: %w: %s: a value is one line", ErrBadValue, name)
	}
	m, err := f.Load()
	if err != nil {
		return err
	}
	m[name] = value
	return f.write(m)
}

// Remove removes the secret called name and reports whether it was set.
func (f *File) Remove(name string) (bool, error) {
	m, err := f.Load()
	if err != nil {
		return false, err
	}
	if _, ok := m[name]; !ok {
		return false, nil
	}
	delete(m, name)
	return true, f.write(m)
}

// write replaces the file with m's secrets, sorted by name. Comments in
// the old file are not kept.
func (f *File) write(m map[string]string) (err error) {
	var b bytes.Buffer
	b.WriteString("# agentd secrets: NAME=value lines, read by ${secret:NAME} references (agentd secret set|list|rm)\n")
	names := make([]string, 0, len(m))
	for k := range m {
		names = append(names, k)
	}
	slices.Sort(names)
	for _, k := range names {
		b.WriteString(k + "=" + m[k] + "\n")
	}
	dir := filepath.Dir(f.path)
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return fmt.Errorf("secret: %w", err)
	}
	tmp, err := os.CreateTemp(dir, "."+FileName+".*.tmp")
	if err != nil {
		return fmt.Errorf("secret: %w", err)
	}
	defer func() {
		if err != nil {
			tmp.Close()
			os.Remove(tmp.Name())
			err = fmt.Errorf("secret: %w", err)
		}
	}()
	// CreateTemp makes the file 0600; say so in case the umask differs.
	if err = tmp.Chmod(0o600); err != nil {
		return err
	}
	if _, err = tmp.Write(b.Bytes()); err != nil {
		return err
	}
	if err = tmp.Sync(); err != nil {
		return err
	}
	if err = tmp.Close(); err != nil {
		return err
	}
	if err = os.Rename(tmp.Name(), f.path); err != nil {
		return err
	}
	if d, derr := os.Open(dir); derr == nil {
		_ = d.Sync() // make the rename durable where the platform allows it
		d.Close()
	}
	return nil
}
