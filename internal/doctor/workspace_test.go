package doctor

import (
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// An agent whose workspace would hold agentd's data fails the check with
// how to fix it; one outside the data directory or under workspace/ is
// OK; the default is not listed.
func TestDoctorWorkspace(t *testing.T) {
	outside := filepath.Join(t.TempDir(), "work")
	for _, tc := range []struct {
		name, agent string
		want        []Status
	}{
		{"the data directory", "workspace: .\n", []Status{Fail}},
		{"above it", "workspace: /\n", []Status{Fail}},
		{"its keys", "workspace: keys\n", []Status{Fail}},
		{"under workspace/", "workspace: workspace/shared\n", []Status{OK}},
		{"outside", "workspace: " + outside + "\n", []Status{OK}},
		{"default", "tools:\n  builtin: [exec]\n", nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := files(t, map[string]string{"agents/a.yaml": tc.agent})
			r := Run(t.Context(), dir, layout, nil)
			var got []Status
			for _, c := range r.Checks {
				if c.Area != "workspace" {
					continue
				}
				got = append(got, c.Status)
				if c.Status == Fail && (!strings.Contains(c.Detail, "workspace") || !strings.Contains(c.Fix, "agents/a.yaml")) {
					t.Errorf("check %+v: want the setting named, and the file in the fix", c)
				}
			}
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("workspace checks (-want +got):\n%s", diff)
			}
		})
	}
}
