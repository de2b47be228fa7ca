package tool

import "context"

// Func returns a Tool with the given spec whose calls run fn.
func Func(spec Spec, fn func(ctx context.Context, c *Call) (Result, error)) Tool {
	return funcTool{spec: spec, fn: fn}
}

type funcTool struct {
	spec Spec
	fn   func(context.Context, *Call) (Result, error)
}

func (f funcTool) Spec() Spec { return f.spec }

func (f funcTool) Call(ctx context.Context, c *Call) (Result, error) { return f.fn(ctx, c) }
