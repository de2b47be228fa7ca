package main

import (
	"encoding/base64"
	"encoding/json"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"agentd/internal/event"
)

// imagesScript answers every turn with the number of images the model was
// sent.
const imagesScript = "match *\nsay {{images}} image(s) in context\n"

// An image sent with `agentd send --image` reaches the model, is in the
// log, and is still in the context after a restart, in both wire formats.
func TestSendImage(t *testing.T) {
	dot, err := filepath.Abs(filepath.Join("testdata", "dot.png"))
	if err != nil {
		t.Fatal(err)
	}
	png, err := os.ReadFile(dot)
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct{ name, def string }{
		{"openai", openaiAgent(fake(t, imagesScript), "")},
		{"anthropic", "model:\n  provider: anthropic\n  name: claude-fake\n  api_key_env: AGENTD_TEST_KEY\n  base_url: http://" + fake(t, imagesScript) + "\n"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := dataDir(t, map[string]string{"agents/eye.yaml": tc.def})
			r := run(t, dir, "send", "--session", "pics", "--image", dot, "eye", "what is in this picture?")
			if r.code != 0 {
				t.Fatalf("send --image: %+v", r)
			}
			mustContain(t, r.stdout, "1 image(s) in context")

			// The log holds the image: type, size and bytes.
			r = run(t, dir, "log", "--json", "eye/pics")
			evs, _ := jsonEvents(t, r.stdout)
			var in event.InputData
			for _, e := range evs {
				if e.Kind == event.Input {
					if err := e.Decode(&in); err != nil {
						t.Fatal(err)
					}
					break
				}
			}
			if len(in.Images) != 1 || in.Images[0].MIMEType != "image/png" || in.Images[0].Size != len(png) || string(in.Images[0].Data) != string(png) {
				t.Fatalf("logged input %q has images %+v, want the %d-byte PNG", in.Text, in.Images, len(png))
			}

			// Each run is a new process: the context comes from the log,
			// in process and through a daemon.
			r = run(t, dir, "send", "--session", "pics", "eye", "and now?")
			if r.code != 0 {
				t.Fatalf("send: %+v", r)
			}
			mustContain(t, r.stdout, "1 image(s) in context")
			d := serve(t, dir)
			r = run(t, dir, "send", "--session", "pics", "eye", "still there?")
			mustContain(t, r.stdout, "1 image(s) in context")
			d.kill()
			r = run(t, dir, "send", "--session", "other", "eye", "a new session")
			mustContain(t, r.stdout, "0 image(s) in context")
		})
	}
}

// Files that are not images agentd takes are refused before anything is
// sent, whatever their name says.
func TestSendImageRefused(t *testing.T) {
	dir := dataDir(t, map[string]string{"agents/eye.yaml": openaiAgent(fake(t, imagesScript), "")})
	fakePNG := filepath.Join(t.TempDir(), "photo.png")
	if err := os.WriteFile(fakePNG, []byte("<svg xmlns='http://www.w3.org/2000/svg'/>"), 0o600); err != nil {
		t.Fatal(err)
	}
	r := run(t, dir, "send", "--image", fakePNG, "eye", "look")
	if r.code != 2 || !strings.Contains(r.stderr, "bad image: content is text/") {
		t.Fatalf("send --image of an SVG: %+v", r)
	}
	r = run(t, dir, "send", "--image", filepath.Join(t.TempDir(), "missing.png"), "eye", "look")
	if r.code != 2 || !strings.Contains(r.stderr, "missing.png") {
		t.Fatalf("send --image of a missing file: %+v", r)
	}
	r = run(t, dir, "sessions")
	if strings.Contains(r.stdout, "eye/") {
		t.Errorf("a refused image made a session:\n%s", r.stdout)
	}
}

// The API refuses a bad image with a 400 that says why.
func TestAPIRefusesBadImages(t *testing.T) {
	dir := dataDir(t, map[string]string{"agents/eye.yaml": openaiAgent(fake(t, imagesScript), "")})
	serve(t, dir)
	png, err := os.ReadFile(filepath.Join("testdata", "dot.png"))
	if err != nil {
		t.Fatal(err)
	}
	img := func(mime string, data []byte) map[string]string {
		return map[string]string{"mime_type": mime, "data": base64.StdEncoding.EncodeToString(data)}
	}
	nine := make([]map[string]string, 9)
	for i := range nine {
		nine[i] = img("image/png", png)
	}
	for _, tc := range []struct {
		name   string
		images any
		want   string
	}{
		{"html declared png", []any{img("image/png", []byte("<html><script>alert(1)</script>"))}, "bad image: content is text/html"},
		{"png declared jpeg", []any{img("image/jpeg", png)}, "declared image/jpeg but the content is image/png"},
		{"svg", []any{img("image/svg+xml", []byte("<svg/>"))}, `type \"image/svg+xml\" not supported`},
		{"too many", nine, "9 images, at most 8"},
		{"not base64", []any{map[string]string{"mime_type": "image/png", "data": "%%%"}}, "illegal base64"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			body, _ := json.Marshal(map[string]any{"text": "look", "images": tc.images})
			resp, err := unixHTTP(dir).Post("http://agentd/v1/sessions/eye/api/messages?wait=true", "application/json", strings.NewReader(string(body)))
			if err != nil {
				t.Fatal(err)
			}
			defer resp.Body.Close()
			b, _ := io.ReadAll(resp.Body)
			if resp.StatusCode != http.StatusBadRequest || !strings.Contains(string(b), tc.want) || !strings.Contains(string(b), `"bad_request"`) {
				t.Errorf("%d %s, want 400 bad_request saying %q", resp.StatusCode, b, tc.want)
			}
		})
	}
}
