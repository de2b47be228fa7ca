package engine

import (
	"context"
	"encoding/json"
	"testing"

	"github.com/google/go-cmp/cmp"

	"agentd/internal/agent"
	"agentd/internal/event"
	"agentd/internal/model"
	"agentd/internal/tool"
)

// An input's images and a tool's images are logged and sent to the model.
func TestTurnImages(t *testing.T) {
	png := model.Image{MIMEType: "image/png", Data: []byte("\x89PNG\r\n\x1a\n-in")}
	shot := model.Image{MIMEType: "image/png", Data: []byte("\x89PNG\r\n\x1a\n-shot")}
	p := &script{resps: []func(*model.Request) (*model.Response, error){
		calls(model.ToolCall{ID: "c1", Name: "camera", Args: json.RawMessage(`{}`)}), text("two dots")}}
	h := newHarness(t, models{"m": p})
	err := h.tools.Register(tool.Func(tool.Spec{Name: "camera", InputSchema: json.RawMessage(`{"type":"object"}`)},
		func(context.Context, *tool.Call) (tool.Result, error) {
			return tool.Result{Output: "[image image/png, 12 bytes]", Images: []model.Image{shot}}, nil
		}))
	if err != nil {
		t.Fatal(err)
	}
	tt := turn(&agent.Definition{})
	tt.Item.Images = ImageRefs([]model.Image{png})
	end, err := h.run(context.Background(), tt)
	if err != nil || end.Status != event.StatusDone {
		t.Fatalf("end %+v, err %v", end, err)
	}
	if len(p.reqs) != 2 {
		t.Fatalf("%d model calls, want 2", len(p.reqs))
	}
	if diff := cmp.Diff([]model.Image{png}, p.reqs[0].Messages[0].Images); diff != "" {
		t.Errorf("first request: input images (-want +got):\n%s", diff)
	}
	msgs := p.reqs[1].Messages
	if last := msgs[len(msgs)-1]; last.Role != model.RoleTool || !cmp.Equal([]model.Image{shot}, last.Images) {
		t.Errorf("second request ends with %+v, want the tool result with its image", last)
	}
	var logged []event.ImageRef
	for _, e := range h.log.events {
		switch e.Kind {
		case event.Input:
			var d event.InputData
			e.Decode(&d)
			logged = append(logged, d.Images...)
		case event.ToolResult:
			var d event.ToolResultData
			e.Decode(&d)
			logged = append(logged, d.Images...)
		}
	}
	if diff := cmp.Diff(ImageRefs([]model.Image{png, shot}), logged); diff != "" {
		t.Errorf("logged images (-want +got):\n%s", diff)
	}
	// The log alone gives the same conversation back.
	if diff := cmp.Diff(append(p.reqs[1].Messages, model.Message{Role: model.RoleAssistant, Content: "two dots"}), Messages(h.log.events)); diff != "" {
		t.Errorf("context from the log (-want +got):\n%s", diff)
	}
}
