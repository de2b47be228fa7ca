package anthropic_test

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"

	"agentd/internal/model"
	"agentd/internal/model/anthropic"
)

func Example() {
	// A stand-in for the Anthropic API.
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/event-stream")
		io.WriteString(w, "event: message_start\ndata: {\"type\":\"message_start\",\"message\":{\"model\":\"claude-sonnet-4-20250514\",\"usage\":{\"input_tokens\":20,\"output_tokens\":1}}}\n\n")
		io.WriteString(w, "event: content_block_start\ndata: {\"type\":\"content_block_start\",\"index\":0,\"content_block\":{\"type\":\"tool_use\",\"id\":\"toolu_1\",\"name\":\"get_weather\",\"input\":{}}}\n\n")
		io.WriteString(w, "event: content_block_delta\ndata: {\"type\":\"content_block_delta\",\"index\":0,\"delta\":{\"type\":\"input_json_delta\",\"partial_json\":\"{\\\"city\\\": \"}}\n\n")
		io.WriteString(w, "event: content_block_delta\ndata: {\"type\":\"content_block_delta\",\"index\":0,\"delta\":{\"type\":\"input_json_delta\",\"partial_json\":\"\\\"Oslo\\\"}\"}}\n\n")
		io.WriteString(w, "event: content_block_stop\ndata: {\"type\":\"content_block_stop\",\"index\":0}\n\n")
		io.WriteString(w, "event: message_delta\ndata: {\"type\":\"message_delta\",\"delta\":{\"stop_reason\":\"tool_use\"},\"usage\":{\"output_tokens\":15}}\n\n")
		io.WriteString(w, "event: message_stop\ndata: {\"type\":\"message_stop\"}\n\n")
	}))
	defer srv.Close()

	client := anthropic.New(&anthropic.Options{BaseURL: srv.URL, APIKey: "sk-ant-example"})
	resp, err := client.Stream(context.Background(), &model.Request{
		Model:    "claude-sonnet-4-20250514",
		System:   "You report the weather.",
		Messages: []model.Message{{Role: model.RoleUser, Content: "Weather in Oslo?"}},
		Tools:    []model.ToolSpec{{Name: "get_weather", Parameters: []byte(`{"type":"object","properties":{"city":{"type":"string"}}}`)}},
	}, nil)
	if err != nil {
		fmt.Println("error:", err)
		return
	}
	for _, tc := range resp.ToolCalls {
		fmt.Printf("%s %s(%s)\n", tc.ID, tc.Name, tc.Args)
	}
	fmt.Printf("stop=%s, %d in / %d out\n", resp.StopReason, resp.Usage.InputTokens, resp.Usage.OutputTokens)
	// Output:
	// toolu_1 get_weather({"city": "Oslo"})
	// stop=tool_use, 20 in / 15 out
}
