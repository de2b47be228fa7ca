package agent_test

import (
	"fmt"
	"os"
	"path/filepath"

	"agentd/internal/agent"
)

// Init writes example files that run offline; LoadConfig and LoadAll read
// them back with every default applied.
func ExampleInit() {
	dir, err := os.MkdirTemp("", "agentd-example")
	if err != nil {
		fmt.Println(err)
		return
	}
	defer os.RemoveAll(dir)

	if _, err := agent.Init(dir); err != nil {
		fmt.Println(err)
		return
	}
	cfg, err := agent.LoadConfig(dir)
	if err != nil {
		fmt.Println(err)
		return
	}
	defs, errs := agent.LoadAll(dir, cfg)
	if len(errs) > 0 {
		fmt.Println(errs)
		return
	}
	a := defs["assistant"]
	fmt.Println(a.ID, a.Type, a.Model.Provider, a.Budgets.MaxSteps, a.Tools.Timeout.D())
	// Output: assistant permanent echo 25 1m0s
}

// A Registry serves the current definitions; an invalid edit is reported
// with its file, line and field, and the last good definition stays.
func ExampleRegistry() {
	dir, err := os.MkdirTemp("", "agentd-example")
	if err != nil {
		fmt.Println(err)
		return
	}
	defer os.RemoveAll(dir)
	file := filepath.Join(dir, "agents", "helper.yaml")
	write := func(s string) {
		if err := os.MkdirAll(filepath.Dir(file), 0o755); err != nil {
			fmt.Println(err)
		}
		if err := os.WriteFile(file, []byte(s), 0o644); err != nil {
			fmt.Println(err)
		}
	}

	write("name: Helper\nmodel:\n  provider: openai\n  name: gpt-4o-mini\n")
	r, err := agent.NewRegistry(dir, nil, nil)
	if err != nil {
		fmt.Println(err)
		return
	}
	d, _ := r.Get("helper")
	fmt.Println(d.Name, d.Model.Provider, d.Model.Name, d.Model.APIKeyEnv)

	write("name: Helper 2\nmodel:\n  provider: openai\n  name: gpt-4o-mini\n  params:\n    temperature: 3.5\n")
	fmt.Println(r.Reload())
	d, _ = r.Get("helper")
	fmt.Println(d.Name)
	// Output:
	// Helper openai gpt-4o-mini OPENAI_API_KEY
	// agents/helper.yaml:6: model.params.temperature: must be between 0 and 2, got 3.5
	// Helper
}
