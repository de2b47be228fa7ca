package gateway

import (
	"os"
	"strings"
	"testing"
)

// docs/api.md's section on errors names every code of the table of
// failures, so that a client's author finds each code the API says.
func TestAPIDocNamesEveryErrorCode(t *testing.T) {
	b, err := os.ReadFile("../../docs/api.md")
	if err != nil {
		t.Fatal(err)
	}
	_, section, ok := strings.Cut(string(b), "\n## Errors\n")
	if !ok {
		t.Fatal("docs/api.md has no section Errors")
	}
	section, _, _ = strings.Cut(section, "\n## ")
	for _, f := range failures {
		if !strings.Contains(section, "`"+f.code+"`") {
			t.Errorf("docs/api.md, Errors: no code `%s` (%d)", f.code, f.status)
		}
	}
	if !strings.Contains(section, "internal error") {
		t.Error("docs/api.md, Errors: no word of the 500 internal error")
	}
}
