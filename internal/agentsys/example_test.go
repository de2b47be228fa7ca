package agentsys_test

import (
	"fmt"

	"agentd/internal/agentsys"
)

func ExampleParseDescriptor() {
	d := agentsys.SwarmDescriptor("support", "slack", "C1:general", "ann")
	fmt.Println(d)
	back, err := agentsys.ParseDescriptor(d.String())
	fmt.Println(back.Kind, back.Parts, err)
	// Output:
	// swarm:support:slack:C1%3Ageneral:ann
	// swarm [support slack C1:general ann] <nil>
}
