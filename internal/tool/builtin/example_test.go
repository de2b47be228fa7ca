package builtin_test

import (
	"context"
	"encoding/json"
	"fmt"
	"time"

	"agentd/internal/tool"
	"agentd/internal/tool/builtin"
)

func ExampleTools() {
	r := tool.NewRegistry(nil)
	now := func() time.Time { return time.Date(2024, 7, 14, 10, 0, 0, 0, time.UTC) }
	for _, t := range builtin.Tools(&builtin.Options{Now: now}) {
		if err := r.Register(t); err != nil {
			panic(err)
		}
	}
	ctx := context.Background()
	for _, c := range []tool.Call{
		{ID: "1", Name: "calculator", Args: json.RawMessage(`{"expression":"(1 + 2) * 2^10"}`)},
		{ID: "2", Name: "calculator", Args: json.RawMessage(`{"expression":"1 / (2 - 2)"}`)},
		{ID: "3", Name: "clock", Args: json.RawMessage(`{"timezone":"UTC"}`)},
	} {
		out := r.Run(ctx, &c, nil)
		fmt.Println(out.Result.Output, out.Result.IsError)
	}
	// Output:
	// 3072 false
	// division by zero at position 3 true
	// {"time":"2024-07-14T10:00:00Z","timezone":"UTC","utc_offset":"+00:00","weekday":"Sunday","unix":1720951200} false
}
