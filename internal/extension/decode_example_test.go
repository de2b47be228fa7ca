package extension_test

import (
	"fmt"

	"agentd/internal/extension"
)

func ExampleDecodeDocs() {
	docs, err := extension.DecodeDocs([]byte(`
type: control
name: quiet-hours
spec: {kind: bool, default: false}
---
type: theme
name: dark
enabled: false
spec:
  colors: {bg: "#111"}
`))
	if err != nil {
		panic(err)
	}
	for _, d := range docs {
		fmt.Printf("line %d: %s %s\n", d.Line, d.Key(), d.Spec)
	}
	_, err = extension.DecodeDocs([]byte("type: theme\nname: dark\nspec:\n  colors: [.nan]\n"))
	fmt.Println(err)
	// Output:
	// line 2: control/quiet-hours {"kind":"bool","default":false}
	// line 6: theme/dark {"colors":{"bg":"#111"}}
	// line 4: spec.colors[0]: must be a finite number, not ".nan"
}
