package skill

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"unicode/utf8"
)

const (
	// MaxFileBytes caps what ReadFile returns of one file.
	MaxFileBytes = 256 << 10
	// maxListed bounds the files Body lists; maxWalked bounds the entries
	// it visits to count the rest.
	maxListed = 200
	maxWalked = 10_000
)

// Body returns what the model gets when it loads a skill: the markdown of
// its SKILL.md after the front matter, then the skill's folder and the
// files in it besides SKILL.md (paths relative to the folder; hidden files
// and folders left out; at most 200 listed), which ReadFile can read.
//
// SKILL.md is as it was when the Set was loaded; the file list is read
// now. Body fails with ErrNotFound for an unknown skill and with an error
// matching ErrInvalid for an invalid one.
func (s *Set) Body(name string) (string, error) {
	sk, err := s.valid(name)
	if err != nil {
		return "", err
	}
	var b strings.Builder
	b.WriteString(strings.TrimSpace(strings.TrimLeft(s.bodies[name], "\r\n")))
	b.WriteString("\n\n---\nSkill folder: ")
	b.WriteString(sk.Dir)
	b.WriteByte('\n')
	files, more := listFiles(sk.Dir)
	if len(files) > 0 {
		fmt.Fprintf(&b, "Files in the skill folder (read one with the skill tool: name %q, file the path):\n", sk.Name)
		for _, f := range files {
			b.WriteString("- ")
			b.WriteString(f)
			b.WriteByte('\n')
		}
		switch {
		case more > 0:
			fmt.Fprintf(&b, "- ... and %d more\n", more)
		case more < 0:
			b.WriteString("- ... and more\n")
		}
	}
	return b.String(), nil
}

// valid returns the valid skill called name.
func (s *Set) valid(name string) (Skill, error) {
	sk, ok := s.Get(name)
	if !ok {
		return Skill{}, fmt.Errorf("skill: %q: %w", name, ErrNotFound)
	}
	if sk.Err != nil {
		return Skill{}, fmt.Errorf("skill: %s: %w", name, sk.Err)
	}
	return sk, nil
}

// listFiles lists the files under dir besides SKILL.md: regular files,
// and symbolic links to regular files inside dir. It returns at most
// maxListed paths (with '/' separators) and how many more there are, or -1
// when there were too many to count.
func listFiles(dir string) (files []string, more int) {
	root, err := filepath.EvalSymlinks(dir)
	if err != nil {
		return nil, 0
	}
	walked := 0
	_ = filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if p == root {
			return err // an unreadable folder lists nothing
		}
		walked++
		if walked > maxWalked {
			more = -1
			return fs.SkipAll
		}
		if strings.HasPrefix(d.Name(), ".") {
			if d.IsDir() {
				return fs.SkipDir
			}
			return nil
		}
		if err != nil || d.IsDir() {
			return nil // an unreadable sub-folder is skipped
		}
		rel, err := filepath.Rel(root, p)
		if err != nil || rel == FileName {
			return nil
		}
		if d.Type()&fs.ModeSymlink != 0 {
			if _, err := resolveInside(root, rel); err != nil {
				return nil
			}
			if fi, err := os.Stat(p); err != nil || !fi.Mode().IsRegular() {
				return nil
			}
		} else if !d.Type().IsRegular() {
			return nil
		}
		if len(files) < maxListed {
			files = append(files, filepath.ToSlash(rel))
		} else {
			more++
		}
		return nil
	})
	return files, more
}

// ReadFile returns the content of file, a path relative to the folder of
// the skill called name, such as "scripts/fill.py". The path may not be
// absolute, contain "..", name a hidden file or lead out of the folder
// through a symbolic link (all ErrBadPath). A file longer than
// MaxFileBytes is cut there, with a note saying so; a binary file is an
// error.
func (s *Set) ReadFile(name, file string) (string, error) {
	sk, err := s.valid(name)
	if err != nil {
		return "", err
	}
	rel, err := cleanPath(file)
	if err != nil {
		return "", fmt.Errorf("skill: %s: %w", name, err)
	}
	root, err := filepath.EvalSymlinks(sk.Dir)
	if err != nil {
		return "", fmt.Errorf("skill: %s: %w", name, err)
	}
	resolved, err := resolveInside(root, rel)
	if err != nil {
		return "", fmt.Errorf("skill: %s: %w", name, err)
	}
	// Open through an os.Root, so that a symbolic link changed since the
	// check above still cannot lead out of the folder.
	r, err := os.OpenRoot(root)
	if err != nil {
		return "", fmt.Errorf("skill: %s: %w", name, err)
	}
	defer r.Close()
	f, err := r.Open(resolved)
	if err != nil {
		return "", fmt.Errorf("skill: %s: %w: cannot open %q", name, ErrBadPath, file)
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return "", fmt.Errorf("skill: %s: %w", name, err)
	}
	if fi.IsDir() {
		return "", fmt.Errorf("skill: %s: %w: %q is a folder; give the path of a file in it", name, ErrBadPath, file)
	}
	if !fi.Mode().IsRegular() {
		return "", fmt.Errorf("skill: %s: %w: %q is not a regular file", name, ErrBadPath, file)
	}
	data, err := io.ReadAll(io.LimitReader(f, MaxFileBytes+1))
	if err != nil {
		return "", fmt.Errorf("skill: %s: read %s: %w", name, file, err)
	}
	if bytes.IndexByte(data[:min(len(data), 8000)], 0) >= 0 {
		return "", fmt.Errorf("skill: %s: %q is a binary file and cannot be shown", name, file)
	}
	if len(data) <= MaxFileBytes {
		return string(data), nil
	}
	cut := MaxFileBytes
	for cut > 0 && !utf8.RuneStart(data[cut]) {
		cut--
	}
	return fmt.Sprintf("%s\n[file cut: showing the first %d of %d bytes]", data[:cut], cut, fi.Size()), nil
}

// cleanPath checks a path a model gave and returns it cleaned, with the
// OS's separators.
func cleanPath(file string) (string, error) {
	switch {
	case strings.TrimSpace(file) == "":
		return "", fmt.Errorf("%w: no file given", ErrBadPath)
	case strings.ContainsRune(file, 0):
		return "", fmt.Errorf("%w: %q contains a NUL byte", ErrBadPath, file)
	case filepath.IsAbs(file) || strings.HasPrefix(file, "/") || strings.HasPrefix(file, `\`) || filepath.VolumeName(file) != "":
		return "", fmt.Errorf("%w: %q is absolute; give a path relative to the skill's folder, such as scripts/run.sh", ErrBadPath, file)
	}
	for _, part := range strings.FieldsFunc(file, func(r rune) bool { return r == '/' || r == '\\' }) {
		switch {
		case part == "..":
			return "", fmt.Errorf("%w: %q contains \"..\"; only files inside the skill's folder can be read", ErrBadPath, file)
		case part != "." && strings.HasPrefix(part, "."):
			return "", fmt.Errorf("%w: %q is a hidden file; hidden files cannot be read", ErrBadPath, file)
		}
	}
	return filepath.Clean(filepath.FromSlash(file)), nil
}

// resolveInside follows the symbolic links in root/rel and returns the
// path it leads to relative to root, failing if that is outside root or a
// hidden file.
func resolveInside(root, rel string) (string, error) {
	target, err := filepath.EvalSymlinks(filepath.Join(root, rel))
	if errors.Is(err, fs.ErrNotExist) {
		return "", fmt.Errorf("%w: no file %q in the skill's folder", ErrBadPath, filepath.ToSlash(rel))
	}
	if err != nil {
		return "", fmt.Errorf("%w: %q: %v", ErrBadPath, filepath.ToSlash(rel), err)
	}
	inside, err := filepath.Rel(root, target)
	if err != nil || inside == ".." || strings.HasPrefix(inside, ".."+string(filepath.Separator)) || filepath.IsAbs(inside) {
		return "", fmt.Errorf("%w: %q leads outside the skill's folder", ErrBadPath, filepath.ToSlash(rel))
	}
	for _, part := range strings.Split(inside, string(filepath.Separator)) {
		if part != "." && strings.HasPrefix(part, ".") {
			return "", fmt.Errorf("%w: %q leads to a hidden file", ErrBadPath, filepath.ToSlash(rel))
		}
	}
	return inside, nil
}
