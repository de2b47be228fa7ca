package connector

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"agentd/internal/event"
	"agentd/internal/model"
	"agentd/internal/store"
)

// TestDMReplyDeliveredOnce: a direct message makes one turn, and its
// reply is one message on the platform with the turn's final text.
func TestDMReplyDeliveredOnce(t *testing.T) {
	r := newRig(t, nil)
	r.activate(`,"dm_policy":"open"`)
	if err := r.inbound(dm("k1", "u1", "hello")); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "the reply sent", r.settled(1))
	if diff := cmp.Diff([]string{"re: hello"}, r.p.texts()); diff != "" {
		t.Errorf("messages (-want +got)\n%s", diff)
	}
	rows := r.rows()
	if rows[0].State != store.OutSent || rows[0].MessageIDs[0] != "1" {
		t.Errorf("row = %+v", rows[0])
	}
	// The figures count a delivery just after its row is marked sent.
	waitFor(t, "the delivery counted", func() bool {
		st, _ := r.m.Get(t.Context(), "chat")
		return st.Delivered == 1
	})
	st, _ := r.m.Get(t.Context(), "chat")
	if st.Received != 1 || st.Delivered != 1 || st.State != StateConnecting && st.State != StateConnected {
		t.Errorf("state = %+v", st)
	}
}

// TestRedeliveredInboundNoSecondTurn: a message the platform delivers
// again (same key) starts no second turn and gets no second reply.
func TestRedeliveredInboundNoSecondTurn(t *testing.T) {
	r := newRig(t, nil)
	r.activate(`,"dm_policy":"open"`)
	for range 2 {
		if err := r.inbound(dm("k1", "u1", "hello")); err != nil {
			t.Fatal(err)
		}
	}
	waitFor(t, "the reply sent", r.settled(1))
	if err := r.inbound(dm("k1", "u1", "hello")); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "the reply sent", r.settled(1))
	if n := r.model.Calls(); n != 1 {
		t.Errorf("model calls = %d, want 1", n)
	}
	if got := r.p.texts(); len(got) != 1 {
		t.Errorf("messages = %q, want one", got)
	}
}

// TestPermanentFailure: a reply the platform refuses for good is failed
// at once, with a delivery event in the session; Retry delivers it.
func TestPermanentFailure(t *testing.T) {
	r := newRig(t, nil)
	r.activate(`,"dm_policy":"open"`)
	r.p.fail("send", errors.New("fake: chat not found: "+testToken+": "+ErrPermanent.Error()))
	r.p.fail("send", errors.Join(errors.New("fake: bot blocked by "+testToken), ErrPermanent))
	if err := r.inbound(dm("k1", "u1", "hello")); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "the row failed", r.settled(1))
	it := r.rows()[0]
	if it.State != store.OutFailed {
		t.Fatalf("row = %+v", it)
	}
	noToken(t, "the row's error", it.Error)
	waitFor(t, "the delivery event", func() bool { return len(r.deliveries(it.SessionID)) > 0 })
	ds := r.deliveries(it.SessionID)
	if len(ds) != 1 || ds[0].Op != event.DeliveryFailed || ds[0].Connector != "chat" || ds[0].Turn != it.Turn {
		t.Fatalf("delivery events = %+v\n%s", ds, r.logs.String())
	}
	noToken(t, "the delivery event", ds[0].Error)
	if !strings.Contains(ds[0].Error, "${env:FAKE_TOKEN}") {
		t.Errorf("the error names no reference: %q", ds[0].Error)
	}
	st, _ := r.m.Get(t.Context(), "chat")
	if st.Failed != 1 || st.FailedTotal != 1 {
		t.Errorf("state = %+v", st)
	}
	noToken(t, "the state", st.LastError)
	noToken(t, "the logs", r.logs.String())
	if _, err := r.m.Retry(t.Context(), "chat", it.ID, false); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "the retried row sent", func() bool { return r.rows()[0].State == store.OutSent })
	if diff := cmp.Diff([]string{"re: hello"}, r.p.texts()); diff != "" {
		t.Errorf("messages (-want +got)\n%s", diff)
	}
	waitFor(t, "the retried event", func() bool { return len(r.deliveries(it.SessionID)) > 1 })
	if ds := r.deliveries(it.SessionID); len(ds) != 2 || ds[1].Op != event.DeliveryRetried {
		t.Errorf("delivery events = %+v", ds)
	}
}

// TestRetriesThenDelivers: a rate limit and passing errors are retried;
// a refused markup is sent again as plain text at once; the reply is
// delivered once.
func TestRetriesThenDelivers(t *testing.T) {
	r := newRig(t, &rigOptions{caps: Caps{Dialect: "telegram"}})
	r.activate(`,"dm_policy":"open","delivery":{"backoff":"1ms","max_backoff":"2ms"}`)
	r.p.fail("send", &RetryAfter{D: 1}, errors.New("fake: connection reset"), ErrMarkup)
	if err := r.inbound(dm("k1", "u1", "hello")); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "the reply sent", r.settled(1))
	msgs := r.p.messages()
	if len(msgs) != 1 || msgs[0].Text != "re: hello" || !msgs[0].Plain {
		t.Errorf("messages = %+v", msgs)
	}
	it := r.rows()[0]
	if it.State != store.OutSent || it.Tries != 1 {
		t.Errorf("row = %+v (one try counted: the rate limit is not one)", it)
	}
}

// TestTriesRunOut: a reply whose every try fails is failed after tries.
func TestTriesRunOut(t *testing.T) {
	r := newRig(t, nil)
	r.activate(`,"dm_policy":"open","delivery":{"tries":3,"backoff":"1ms","max_backoff":"1ms"}`)
	for range 3 {
		r.p.fail("send", errors.New("fake: 502"))
	}
	if err := r.inbound(dm("k1", "u1", "hello")); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "the row failed", r.settled(1))
	if it := r.rows()[0]; it.State != store.OutFailed || it.Tries != 3 {
		t.Errorf("row = %+v", it)
	}
	if len(r.p.messages()) != 0 {
		t.Errorf("messages = %+v", r.p.messages())
	}
}

// webhookPlatform receives over HTTP.
type webhookPlatform struct{ *fakePlatform }

func (webhookPlatform) ServeWebhook(w http.ResponseWriter, r *http.Request) {
	w.WriteHeader(http.StatusTeapot)
}

// TestWebhook: the gateway finds the handler of a connector that receives
// over HTTP, and none for one that does not or does not exist.
func TestWebhook(t *testing.T) {
	r := newRig(t, nil)
	r.m.platforms["hook"] = func(Config, PlatformDeps) (Platform, Caps, error) { return webhookPlatform{r.p}, Caps{}, nil }
	r.activate(`,"dm_policy":"open"`)
	r.p.handler(t.Context())
	if _, ok := r.m.Webhook("chat"); ok {
		t.Error("a polling connector has a webhook")
	}
	if _, ok := r.m.Webhook("nothing"); ok {
		t.Error("a connector that does not exist has a webhook")
	}
	if err := r.m.Activate(t.Context(), &store.Extension{Type: "integration", Name: "hooked", Version: 1,
		Spec: json.RawMessage(`{"platform":"hook","token_env":"FAKE_TOKEN","agent":"assistant"}`)}); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "the webhook", func() bool { _, ok := r.m.Webhook("hooked"); return ok })
	h, _ := r.m.Webhook("hooked")
	w := httptest.NewRecorder()
	h.ServeHTTP(w, httptest.NewRequest("POST", "/connectors/hooked/webhook", nil))
	if w.Code != http.StatusTeapot {
		t.Errorf("status %d", w.Code)
	}
}

// uploader is a platform that uploads files: each shows as a message
// "file <url>".
type uploader struct{ *fakePlatform }

func (u uploader) Upload(ctx context.Context, c Chat, f File) (Sent, error) {
	return u.Send(ctx, Outgoing{Chat: c, Text: "file " + f.URL + " " + f.Name + " " + f.Caption, Plain: true})
}

// TestImageLinesUploaded: a reply line that is only a Markdown image
// becomes an upload after the reply's text; on a platform that cannot
// upload it stays text.
func TestImageLinesUploaded(t *testing.T) {
	for _, tc := range []struct {
		name string
		up   bool
		want []string
	}{
		{"uploader", true, []string{"Here is the chart:\nIt rose.", "file https://example.org/c/chart.png chart.png the chart"}},
		{"text only", false, []string{"Here is the chart:\nthe chart (https://example.org/c/chart.png)\nIt rose."}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := newRig(t, nil)
			r.model.Respond = func(ctx context.Context, req *model.Request, onDelta func(model.Delta)) (*model.Response, error) {
				return &model.Response{Text: "Here is the chart:\n![the chart](https://example.org/c/chart.png)\nIt rose.", StopReason: "stop"}, nil
			}
			if tc.up {
				r.m.platforms["fake"] = func(Config, PlatformDeps) (Platform, Caps, error) { return uploader{r.p}, r.p.caps, nil }
			}
			r.activate(`,"dm_policy":"open"`)
			if err := r.inbound(dm("k1", "u1", "chart?")); err != nil {
				t.Fatal(err)
			}
			waitFor(t, "the reply", r.settled(1))
			if diff := cmp.Diff(tc.want, r.p.texts()); diff != "" {
				t.Errorf("messages (-want +got)\n%s", diff)
			}
			if it := r.rows()[0]; it.Parts != len(tc.want) || it.State != store.OutSent {
				t.Errorf("row = %+v", it)
			}
		})
	}
}
