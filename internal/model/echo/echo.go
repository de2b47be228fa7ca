// Package echo is agentd's built-in offline model: it answers with the last
// user message. It lets agentd start and be tried on a machine with no model
// configured, and it never touches the network.
package echo

import (
	"context"
	"strings"

	"agentd/internal/model"
)

// Provider is the echo model.
type Provider struct{}

// New returns the echo model.
func New() *Provider { return &Provider{} }

// Stream answers with the text of the last user message, streamed word by word.
func (*Provider) Stream(ctx context.Context, req *model.Request, onDelta func(model.Delta)) (*model.Response, error) {
	var last string
	in := len(req.System)
	for _, m := range req.Messages {
		in += len(m.Content)
		if m.Role == model.RoleUser {
			last = m.Content
		}
	}
	if last == "" {
		last = "(nothing to echo)"
	}
	if onDelta != nil {
		rest := last
		for rest != "" {
			if err := ctx.Err(); err != nil {
				return nil, err
			}
			i := strings.IndexByte(rest, ' ')
			if i < 0 {
				i = len(rest) - 1
			}
			onDelta(model.Delta{Text: rest[:i+1]})
			rest = rest[i+1:]
		}
	}
	return &model.Response{
		Text:       last,
		StopReason: "stop",
		Model:      "echo",
		Usage:      model.Usage{InputTokens: in/4 + 1, OutputTokens: len(last)/4 + 1},
	}, nil
}
