package tool_test

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"

	"agentd/internal/tool"
)

func ExampleRegistry() {
	r := tool.NewRegistry(nil)
	upper := tool.Func(tool.Spec{
		Name:        "upper",
		Description: "Upper-cases a text.",
		InputSchema: json.RawMessage(`{"type":"object","properties":{"text":{"type":"string"}},"required":["text"]}`),
		ReadOnly:    true,
	}, func(_ context.Context, c *tool.Call) (tool.Result, error) {
		var args struct{ Text string }
		if err := json.Unmarshal(c.Args, &args); err != nil {
			return tool.Result{}, err
		}
		return tool.Result{Output: strings.ToUpper(args.Text)}, nil
	})
	if err := r.Register(upper); err != nil {
		panic(err)
	}

	// Offer the agent what its policy lets it see.
	for _, s := range r.Visible(tool.Policy{}) {
		fmt.Println("offered:", s.Name)
	}

	ctx := context.Background()
	out := r.Run(ctx, &tool.Call{ID: "call_1", Name: "upper", Args: json.RawMessage(`{"text":"hello"}`)}, nil)
	fmt.Println(out.Result.Output, out.Result.IsError)

	out = r.Run(ctx, &tool.Call{ID: "call_2", Name: "upper", Args: json.RawMessage(`{"text":42}`)}, nil)
	fmt.Println(out.Result.Output, out.Result.IsError)

	out = r.Run(ctx, &tool.Call{ID: "call_3", Name: "lower"}, nil)
	fmt.Println(out.Result.Output, out.Result.IsError)
	// Output:
	// offered: upper
	// HELLO false
	// invalid arguments for upper: property "text": type: 42 has type "integer", want "string" true
	// unknown tool "lower"; available tools: upper true
}

func ExamplePolicy_Decide() {
	p := tool.Policy{Allow: []string{"calculator", "http_*"}, Ask: []string{"http_post"}}
	for _, s := range []tool.Spec{
		{Name: "calculator"},
		{Name: "http_fetch", Risky: true},
		{Name: "http_post", Risky: true},
		{Name: "clock"},
	} {
		d := p.Decide(s)
		fmt.Printf("%s: %s", s.Name, d.Verdict)
		if d.Reason != "" {
			fmt.Printf(": %s", d.Reason)
		}
		fmt.Println()
	}
	// Output:
	// calculator: allow
	// http_fetch: allow
	// http_post: ask: tool http_post needs approval (pattern "http_post")
	// clock: deny: tool clock is not in the allow list
}

func ExampleVisible() {
	fmt.Println(tool.Visible("notes.txt"))
	fmt.Println(tool.Visible("notes\n--- a/README.md"))
	fmt.Println(tool.Visible("invoice\u202etxt.exe"))
	// Output:
	// notes.txt
	// "notes\n--- a/README.md"
	// "invoice\u202etxt.exe"
}
