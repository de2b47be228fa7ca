package builtin

import (
	"context"
	"encoding/json"
	"fmt"

	"agentd/internal/tool"
)

type calculator struct{}

const calculatorSchema = `{
	"type": "object",
	"properties": {
		"expression": {"type": "string", "description": "The expression, such as \"(2 + 3) * 4\", \"2^10\" or \"sqrt(2) * sin(pi / 4)\"."}
	},
	"required": ["expression"],
	"additionalProperties": false
}`

func (calculator) Spec() tool.Spec {
	return tool.Spec{
		Name: "calculator",
		Description: "Evaluates an arithmetic expression exactly as written and returns the number. " +
			"Operators: + - * / % (remainder) and ^ or ** (power, right-associative), parentheses, unary minus; " +
			"numbers like 42, 3.14 and 6.02e23; constants pi and e; functions sqrt, abs, min, max, round, floor, ceil, " +
			"log (base 10), ln, exp, sin, cos, tan (radians) and pow(x, y).",
		InputSchema: json.RawMessage(calculatorSchema),
		ReadOnly:    true,
		Idempotent:  true,
	}
}

func (calculator) Call(_ context.Context, c *tool.Call) (tool.Result, error) {
	var args struct {
		Expression string `json:"expression"`
	}
	if err := json.Unmarshal(c.Args, &args); err != nil {
		return tool.Result{}, fmt.Errorf("calculator: %w", err)
	}
	v, err := evaluate(args.Expression)
	if err != nil {
		return tool.Result{}, err
	}
	return tool.Result{Output: formatNumber(v)}, nil
}
