package bench

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httputil"
	"net/url"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/coder/websocket"

	"agentd/internal/jsonstr"
)

// The floor server is `agentd bench floor-server`: a bare Go HTTP relay in
// front of the fake model (net/http/httputil.ReverseProxy, streaming
// through), the least a daemon that answers a client with a model's reply
// can do; and a bare WebSocket broadcast of text-delta frames shaped as
// agentd's, one writer goroutine and one frame a write per connection: the
// simplest fan-out (it joins nothing and gathers no writes, so a server
// that does can beat it when writes fall behind). It runs in a process of
// its own, as agentd serve does, so that its start, CPU and memory are
// measured the same way.

// fanText is the reply the fan agent streams (fakeScript) and the floor
// broadcasts: about a hundred pieces a second.
const fanText = "Streaming text arrives in pieces, about a hundred a second, as a fast model sends it to every watching client."

// ServeFloor runs the floor server: it reads {"target": "<the fake
// model's base URL>"} from in, listens on loopback, answers {"addr":
// "host:port"} on out, and serves until in closes or ctx ends. Routes:
// /v1/… relayed to the target; GET /ws, a WebSocket that is sent
// {"type":"subscribed","sub":"url"} and then every broadcast frame; POST
// /broadcast?n=20&gap=10ms, n text-delta frames gap apart to every
// WebSocket, answered once the last is handed to every connection.
func ServeFloor(ctx context.Context, in io.Reader, out io.Writer) error {
	h := newHelperIO(in, out)
	var cfg struct{ Target string }
	if err := h.dec.Decode(&cfg); err != nil {
		return fmt.Errorf("bench: floor server: %w", err)
	}
	target, err := url.Parse(cfg.Target)
	if err != nil || target.Host == "" {
		return h.fail(fmt.Errorf("bench: floor server: target %q", cfg.Target))
	}
	target.Path = ""
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return h.fail(err)
	}
	b := &broadcaster{conns: map[chan []byte]struct{}{}}
	mux := http.NewServeMux()
	relay := &httputil.ReverseProxy{
		Rewrite:       func(r *httputil.ProxyRequest) { r.SetURL(target) },
		FlushInterval: -1,
		Transport:     &http.Transport{MaxIdleConnsPerHost: 512},
	}
	mux.HandleFunc("/v1/", func(w http.ResponseWriter, r *http.Request) {
		// The request whole before the model is called, as a daemon has
		// it; streaming it through would race the reply, since net/http
		// closes a request's body once its handler answers.
		body, err := io.ReadAll(r.Body)
		if err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		r.Body = io.NopCloser(bytes.NewReader(body))
		relay.ServeHTTP(w, r)
	})
	mux.HandleFunc("GET /ws", b.accept)
	mux.HandleFunc("POST /broadcast", b.broadcast)
	srv := &http.Server{Handler: mux, ReadHeaderTimeout: 10 * time.Second}
	go srv.Serve(ln)
	defer srv.Close()
	if err := h.enc.Encode(map[string]string{"addr": ln.Addr().String()}); err != nil {
		return err
	}
	done := make(chan struct{})
	go func() {
		defer close(done)
		for {
			var x json.RawMessage
			if h.dec.Decode(&x) != nil {
				return
			}
		}
	}()
	select {
	case <-done:
	case <-ctx.Done():
	}
	return nil
}

// broadcaster is the floor's fan-out: a channel and a writer goroutine a
// connection.
type broadcaster struct {
	mu    sync.Mutex
	conns map[chan []byte]struct{}
}

func (b *broadcaster) accept(w http.ResponseWriter, r *http.Request) {
	ws, err := websocket.Accept(w, r, &websocket.AcceptOptions{CompressionMode: websocket.CompressionDisabled})
	if err != nil {
		return
	}
	defer ws.CloseNow()
	ctx := ws.CloseRead(context.Background())
	// Registered before "subscribed" is sent: a client told it is
	// subscribed gets every broadcast from then on.
	ch := make(chan []byte, 1024)
	b.mu.Lock()
	b.conns[ch] = struct{}{}
	b.mu.Unlock()
	defer func() {
		b.mu.Lock()
		delete(b.conns, ch)
		b.mu.Unlock()
	}()
	if ws.Write(ctx, websocket.MessageText, []byte(`{"type":"subscribed","sub":"url"}`)) != nil {
		return
	}
	for {
		select {
		case f := <-ch:
			if ws.Write(ctx, websocket.MessageText, f) != nil {
				return
			}
		case <-ctx.Done():
			return
		}
	}
}

func (b *broadcaster) broadcast(w http.ResponseWriter, r *http.Request) {
	n, _ := strconv.Atoi(r.URL.Query().Get("n"))
	gap, _ := time.ParseDuration(r.URL.Query().Get("gap"))
	if n <= 0 {
		http.Error(w, "n must be positive", http.StatusBadRequest)
		return
	}
	pieces := split(fanText, n)
	for i, p := range pieces {
		if i > 0 {
			time.Sleep(gap)
		}
		f := deltaFrame(p, time.Now())
		b.mu.Lock()
		for ch := range b.conns {
			select {
			case ch <- f:
			default: // a connection that far behind is not the floor's concern
			}
		}
		b.mu.Unlock()
	}
}

// deltaFrame is a text-delta frame as agentd's stream sends it.
func deltaFrame(text string, t time.Time) []byte {
	f := []byte(`{"type":"event","sub":"url","session":"fan/floor","session_id":1,"seq":0,"turn":1,"kind":"text-delta","time":"`)
	f = t.UTC().AppendFormat(f, time.RFC3339Nano)
	f = append(f, `","data":{"text":`...)
	f = jsonstr.Append(f, text)
	return append(f, `,"step":1,"attempt":1}}`...)
}

// split cuts s into n pieces of about the same length.
func split(s string, n int) []string {
	out := make([]string, 0, n)
	for i := range n {
		out = append(out, s[i*len(s)/n:(i+1)*len(s)/n])
	}
	return out
}

// floorServer is a running floor server, as the bench sees it.
type floorServer struct {
	h    *helper
	base string // http://host:port
}

func startFloorServer(ctx context.Context, exe, target string) (*floorServer, error) {
	var a struct{ Addr string }
	h, err := startHelper(ctx, exe, "floor-server", map[string]string{"target": target}, &a)
	if err != nil {
		return nil, err
	}
	return &floorServer{h: h, base: "http://" + a.Addr}, nil
}

// broadcast has the floor server send n text-delta frames gap apart to
// its WebSockets; it returns when the last is handed to every connection.
func (f *floorServer) broadcast(ctx context.Context, n int, gap time.Duration) error {
	req, err := http.NewRequestWithContext(ctx, "POST", fmt.Sprintf("%s/broadcast?n=%d&gap=%s", f.base, n, gap), nil)
	if err != nil {
		return err
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	if resp.StatusCode != 200 {
		b, _ := io.ReadAll(resp.Body)
		return fmt.Errorf("bench: floor broadcast: %s: %s", resp.Status, strings.TrimSpace(string(b)))
	}
	return nil
}

func (f *floorServer) wsURL() string {
	return "ws" + strings.TrimPrefix(f.base, "http") + "/ws?agent=fan"
}

func (f *floorServer) stop() { f.h.stop() }
