package title_test

import (
	"fmt"

	"agentd/internal/title"
)

func ExampleClean() {
	fmt.Println(title.Clean(`**Title:** "Trip to Lisbon in May."`))
	// Output: Trip to Lisbon in May
}
