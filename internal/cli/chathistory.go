package cli

import (
	"bufio"
	"os"
	"path/filepath"
	"strings"
)

// historyMax bounds the lines the chat's history keeps; the file is cut
// back to them when it has grown to twice as many.
const historyMax = 1000

// chatHistory is the lines typed in chat, for the up arrow: a
// term.History kept in a file (mode 0600, one line each, oldest first)
// when it has one. A line is appended as it is typed, so a crash loses
// none; a failed write loses the line from the file only.
type chatHistory struct {
	file  string // "": kept in memory only
	lines []string
	// skip drops the next line: one cut short by Ctrl-C.
	skip bool
}

// openHistory reads the history file, if any; a file that cannot be read
// gives an empty history that is still appended to.
func openHistory(file string) *chatHistory {
	h := &chatHistory{file: file}
	if file == "" {
		return h
	}
	f, err := os.Open(file)
	if err != nil {
		return h
	}
	if fi, err := f.Stat(); err == nil && fi.Mode().Perm()&0o077 != 0 {
		os.Chmod(file, 0o600) // what was typed is the user's alone
	}
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 64<<10), 1<<20)
	for sc.Scan() {
		h.lines = append(h.lines, sc.Text())
	}
	f.Close()
	if len(h.lines) > 2*historyMax {
		h.lines = h.lines[len(h.lines)-historyMax:]
		h.rewrite()
	}
	return h
}

// rewrite replaces the file with the lines kept, atomically.
func (h *chatHistory) rewrite() {
	tmp, err := os.CreateTemp(filepath.Dir(h.file), ".chat_history-*")
	if err != nil {
		return
	}
	_, err = tmp.WriteString(strings.Join(h.lines, "\n") + "\n")
	if cerr := tmp.Close(); err == nil && cerr == nil {
		if os.Rename(tmp.Name(), h.file) == nil {
			return
		}
	}
	os.Remove(tmp.Name())
}

// Add records a line typed: not an empty one, the one before again, or
// one cut short by Ctrl-C.
func (h *chatHistory) Add(line string) {
	skip := h.skip
	h.skip = false
	if skip || strings.TrimSpace(line) == "" || (len(h.lines) > 0 && h.lines[len(h.lines)-1] == line) {
		return
	}
	h.lines = append(h.lines, line)
	if h.file == "" {
		return
	}
	f, err := os.OpenFile(h.file, os.O_WRONLY|os.O_APPEND|os.O_CREATE, 0o600)
	if err != nil {
		return
	}
	f.WriteString(line + "\n")
	f.Close()
}

// Len is the number of lines.
func (h *chatHistory) Len() int { return len(h.lines) }

// At returns a line: 0 is the newest.
func (h *chatHistory) At(i int) string { return h.lines[len(h.lines)-1-i] }
