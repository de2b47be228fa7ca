package skill_test

import (
	"context"
	"encoding/json"
	"fmt"
	"os/exec"
	"strings"

	"agentd/internal/skill"
	"agentd/internal/tool"
)

func Example() {
	set, err := skill.Load([]string{"testdata/example/skills"}, &skill.Options{
		// As if ffmpeg were not installed.
		LookPath: func(bin string) (string, error) { return "", exec.ErrNotFound },
	})
	if err != nil {
		panic(err)
	}
	for _, sk := range set.List() {
		fmt.Println(sk.Name, sk.Available, sk.Missing)
	}

	// What an agent's system prompt lists.
	fmt.Print(set.Prompt(nil))

	// The model loads a skill, then one of its files, with the skill tool.
	r := tool.NewRegistry(nil)
	if err := r.Register(skill.Tool(func() *skill.Set { return set }, nil, nil)); err != nil {
		panic(err)
	}
	ctx := context.Background()
	for _, args := range []string{
		`{"name":"release-notes"}`,
		`{"name":"release-notes","file":"template.md"}`,
		`{"name":"screen-recording"}`,
	} {
		out := r.Run(ctx, &tool.Call{ID: "1", Name: skill.ToolName, Args: json.RawMessage(args), Agent: "assistant"}, nil)
		instructions, _, _ := strings.Cut(out.Result.Output, "\n---\n") // before the folder and file list
		fmt.Printf("%s\n(error: %v)\n", strings.TrimSpace(instructions), out.Result.IsError)
	}
	// Output:
	// release-notes true []
	// screen-recording false [binary ffmpeg not found on PATH]
	// Skills hold instructions and files for specific tasks. Before starting a task that one of these skills covers, call the `skill` tool with its name to load it, then follow its instructions:
	// - release-notes: Write release notes from a list of merged changes. Use when asked to announce a release.
	// # Release notes
	//
	// 1. Group the changes into Added, Changed and Fixed.
	// 2. Fill in template.md, one line per change.
	// (error: false)
	// ## {version}
	//
	// ### Added
	// (error: false)
	// skill screen-recording is unavailable: binary ffmpeg not found on PATH; tell the user what is missing, and do the task without it
	// (error: true)
}
