package doctor_test

import (
	"context"
	"fmt"

	"agentd/internal/doctor"
)

// A data directory that does not exist: one failed check, and what to do.
func ExampleRun() {
	l := doctor.Layout{DB: "agentd.db", Lock: "agentd.lock", Socket: "agentd.sock", HasData: func(string) bool { return false }}
	r := doctor.Run(context.Background(), "/nonexistent/agentd-data", l, nil)
	for _, c := range r.Checks {
		fmt.Printf("%s %s: %s\n  → %s\n", c.Status, c.Name, c.Detail, c.Fix)
	}
	fmt.Println("failed:", r.Failed())
	// Output:
	// fail data directory: /nonexistent/agentd-data does not exist
	//   → name agentd's data directory with --data or $AGENTD_HOME, or make one: agentd init --data /nonexistent/agentd-data
	// failed: true
}
