package agentsys_test

import (
	"fmt"

	"agentd/internal/agentsys"
	"agentd/internal/tool"
)

// The wiring registers the agent tools in the node's tool registry; an
// agent's policy must then name each one it may use.
func ExampleTools() {
	sys := agentsys.New(nil, nil, nil) // the wiring's: over the store and the runtime
	reg := tool.NewRegistry(nil)
	for _, t := range agentsys.Tools(sys, nil) {
		if err := reg.Register(t); err != nil {
			panic(err)
		}
	}
	planner := tool.Policy{Allow: []string{"start_background_agent", "agent_status", "stop_agent", "ask_agent"}}
	for _, s := range reg.Specs() {
		fmt.Printf("%-23s %s\n", s.Name, planner.Decide(s).Verdict)
	}
	// Output:
	// agent_status            allow
	// ask_agent               allow
	// create_permanent_agent  deny
	// list_agents             deny
	// send_agent_message      deny
	// start_background_agent  allow
	// stop_agent              allow
}
