package openaiapi

import (
	"log/slog"
	"testing"

	"agentd/internal/model"
)

// An image the runtime refuses (runtime.ErrBadImage) is the client's
// error, and says why in one clean line: the checker's reason only.
func TestBadImageFromRuntime(t *testing.T) {
	h := &handler{log: slog.New(slog.DiscardHandler)}
	err := model.CheckImages([]model.Image{{MIMEType: "image/png", Data: seedPNGBytes(t)}, {MIMEType: "image/jpeg\x1b[31m\n", Data: []byte("x")}})
	e := h.fromRuntime("assistant", err)
	if e.status != 400 || e.typ != typeInvalid || e.param != "messages" || e.code != "" || e.retryAfter != 0 {
		t.Fatalf("error %+v", e)
	}
	const want = `an image of the last user message was refused: image 1: bad image: type "image/jpeg\x1b[31m\n" not supported (want image/png, image/jpeg, image/gif or image/webp)`
	if e.message != want {
		t.Errorf("message %q, want %q", e.message, want)
	}
}
