package openaiapi_test

import (
	"go/parser"
	gotoken "go/token"
	"slices"
	"strings"
	"testing"

	"agentd/internal/gateway"
)

// The package's doc lists the API's routes: exactly the gateway's
// OpenAIRoutes, which the handler serves.
func TestDocListsTheRoutes(t *testing.T) {
	f, err := parser.ParseFile(gotoken.NewFileSet(), "openaiapi.go", nil, parser.PackageClauseOnly|parser.ParseComments)
	if err != nil {
		t.Fatal(err)
	}
	var listed []string
	for _, line := range strings.Split(f.Doc.Text(), "\n") {
		if w := strings.Fields(line); len(w) >= 2 && strings.HasPrefix(line, "\t") && strings.HasPrefix(w[1], "/") {
			listed = append(listed, w[0]+" "+w[1])
		}
	}
	if !slices.Equal(listed, gateway.OpenAIRoutes) {
		t.Errorf("the package doc lists\n  %q\nthe gateway routes\n  %q", listed, gateway.OpenAIRoutes)
	}
}
