package workspace_test

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"

	"agentd/internal/workspace"
)

func Example() {
	base, _ := os.MkdirTemp("", "agentd-ws")
	defer os.RemoveAll(base)
	set := workspace.NewSet(func(agent string) (string, error) { return filepath.Join(base, agent), nil })
	defer set.Close()

	w, _ := set.For("coder")
	fmt.Println(w.WriteFile("notes/todo.txt", []byte("ship it\n")))
	data, _ := w.ReadFile("notes/todo.txt", 1<<20)
	fmt.Printf("%q\n", data)

	_, err := w.ReadFile("../../etc/passwd", 1<<20)
	fmt.Println(errors.Is(err, workspace.ErrOutside))
	// Output:
	// <nil>
	// "ship it\n"
	// true
}
