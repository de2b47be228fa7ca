package files_test

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"

	"agentd/internal/tool"
	"agentd/internal/tool/files"
	"agentd/internal/workspace"
)

func Example() {
	base, _ := os.MkdirTemp("", "agentd-files")
	defer os.RemoveAll(base)
	set := workspace.NewSet(func(agent string) (string, error) { return filepath.Join(base, agent), nil })
	defer set.Close()
	tools := map[string]tool.Tool{}
	for _, t := range files.Tools(set, nil) {
		tools[t.Spec().Name] = t
	}
	call := &tool.Call{Agent: "coder", Args: json.RawMessage(`{"path":"hello.txt","content":"hello\nworld\n"}`)}

	// what the approval card shows before the write
	card, _ := tools["write_file"].(tool.Previewer).Preview(context.Background(), call)
	fmt.Print(card.Title, "\n", card.Diff)

	res, _ := tools["write_file"].Call(context.Background(), call)
	fmt.Println(res.Output)
	res, _ = tools["grep"].Call(context.Background(), &tool.Call{Agent: "coder", Args: json.RawMessage(`{"pattern":"wor"}`)})
	fmt.Print(res.Output)
	// Output:
	// Create hello.txt (+2 −0)
	// --- /dev/null
	// +++ b/hello.txt
	// @@ -0,0 +1,2 @@
	// +hello
	// +world
	// created hello.txt (12 bytes, 2 lines)
	// hello.txt:2:world
}
