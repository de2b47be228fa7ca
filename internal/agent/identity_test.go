package agent

import (
	"errors"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// TestIdentityServerValidated: identity_server must be an http or https
// URL without credentials; the error names file, line and field.
func TestIdentityServerValidated(t *testing.T) {
	for _, tc := range []struct{ value, want string }{
		{"http://127.0.0.1:7400/mcp", ""},
		{"https://id.example.com/mcp", ""},
		{"ftp://id.example.com/mcp", "agents/a.yaml:2: identity_server: must be an http or https URL"},
		{"id.example.com", "agents/a.yaml:2: identity_server: must be an http or https URL"},
		{"https://user:pw@id.example.com/mcp", "agents/a.yaml:2: identity_server: must not hold credentials"},
	} {
		dir := t.TempDir()
		writeTestFile(t, dir, "agents/a.yaml", "name: A\nidentity_server: "+tc.value+"\n")
		_, err := LoadDefinition(dir, "a", nil)
		var ce *ConfigError
		switch {
		case tc.want == "" && err != nil:
			t.Errorf("identity_server %q: %v; want accepted", tc.value, err)
		case tc.want != "" && (!errors.As(err, &ce) || !strings.Contains(err.Error(), tc.want)):
			t.Errorf("identity_server %q: %v; want %q", tc.value, err, tc.want)
		}
	}
}

// TestModelWithoutSecrets: what a character file shows of a model keeps
// no credentials, query, extra parameters or key variable, fallbacks too.
func TestModelWithoutSecrets(t *testing.T) {
	temp := 0.2
	m := Model{Provider: "openai", Name: "gpt", BaseURL: "https://u:pw@api.example.com/v1?key=sk-1#frag", APIKeyEnv: "OPENAI_API_KEY",
		Params:    ModelParams{Temperature: &temp, Extra: map[string]any{"api_key": "sk-2"}},
		Fallbacks: []Model{{Provider: "anthropic", Name: "claude", BaseURL: "http://user@local:8080/x?token=t", APIKeyEnv: "K"}}}
	want := Model{Provider: "openai", Name: "gpt", BaseURL: "https://api.example.com/v1", Params: ModelParams{Temperature: &temp},
		Fallbacks: []Model{{Provider: "anthropic", Name: "claude", BaseURL: "http://local:8080/x"}}}
	if d := cmp.Diff(want, m.WithoutSecrets()); d != "" {
		t.Errorf("WithoutSecrets (-want +got):\n%s", d)
	}
	if m.Params.Extra == nil || m.APIKeyEnv == "" || m.Fallbacks[0].APIKeyEnv == "" {
		t.Errorf("WithoutSecrets changed its receiver: %+v", m)
	}
}
