package doctor

import (
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"agentd/internal/sandbox"
)

type fakeSandbox sandbox.Report

func (f fakeSandbox) Probe() sandbox.Report { return sandbox.Report(f) }

// An agent offered exec whose sandbox cannot run fails the check with how
// to install bubblewrap; auto and none warn; an agent not offered exec or
// process is not checked.
func TestDoctorSandbox(t *testing.T) {
	missing := fakeSandbox{Problem: "bwrap is not installed"}
	for _, tc := range []struct {
		name  string
		agent string
		probe fakeSandbox
		want  []Status
		fix   string
	}{
		{"bwrap missing", "tools:\n  builtin: [exec]\n", missing, []Status{Fail}, "apt install bubblewrap"},
		{"auto without bwrap", "sandbox: auto\ntools:\n  builtin: [process]\n", missing, []Status{Warn}, "apt install bubblewrap"},
		{"none", "sandbox: none\ntools:\n  builtin: [exec]\n", missing, []Status{Warn}, "sandbox: bwrap"},
		{"none where bwrap runs", "sandbox: none\ntools:\n  builtin: [exec]\n", fakeSandbox{Runs: true}, []Status{Warn}, "bubblewrap runs here"},
		{"bwrap runs", "tools:\n  builtin: [exec]\n", fakeSandbox{Bwrap: "/usr/bin/bwrap", Runs: true, Cgroup: "v1"}, []Status{OK}, ""},
		{"no exec offered", "tools:\n  builtin: [clock]\n", missing, []Status{Skip}, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := files(t, map[string]string{"agents/a.yaml": tc.agent})
			r := Run(t.Context(), dir, layout, &Options{Sandbox: tc.probe})
			var got []Status
			for _, c := range r.Checks {
				if c.Area == "sandbox" {
					got = append(got, c.Status)
					if !strings.Contains(c.Fix, tc.fix) {
						t.Errorf("fix %q, want it to say %q", c.Fix, tc.fix)
					}
				}
			}
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("sandbox checks (-want +got):\n%s", diff)
			}
		})
	}
}
