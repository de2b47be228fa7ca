//go:build race

package openai

// raceEnabled: the race detector is on, and sync.Pool drops some of what
// it is given, so allocation counts are not asserted.
const raceEnabled = true
