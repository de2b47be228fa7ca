package schema_test

import (
	"encoding/json"
	"fmt"

	"agentd/internal/schema"
)

func ExampleSchema_Validate() {
	s, err := schema.Compile([]byte(`{
		"type": "object",
		"required": ["url"],
		"additionalProperties": false,
		"properties": {
			"url": {"type": "string", "pattern": "^https://"},
			"method": {"enum": ["GET", "POST"]},
			"timeout": {"type": "integer", "minimum": 1}
		}
	}`))
	if err != nil {
		panic(err)
	}
	var doc any
	_ = json.Unmarshal([]byte(`{"url": "http://x", "method": "get", "timeout": 0, "retry": true}`), &doc)
	for _, e := range schema.Under("/spec", s.Validate(doc)) {
		fmt.Println(e)
	}
	// Output:
	// /spec/method: must be one of: GET, POST
	// /spec/retry: is not allowed here
	// /spec/timeout: must be at least 1
	// /spec/url: must match ^https://
}

func ExampleCompile() {
	_, err := schema.Compile([]byte(`{"type": "array", "contains": {"const": 1}}`))
	fmt.Println(err)
	// Output:
	// schema: invalid schema: /contains: keyword "contains" is not supported
}
