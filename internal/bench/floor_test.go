package bench

import (
	"context"
	"encoding/json"
	"io"
	"testing"
	"time"

	"agentd/internal/gateway/stream"
)

// fakeBase serves the bench's fake model on loopback for the test and
// returns its base URL (…/v1).
func fakeBase(t *testing.T) string {
	t.Helper()
	base, stop, err := startFake(t.Context(), "bench", fakeScript)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(stop)
	return base
}

// The floor server relays chat completions to the fake model, streamed
// through, many at once.
func TestFloorServerRelays(t *testing.T) {
	base := fakeBase(t)
	inR, inW := io.Pipe()
	outR, outW := io.Pipe()
	done := make(chan error, 1)
	go func() { done <- ServeFloor(t.Context(), inR, outW) }()
	json.NewEncoder(inW).Encode(map[string]string{"target": base})
	var a struct{ Addr string }
	if err := json.NewDecoder(outR).Decode(&a); err != nil {
		t.Fatal(err)
	}
	post := completer("http://" + a.Addr + "/v1")
	if _, err := perSecond(t.Context(), 200, 16, func(ctx context.Context, _, _ int) error { return post(ctx) }); err != nil {
		t.Fatal(err)
	}
	inW.Close()
	if err := <-done; err != nil {
		t.Fatal(err)
	}
}

// pipeHelper runs a helper's function in process, talking to it over
// pipes as the bench talks to a helper process.
func pipeHelper(t *testing.T, run func(context.Context, io.Reader, io.Writer) error, cfg any) (send func(any), recv func(any)) {
	t.Helper()
	inR, inW := io.Pipe()
	outR, outW := io.Pipe()
	done := make(chan error, 1)
	go func() { done <- run(t.Context(), inR, outW); outW.Close() }()
	t.Cleanup(func() {
		inW.Close()
		if err := <-done; err != nil {
			t.Error(err)
		}
	})
	enc, dec := json.NewEncoder(inW), json.NewDecoder(outR)
	send = func(v any) {
		if err := enc.Encode(v); err != nil {
			t.Fatal(err)
		}
	}
	recv = func(v any) {
		var raw json.RawMessage
		if err := dec.Decode(&raw); err != nil {
			t.Fatal(err)
		}
		var e struct{ Error string }
		if json.Unmarshal(raw, &e); e.Error != "" {
			t.Fatal(e.Error)
		}
		if err := json.Unmarshal(raw, v); err != nil {
			t.Fatal(err)
		}
	}
	send(cfg)
	return send, recv
}

// The fan-out clients count every text delta the floor server broadcasts
// to each of them, and say so when asked to wait for them.
func TestFanoutClientsCountBroadcast(t *testing.T) {
	_, recvFloor := pipeHelper(t, ServeFloor, map[string]string{"target": fakeBase(t)})
	var a struct{ Addr string }
	recvFloor(&a)
	fs := &floorServer{base: "http://" + a.Addr}
	send, recv := pipeHelper(t, FanoutClients, map[string]any{"url": fs.wsURL(), "subscribers": 5})
	var ready struct{ Ready bool }
	if recv(&ready); !ready.Ready {
		t.Fatal("clients not ready")
	}
	for round := 1; round <= 2; round++ {
		if err := fs.broadcast(t.Context(), fanPieces, time.Millisecond); err != nil {
			t.Fatal(err)
		}
		send(map[string]int{"wait": round * fanPieces})
		var ok struct{ OK bool }
		if recv(&ok); !ok.OK {
			t.Fatalf("round %d not confirmed", round)
		}
	}
	send(map[string]bool{"done": true})
	var r stream.FanoutResult
	recv(&r)
	if r.Subscribers != 5 || r.Events != 2*fanPieces || r.Frames != 5*2*fanPieces || r.P50 <= 0 || r.P99 < r.P50 {
		t.Errorf("%+v", r)
	}
}
