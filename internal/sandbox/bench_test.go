package sandbox_test

import (
	"context"
	"os/exec"
	"slices"
	"testing"
	"time"

	"agentd/internal/agent"
	"agentd/internal/sandbox"
)

// BenchmarkExecTrue is the round trip of /bin/true through the sandbox:
// its cost is the bwrap row less the none row (both start the helper).
// It reports the median as p50-ms.
func BenchmarkExecTrue(b *testing.B) {
	for _, mode := range []string{agent.SandboxNone, agent.SandboxBwrap} {
		b.Run(mode, func(b *testing.B) {
			if _, err := exec.LookPath("bwrap"); err != nil && mode == agent.SandboxBwrap {
				b.Skip("bubblewrap is not installed")
			}
			s := sandbox.New(nil)
			sp := &sandbox.Spec{Argv: []string{"/bin/true"}, Workspace: b.TempDir(), Mode: mode, Limits: agent.Limits{}.WithDefaults()}
			var took []time.Duration
			for b.Loop() {
				start := time.Now()
				e, err := s.Run(context.Background(), sp)
				if err != nil || e.Code != 0 {
					b.Fatalf("Run: %+v %v", e, err)
				}
				took = append(took, time.Since(start))
			}
			slices.Sort(took)
			b.ReportMetric(float64(took[len(took)/2])/float64(time.Millisecond), "p50-ms")
		})
	}
}
