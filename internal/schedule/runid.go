package schedule

import "time"

// RunIDLayout is the layout of a run id: a fire's scheduled time in UTC,
// to the second.
const RunIDLayout = "20060102T150405Z"

// RunID returns the id of the run a fire at scheduled time t starts,
// such as 20261126T080000Z: it sorts as the times do, and every node
// derives the same id from the same fire, so the run's session key
// (job:<name>:<run>) and the fire's idempotency key
// (job:<name>:<scheduled time>) agree across nodes and restarts.
// Cron fires are whole minutes (seconds 00); every and at fires carry
// their seconds.
func RunID(t time.Time) string { return t.UTC().Format(RunIDLayout) }
