package openaiapi_test

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"image"
	"image/color"
	"image/png"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"agentd/internal/event"
	"agentd/internal/gateway"
	"agentd/internal/gateway/openaiapi"
	"agentd/internal/model"
	"agentd/internal/store"
)

// pngImage returns a small PNG image.
func pngImage(t testing.TB) []byte {
	t.Helper()
	m := image.NewRGBA(image.Rect(0, 0, 2, 2))
	m.Set(0, 0, color.RGBA{R: 255, A: 255})
	var b bytes.Buffer
	if err := png.Encode(&b, m); err != nil {
		t.Fatal(err)
	}
	return b.Bytes()
}

// imagePart is an image_url content part holding url.
func imagePart(url string) string {
	return `{"type":"image_url","image_url":{"url":"` + url + `","detail":"auto"}}`
}

// inputImages returns the images of a session's input events.
func (e *env) inputImages(t testing.TB, addr string) [][]event.ImageRef {
	t.Helper()
	_, evs, err := e.rt.Events(t.Context(), addr, 0, 1000)
	if err != nil {
		t.Fatalf("events of %s: %v", addr, err)
	}
	var out [][]event.ImageRef
	for _, ev := range evs {
		if ev.Kind == event.Input {
			var d event.InputData
			if err := ev.Decode(&d); err != nil {
				t.Fatal(err)
			}
			out = append(out, d.Images)
		}
	}
	return out
}

// The last user message's images reach the agent's model; an earlier
// message's image is mentioned in the new session's transcript and not sent.
func TestImages(t *testing.T) {
	e := newEnv(t)
	pic := pngImage(t)
	url := "data:image/png;base64," + base64.StdEncoding.EncodeToString(pic)
	body := `{"model":"assistant","messages":[
		{"role":"user","content":[{"type":"text","text":"an old one"},` + imagePart(url) + `]},
		{"role":"assistant","content":"nice"},
		{"role":"user","content":[{"type":"text","text":"picture: what is this?"},` + imagePart(url) + `]}]}`
	r := e.post(t, body)
	var c openaiapi.ChatCompletion
	if err := json.Unmarshal(r.body, &c); err != nil || r.status != 200 {
		t.Fatalf("%d %s %v", r.status, r.body, err)
	}
	if got := c.Choices[0].Message.Content; got != "I see 1 image(s)." {
		t.Errorf("reply %q, want the model to see 1 image", got)
	}
	key := r.header.Get(openaiapi.SessionHeader)
	addr := "assistant/openai:" + key
	want := "<conversation_so_far>\n<user>\nan old one\n[image]\n</user>\n<assistant>\nnice\n</assistant>\n</conversation_so_far>\n\npicture: what is this?"
	if d := cmp.Diff([]string{want}, e.inputs(t, addr)); d != "" {
		t.Errorf("inputs (-want +got):\n%s", d)
	}
	imgs := e.inputImages(t, addr)
	if len(imgs) != 1 || len(imgs[0]) != 1 || imgs[0][0].MIMEType != "image/png" || !bytes.Equal(imgs[0][0].Data, pic) {
		t.Errorf("logged images %+v", imgs)
	}

	// Continued, streamed: the session holds the image, so the model still
	// gets it; only the new message is sent.
	cs, raw, done := chunks(t, e.post(t, `{"model":"assistant","stream":true,"messages":[{"role":"user","content":"picture again"}]}`,
		openaiapi.SessionHeader, key))
	if !done || content(cs) != "I see 1 image(s)." {
		t.Errorf("continued stream %q", raw)
	}
	if got := e.inputs(t, addr); len(got) != 2 || got[1] != "picture again" {
		t.Errorf("inputs %q", got)
	}

	// A JPEG spelled image/jpg is a JPEG; several images in one message.
	jpeg := append([]byte{0xff, 0xd8, 0xff, 0xe0}, make([]byte, 32)...)
	parts := []string{`{"type":"text","text":"picture three"}`, imagePart("data:image/jpg;base64," + base64.StdEncoding.EncodeToString(jpeg))}
	for range model.MaxImages - 1 {
		parts = append(parts, imagePart(url))
	}
	r = e.post(t, `{"model":"assistant","messages":[{"role":"user","content":[`+strings.Join(parts, ",")+`]}]}`)
	if err := json.Unmarshal(r.body, &c); err != nil || r.status != 200 {
		t.Fatalf("%d %s %v", r.status, r.body, err)
	}
	if got, want := c.Choices[0].Message.Content, fmt.Sprintf("I see %d image(s).", model.MaxImages); got != want {
		t.Errorf("reply %q, want %q", got, want)
	}
	if imgs := e.inputImages(t, "assistant/openai:"+r.header.Get(openaiapi.SessionHeader)); len(imgs) != 1 || len(imgs[0]) != model.MaxImages || imgs[0][0].MIMEType != "image/jpeg" {
		t.Errorf("logged images %+v", imgs)
	}
}

// Every image this API cannot pass on is refused with a 400 naming its
// part, before anything reaches a session.
func TestImageErrors(t *testing.T) {
	e := newEnv(t)
	pic := pngImage(t)
	b64 := base64.StdEncoding.EncodeToString(pic)
	if !strings.HasSuffix(b64, "=") {
		t.Fatalf("the test image's base64 %q has no padding to leave out", b64)
	}
	good := imagePart("data:image/png;base64," + b64)
	msg := func(parts ...string) string {
		return `{"model":"assistant","messages":[{"role":"user","content":[{"type":"text","text":"what is this?"},` + strings.Join(parts, ",") + `]}]}`
	}
	many := make([]string, model.MaxImages+1)
	for i := range many {
		many[i] = good
	}
	huge := append(bytes.Clone(pic), make([]byte, model.MaxImageBytes)...)
	for _, tc := range []struct {
		name, body string
		param      string
		code       string
		msg        string
	}{
		{name: "not base64", body: msg(imagePart("data:image/png;base64,not*base64")), param: "messages[0].content[1]", msg: "not valid base64"},
		{name: "unpadded", body: msg(imagePart("data:image/png;base64," + strings.TrimRight(b64, "="))), param: "messages[0].content[1]", msg: "padded"},
		{name: "URL-safe", body: msg(imagePart("data:image/png;base64," + base64.URLEncoding.EncodeToString([]byte{0xfb, 0xff, 0xbf}))), param: "messages[0].content[1]", msg: "standard alphabet"},
		{name: "not a base64 data URL", body: msg(imagePart("data:image/png,rawbytes")), param: "messages[0].content[1]", msg: "base64"},
		{name: "empty data", body: msg(imagePart("data:image/png;base64,")), param: "messages[0].content[1]", msg: "no data"},
		{name: "http URL", body: msg(imagePart("https://example.com/cat.png")), param: "messages[0].content[1]", code: "unsupported_parameter", msg: "image URLs are not fetched; send the image as a data: URL"},
		{name: "plain http URL", body: msg(imagePart("HTTP://127.0.0.1:7420/v1/agents")), param: "messages[0].content[1]", code: "unsupported_parameter", msg: "not fetched"},
		{name: "file URL", body: msg(imagePart("file:///etc/passwd")), param: "messages[0].content[1]", msg: "data: URL"},
		{name: "no URL", body: msg(`{"type":"image_url","image_url":{}}`), param: "messages[0].content[1]", msg: "data: URL"},
		{name: "image_url a string", body: msg(`{"type":"image_url","image_url":"data:image/png;base64,` + b64 + `"}`), param: "messages[0].content[1]", msg: "object"},
		{name: "bad detail", body: msg(`{"type":"image_url","image_url":{"url":"data:image/png;base64,` + b64 + `","detail":"ultra"}}`), param: "messages[0].content[1]", msg: "detail"},
		{name: "too many", body: msg(many...), param: fmt.Sprintf("messages[0].content[%d]", model.MaxImages+1), msg: fmt.Sprintf("more than %d images", model.MaxImages)},
		{name: "type mismatch", body: msg(good, imagePart("data:image/jpeg;base64,"+b64)), param: "messages[0].content[2]", msg: "declared image/jpeg but the content is image/png"},
		{name: "unsupported type", body: msg(imagePart("data:image/bmp;base64,Qk0=")), param: "messages[0].content[1]", msg: `"image/bmp" is not supported`},
		{name: "not an image", body: msg(imagePart("data:image/png;base64," + base64.StdEncoding.EncodeToString([]byte("<html>hi</html>")))), param: "messages[0].content[1]", msg: "content is text/html"},
		{name: "too big", body: msg(imagePart("data:image/png;base64," + base64.StdEncoding.EncodeToString(huge))), param: "messages[0].content[1]", msg: "larger than"},
		{name: "in an earlier message", body: `{"model":"assistant","messages":[{"role":"user","content":[` + imagePart("data:image/gif;base64,"+b64) + `]},{"role":"user","content":"hi"}]}`,
			param: "messages[0].content[0]", msg: "declared image/gif"},
		{name: "in an assistant message", body: `{"model":"assistant","messages":[{"role":"assistant","content":[` + good + `]},{"role":"user","content":"hi"}]}`,
			param: "messages[0].content[0]", msg: "only user messages"},
		{name: "in a system message", body: `{"model":"assistant","messages":[{"role":"system","content":[` + good + `]},{"role":"user","content":"hi"}]}`,
			param: "messages[0].content[0]", msg: "only user messages"},
		{name: "an image without text", body: `{"model":"assistant","messages":[{"role":"user","content":[` + good + `]}]}`, param: "messages", msg: "with text"},
		{name: "a Responses API part", body: msg(`{"type":"input_image","image_url":"data:image/png;base64,` + b64 + `"}`), param: "messages[0].content[1].type", msg: "image_url part"},
		{name: "audio", body: msg(`{"type":"input_audio","input_audio":{"data":"AAAA","format":"wav"}}`), param: "messages[0].content[1]", code: "unsupported_parameter", msg: "audio"},
		{name: "file", body: msg(`{"type":"file","file":{"file_data":"AAAA"}}`), param: "messages[0].content[1]", code: "unsupported_parameter", msg: "files"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			for _, stream := range []string{"false", "true"} {
				body := strings.Replace(tc.body, `{"model":"assistant",`, `{"model":"assistant","stream":`+stream+`,`, 1)
				o := checkError(t, e.post(t, body), 400, "invalid_request_error", tc.param, tc.code)
				if !strings.Contains(o.Message, tc.msg) {
					t.Errorf("message %q lacks %q", o.Message, tc.msg)
				}
				if len(o.Message) > 400 {
					t.Errorf("message of %d bytes", len(o.Message))
				}
			}
		})
	}
	sessions, err := e.st.Sessions(t.Context(), store.SessionFilter{})
	if err != nil || len(sessions) != 0 {
		t.Errorf("refused requests made sessions: %v %v", sessions, err)
	}
}

// The default bound of a body is the gateway's bound for a message, and
// holds an image of the largest size.
func TestDefaultMaxBody(t *testing.T) {
	if openaiapi.DefaultMaxBody != gateway.MaxMessageBody {
		t.Errorf("DefaultMaxBody %d, gateway.MaxMessageBody %d", openaiapi.DefaultMaxBody, gateway.MaxMessageBody)
	}
	e := newEnv(t)
	big := append(pngImage(t), make([]byte, model.MaxImageBytes)...)[:model.MaxImageBytes]
	r := e.post(t, `{"model":"assistant","messages":[{"role":"user","content":[{"type":"text","text":"picture, a big one"},`+
		imagePart("data:image/png;base64,"+base64.StdEncoding.EncodeToString(big))+`]}]}`)
	var c openaiapi.ChatCompletion
	if err := json.Unmarshal(r.body, &c); err != nil || r.status != 200 || c.Choices[0].Message.Content != "I see 1 image(s)." {
		t.Fatalf("%d %.300s %v", r.status, r.body, err)
	}
}
