// Package txtar reads and writes the text archives agentd's tests keep
// their fixtures in: a comment, then files, each introduced by a line
// "-- NAME --" (the format of golang.org/x/tools/txtar). A test reads an
// archive, runs what its files describe, and compares with, or with
// -update rewrites, the files that hold the expected results.
package txtar

import (
	"bytes"
	"fmt"
	"os"
	"strings"
)

// Archive is a comment and a list of files, in order.
type Archive struct {
	Comment string
	Files   []File
}

// File is one file of an archive. Data ends with a newline unless it is
// empty.
type File struct {
	Name string
	Data string
}

// Parse reads an archive. A line "-- NAME --" (NAME not empty, surrounding
// white space trimmed) starts a file; what comes before the first is the
// comment. A missing final newline is added to the last file.
func Parse(data []byte) *Archive {
	a := new(Archive)
	cur := -1
	for line := range strings.Lines(string(data)) {
		if name, ok := marker(line); ok {
			a.Files = append(a.Files, File{Name: name})
			cur = len(a.Files) - 1
			continue
		}
		if cur < 0 {
			a.Comment += line
		} else {
			a.Files[cur].Data += line
		}
	}
	if n := len(a.Files); n > 0 && a.Files[n-1].Data != "" && !strings.HasSuffix(a.Files[n-1].Data, "\n") {
		a.Files[n-1].Data += "\n"
	}
	return a
}

// ParseFile reads the archive in the file path.
func ParseFile(path string) (*Archive, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("txtar: %w", err)
	}
	return Parse(b), nil
}

func marker(line string) (string, bool) {
	l := strings.TrimRight(line, "\r\n")
	if len(l) < 7 || !strings.HasPrefix(l, "-- ") || !strings.HasSuffix(l, " --") {
		return "", false
	}
	name := strings.TrimSpace(l[3 : len(l)-3])
	return name, name != ""
}

// Get returns the data of the first file called name.
func (a *Archive) Get(name string) (string, bool) {
	for _, f := range a.Files {
		if f.Name == name {
			return f.Data, true
		}
	}
	return "", false
}

// Set replaces the data of the first file called name, or appends a file.
func (a *Archive) Set(name, data string) {
	for i := range a.Files {
		if a.Files[i].Name == name {
			a.Files[i].Data = data
			return
		}
	}
	a.Files = append(a.Files, File{Name: name, Data: data})
}

// Format writes the archive back, each file's data ending with a newline.
func (a *Archive) Format() []byte {
	var b bytes.Buffer
	b.WriteString(a.Comment)
	for _, f := range a.Files {
		fmt.Fprintf(&b, "-- %s --\n", f.Name)
		b.WriteString(f.Data)
		if f.Data != "" && !strings.HasSuffix(f.Data, "\n") {
			b.WriteByte('\n')
		}
	}
	return b.Bytes()
}
