package runtime_test

import (
	"errors"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"agentd/internal/event"
	"agentd/internal/model"
	"agentd/internal/runtime"
	"agentd/internal/store"
	"agentd/internal/testkit"
)

// pngData is enough of a PNG for its content to be taken for one.
var pngData = []byte("\x89PNG\r\n\x1a\n\x00\x00\x00\rIHDR")

// Images are checked before anything is stored: a refused one starts no
// session, no turn and no model call, and the error says why.
func TestBadImagesAreRefused(t *testing.T) {
	e := newEnv(t, setup{})
	ok := model.Image{MIMEType: "image/png", Data: pngData}
	nine := make([]model.Image, model.MaxImages+1)
	for i := range nine {
		nine[i] = ok
	}
	tests := []struct {
		name   string
		images []model.Image
		want   string
	}{
		{"unsupported type", []model.Image{{MIMEType: "image/svg+xml", Data: []byte("<svg onload=alert(1)>")}}, `type "image/svg+xml" not supported`},
		{"declared png, html inside", []model.Image{ok, {MIMEType: "image/png", Data: []byte("<html>")}}, "image 1: bad image: content is text/html"},
		{"declared jpeg, png inside", []model.Image{{MIMEType: "image/jpeg", Data: pngData}}, "declared image/jpeg but the content is image/png"},
		{"empty", []model.Image{{MIMEType: "image/gif"}}, "no data"},
		{"too large", []model.Image{{MIMEType: "image/png", Data: append(append([]byte(nil), pngData...), make([]byte, model.MaxImageBytes)...)}}, "more than 5242880"},
		{"too many", nine, "9 images, at most 8"},
	}
	ctx := t.Context()
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			in := runtime.Input{Session: "a/img", Text: "look", Images: tt.images}
			_, err := e.rt.Submit(ctx, in)
			if !errors.Is(err, runtime.ErrBadImage) || !strings.Contains(err.Error(), tt.want) {
				t.Errorf("Submit: %v, want ErrBadImage saying %q", err, tt.want)
			}
			if _, _, err := e.rt.Send(ctx, in); !errors.Is(err, runtime.ErrBadImage) {
				t.Errorf("Send: %v, want ErrBadImage", err)
			}
			if _, _, err := e.rt.Stream(ctx, in, func(event.Event) error { return nil }); !errors.Is(err, runtime.ErrBadImage) {
				t.Errorf("Stream: %v, want ErrBadImage", err)
			}
		})
	}
	if n := e.p.Calls(); n != 0 {
		t.Errorf("the model was called %d times for refused images", n)
	}
	if _, err := e.st.SessionByAddress(ctx, "a", "img"); !errors.Is(err, store.ErrNotFound) {
		t.Errorf("session a/img: %v, want ErrNotFound", err)
	}
}

// An input's images wait in the inbox across a restart, are logged with the
// input, reach the model, and stay in the context of later turns.
func TestImagesReachTheModelAcrossARestart(t *testing.T) {
	e := newEnv(t, setup{})
	img := model.Image{MIMEType: "image/png", Data: pngData}
	g := e.p.Gate("a:busy")
	e.submit("a/k", "a:busy")
	rc, err := e.rt.Submit(t.Context(), runtime.Input{Session: "a/k", Text: "a:look", Images: []model.Image{img}})
	if err != nil {
		t.Fatal(err)
	}
	recv(t, "the first turn to reach the model", g.Entered)
	e.close()

	p := testkit.NewModel()
	e2 := newEnv(t, setup{path: e.path, p: p})
	e2.start()
	if end := e2.wait(rc.Turn); end.Status != event.StatusDone {
		t.Fatalf("turn: %+v", end)
	}
	reqs := p.Requests("a:look")
	if len(reqs) != 1 {
		t.Fatalf("%d requests for a:look, want 1", len(reqs))
	}
	msgs := reqs[0].Messages
	if diff := cmp.Diff([]model.Image{img}, msgs[len(msgs)-1].Images); diff != "" {
		t.Errorf("images sent (-want +got):\n%s", diff)
	}
	evs := e2.turnEvents(rc.SessionID, rc.Turn)
	if len(evs) == 0 || evs[0].Kind != event.Input {
		t.Fatalf("turn events %v", kinds(evs))
	}
	want := []event.ImageRef{{MIMEType: "image/png", Size: len(pngData), Data: pngData}}
	if diff := cmp.Diff(want, decode[event.InputData](t, evs[0]).Images); diff != "" {
		t.Errorf("logged images (-want +got):\n%s", diff)
	}

	// A later turn still sends the image, with the context in memory and
	// read again from the log.
	for _, fresh := range []bool{false, true} {
		e3 := e2
		text := "a:again"
		if fresh {
			e2.close()
			e3 = newEnv(t, setup{path: e.path, p: p})
			text = "a:fresh"
		}
		if _, end, err := e3.rt.Send(t.Context(), runtime.Input{Session: "a/k", Text: text}); err != nil || end.Status != event.StatusDone {
			t.Fatalf("Send %s: %+v, %v", text, end, err)
		}
		var seen []model.Image
		for _, m := range p.Requests(text)[0].Messages {
			seen = append(seen, m.Images...)
		}
		if diff := cmp.Diff([]model.Image{img}, seen); diff != "" {
			t.Errorf("%s: images in the context (-want +got):\n%s", text, diff)
		}
	}
}

// A silent system message keeps its images for the next turn.
func TestSilentMessageImages(t *testing.T) {
	e := newEnv(t, setup{})
	img := model.Image{MIMEType: "image/png", Data: pngData}
	rc, err := e.rt.Submit(t.Context(), runtime.Input{Session: "a/k", Text: "camera 1", System: true, Silent: true, Images: []model.Image{img}})
	if err != nil {
		t.Fatal(err)
	}
	e.wait(rc.Turn)
	if _, _, err := e.rt.Send(t.Context(), runtime.Input{Session: "a/k", Text: "a:what"}); err != nil {
		t.Fatal(err)
	}
	msgs := e.p.Requests("a:what")[0].Messages
	if diff := cmp.Diff([]model.Image{img}, msgs[0].Images); diff != "" {
		t.Errorf("images of the silent message (-want +got):\n%s", diff)
	}
}
