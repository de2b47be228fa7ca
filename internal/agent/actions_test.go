package agent

import (
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// actions.allow_networks is a list of CIDR ranges; anything else is an
// error naming the file, line and field.
func TestActionsConfig(t *testing.T) {
	for _, tc := range []struct {
		yaml string
		want []string
		err  string
	}{
		{"", nil, ""},
		{"actions:\n  allow_networks: [10.0.0.0/8, 127.0.0.1/32]\n", []string{"10.0.0.0/8", "127.0.0.1/32"}, ""},
		{"actions:\n  allow_networks:\n    - 10.0.0.1\n", nil, "agentd.yaml:3: actions.allow_networks[0]: must be a CIDR range"},
		{"actions:\n  allow_network: [10.0.0.0/8]\n", nil, "actions.allow_network: unknown field"},
	} {
		dir := t.TempDir()
		writeTestFile(t, dir, ConfigFile, tc.yaml)
		cfg, err := LoadConfig(dir)
		if tc.err != "" {
			if err == nil || !strings.Contains(err.Error(), tc.err) {
				t.Errorf("%q: %v, want %q", tc.yaml, err, tc.err)
			}
			continue
		}
		if err != nil {
			t.Errorf("%q: %v", tc.yaml, err)
			continue
		}
		if d := cmp.Diff(tc.want, cfg.Actions.AllowNetworks); d != "" {
			t.Errorf("%q (-want +got):\n%s", tc.yaml, d)
		}
	}
}
