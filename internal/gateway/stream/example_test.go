package stream_test

import (
	"context"
	"encoding/json"
	"fmt"
	"log"
	"net/http"
	"net/http/httptest"
	"os"
	"strings"

	"github.com/coder/websocket"

	"agentd/internal/gateway/stream"
	"agentd/internal/runtime"
	"agentd/internal/testkit"
)

// ExampleNew streams a session's events from the runtime: the client
// subscribes from the start of the log, a turn runs, and the client reads
// it as it is logged.
func ExampleNew() {
	dir, err := os.MkdirTemp("", "stream-example")
	if err != nil {
		log.Fatal(err)
	}
	defer os.RemoveAll(dir)
	ctx := context.Background()
	// A runtime over SQLite whose agent answers with the echo model.
	k, err := testkit.Open(ctx, dir, &testkit.Options{Agents: testkit.Agents{"assistant": testkit.Agent("assistant")}})
	if err != nil {
		log.Fatal(err)
	}
	defer k.Close()
	rt := k.Runtime

	// The runtime reads the log and the bus; the store lists sessions.
	h := stream.New(stream.Join(rt, k.Store), nil)
	defer h.Close()
	srv := httptest.NewServer(h)
	defer srv.Close()

	ws, _, err := websocket.Dial(ctx, "ws"+strings.TrimPrefix(srv.URL, "http")+"/v1/stream", nil)
	if err != nil {
		log.Fatal(err)
	}
	defer ws.CloseNow()
	sub := `{"type":"subscribe","id":"s1","session":"assistant/chat:alice","after":0}`
	if err := ws.Write(ctx, websocket.MessageText, []byte(sub)); err != nil {
		log.Fatal(err)
	}
	if _, _, err := rt.Send(ctx, runtime.Input{Session: "assistant/chat:alice", Text: "hello there", Source: "api"}); err != nil {
		log.Fatal(err)
	}
	// Print the stored events (live ones, such as text-delta, may come
	// between them in any order) until the turn's end.
	for {
		_, b, err := ws.Read(ctx)
		if err != nil {
			log.Fatal(err)
		}
		var f struct {
			Type, Sub, Kind string
			Seq             int64
		}
		json.Unmarshal(b, &f)
		if f.Type == "event" && f.Seq > 0 {
			fmt.Println(f.Sub, f.Seq, f.Kind)
		}
		if f.Kind == "turn-end" {
			break
		}
	}
	// Output:
	// s1 1 input
	// s1 2 model-call
	// s1 3 text
	// s1 4 turn-end
}

// ExampleBenchFanout measures a running daemon: 1,000 clients watch an
// agent that echoes, and each message of 20 words publishes 20 text
// deltas to all of them.
func ExampleBenchFanout() {
	ctx := context.Background()
	base, token := "127.0.0.1:8080", os.Getenv("AGENTD_TOKEN")
	auth := http.Header{"Authorization": {"Bearer " + token}}
	text := strings.TrimSpace(strings.Repeat("word ", 20))
	publish := func(ctx context.Context) (int, error) {
		body := strings.NewReader(fmt.Sprintf(`{"text":%q}`, text))
		req, err := http.NewRequestWithContext(ctx, "POST", "http://"+base+"/v1/sessions/bench/fanout/messages?wait=true", body)
		if err != nil {
			return 0, err
		}
		req.Header = auth.Clone()
		req.Header.Set("Content-Type", "application/json")
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			return 0, err
		}
		resp.Body.Close()
		if resp.StatusCode != http.StatusOK {
			return 0, fmt.Errorf("message: %s", resp.Status)
		}
		return len(strings.Fields(text)), nil // the echo model streams one delta a word
	}
	res, err := stream.BenchFanout(ctx, "ws://"+base+"/v1/stream?session=bench/fanout",
		&websocket.DialOptions{HTTPHeader: auth}, 1000, 2000, publish)
	if err != nil {
		log.Fatal(err)
	}
	fmt.Printf("p50 %v, p99 %v\n", res.P50, res.P99)

	// And what 10,000 idle connections cost it.
	closeAll, err := stream.HoldIdle(ctx, "ws://"+base+"/v1/stream?agent=bench", &websocket.DialOptions{HTTPHeader: auth}, 10000)
	if err != nil {
		log.Fatal(err)
	}
	defer closeAll()
	// ... read the daemon's resident memory here.
}
