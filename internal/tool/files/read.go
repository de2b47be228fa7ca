package files

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"unicode/utf8"

	"agentd/internal/tool"
	"agentd/internal/workspace"
)

// DefaultReadLines is how many lines read_file returns when the call does
// not say.
const DefaultReadLines = 2000

type readFile struct{ *files }

func (*readFile) Spec() tool.Spec {
	return tool.Spec{
		Name: "read_file",
		Description: "Reads a text file of the workspace: lines offset to offset+limit-1 (default: the first 2000), " +
			"after a header line saying which lines of how many. Long reads are cut; the note says the offset to read on. " +
			"Binary files are refused.",
		InputSchema: schema(`"path":{"type":"string","description":"The file, relative to the workspace."},`+
			`"offset":{"type":"integer","minimum":1,"description":"The first line to read (1-based). Default 1."},`+
			`"limit":{"type":"integer","minimum":1,"description":"How many lines. Default 2000."}`, "path"),
		ReadOnly: true,
		OptIn:    true,
	}
}

type readArgs struct {
	Path   string `json:"path"`
	Offset int    `json:"offset"`
	Limit  int    `json:"limit"`
}

func (t *readFile) Call(ctx context.Context, c *tool.Call) (tool.Result, error) {
	var a readArgs
	w, err := t.open("read_file", c, &a)
	if err != nil {
		return tool.Result{}, err
	}
	a.Offset = max(a.Offset, 1)
	if a.Limit <= 0 {
		a.Limit = DefaultReadLines
	}
	budget := t.o.MaxReadBytes
	if c.MaxOutputBytes > 0 {
		budget = max(min(budget, c.MaxOutputBytes-200), 1) // room for the header and the note
	}
	rel, err := workspace.Clean(a.Path)
	if err != nil {
		return tool.Result{}, fmt.Errorf("read_file: %w", err)
	}
	r, err := readLines(w, rel, a.Offset, a.Limit, budget)
	if err != nil {
		return tool.Result{}, fmt.Errorf("read_file: %w", err)
	}
	return tool.Result{Output: r}, nil
}

// readLines reads lines [offset, offset+limit) of rel, at most budget
// bytes of them, and counts the file's lines, streaming: a 10 MB file is
// never held whole.
func readLines(w *workspace.Workspace, rel string, offset, limit, budget int) (string, error) {
	f, _, err := w.Open(rel)
	if err != nil {
		return "", err
	}
	defer f.Close()
	br := bufio.NewReaderSize(f, 64<<10)
	head, _ := br.Peek(workspace.TextSniff)
	if bytes.IndexByte(head, 0) >= 0 { // invalid UTF-8 is checked in what is returned
		return "", fmt.Errorf("%s: %w", rel, workspace.CheckText(head))
	}
	var (
		text      bytes.Buffer
		lines     int  // complete lines read
		partial   bool // a line begun and not ended
		lineStart int  // text.Len() at the start of the current line
		last      int  // the last line kept whole
		cut       bool
		long      bool // the first line alone passes budget; text is its head
	)
	for {
		chunk, err := br.ReadSlice('\n')
		if len(chunk) > 0 {
			n := lines + 1 // the number of the line chunk belongs to
			if n >= offset && n < offset+limit && !cut {
				if text.Len()+len(chunk) > budget {
					cut = true
					text.Truncate(lineStart)
					if n == offset { // a line longer than a read: its head
						text.Write(chunk[:runeCut(chunk, budget-text.Len())])
						long = true
					}
				} else {
					text.Write(chunk)
				}
			}
			partial = chunk[len(chunk)-1] != '\n'
			if !partial {
				lines++
				if n >= offset && n < offset+limit && !cut {
					last = n
				}
				lineStart = text.Len()
				if n >= offset+limit-1 || cut {
					break
				}
			}
		}
		if err == bufio.ErrBufferFull {
			continue
		}
		if err == io.EOF {
			if partial {
				lines++
				if !cut && lines >= offset && lines < offset+limit {
					last = lines
				}
			}
			partial = false
			break
		}
		if err != nil {
			return "", fmt.Errorf("%s: %w", rel, err)
		}
	}
	total, err := countLines(br, lines, partial)
	if err != nil {
		return "", fmt.Errorf("%s: %w", rel, err)
	}
	if !utf8.Valid(text.Bytes()) {
		return "", fmt.Errorf("%s: %w (%s; not valid UTF-8)", rel, workspace.ErrBinary, http.DetectContentType(head))
	}
	name := tool.Visible(rel)
	if long {
		return fmt.Sprintf("%s line %d of %d, its first %d bytes (the line is longer than a read returns)\n%s\n", name, offset, total, text.Len(), text.String()), nil
	}
	return format(name, text.String(), offset, last, total, cut)
}

// runeCut is the longest prefix of b, at most n bytes, that does not cut
// a UTF-8 sequence.
func runeCut(b []byte, n int) int {
	n = max(min(n, len(b)), 0)
	for n > 0 && n < len(b) && !utf8.RuneStart(b[n]) {
		n--
	}
	return n
}

// countLines counts the lines left in r after done complete ones (and a
// line begun when partial), without keeping them.
func countLines(r io.Reader, done int, partial bool) (int, error) {
	buf := make([]byte, 64<<10)
	total, lastByte := done, byte('\n')
	if partial {
		lastByte = 0
	}
	for {
		n, err := r.Read(buf)
		if n > 0 {
			total += bytes.Count(buf[:n], []byte{'\n'})
			lastByte = buf[n-1]
		}
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return 0, err
		}
	}
	if lastByte != '\n' {
		total++
	}
	return total, nil
}

func format(rel, text string, offset, last, total int, cut bool) (string, error) {
	switch {
	case total == 0:
		return rel + " is empty (0 lines)\n", nil
	case offset > total:
		return "", fmt.Errorf("%w: offset %d is past the end: %s has %d lines", ErrArgs, offset, rel, total)
	}
	out := fmt.Sprintf("%s lines %d–%d of %d\n%s", rel, offset, last, total, text)
	if cut {
		out += fmt.Sprintf("\n[cut at the read limit: read on with offset %d]\n", last+1)
	} else if last < total {
		out += fmt.Sprintf("[%d more lines: read on with offset %d]\n", total-last, last+1)
	}
	return out, nil
}
