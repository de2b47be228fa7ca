package diff_test

import (
	"fmt"

	"agentd/internal/diff"
)

func Example() {
	before := "package main\nfunc main() {\n\tprintln(\"hi\")\n}\n"
	after := "package main\nfunc main() {\n\tprintln(\"hello\")\n}\n"
	patch := diff.Unified("main.go", "main.go", before, after)
	fmt.Print(patch)

	files, _ := diff.Parse(patch)
	got, err := diff.Apply(before, files[0])
	fmt.Println(got == after, err)
	// Output:
	// --- a/main.go
	// +++ b/main.go
	// @@ -1,4 +1,4 @@
	//  package main
	//  func main() {
	// -	println("hi")
	// +	println("hello")
	//  }
	// true <nil>
}
