package cli

import (
	"bytes"
	"image"
	"image/gif"
	"image/png"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"agentd/internal/gateway"
	"agentd/internal/model"
)

// readImages tells an image's type by its content, never by its name, and
// refuses files that are not images agentd takes.
func TestReadImages(t *testing.T) {
	dir := t.TempDir()
	write := func(name string, data []byte) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, data, 0o600); err != nil {
			t.Fatal(err)
		}
		return p
	}
	var pb, gb bytes.Buffer
	png.Encode(&pb, image.NewGray(image.Rect(0, 0, 1, 1)))
	gif.Encode(&gb, image.NewGray(image.Rect(0, 0, 1, 1)), nil)
	pngFile := write("dot.png", pb.Bytes())
	gifNamedPNG := write("really-a-gif.png", gb.Bytes())
	svg := write("x.png", []byte(`<svg xmlns="http://www.w3.org/2000/svg" onload="alert(1)"/>`))
	empty := write("empty.png", nil)
	big := write("big.png", append(bytes.Clone(pb.Bytes()), make([]byte, model.MaxImageBytes)...))

	got, err := readImages([]string{pngFile, gifNamedPNG})
	if err != nil {
		t.Fatal(err)
	}
	want := []gateway.MessageImage{{MIMEType: "image/png", Data: pb.Bytes()}, {MIMEType: "image/gif", Data: gb.Bytes()}}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("readImages (-want +got):\n%s", diff)
	}
	if got, err := readImages(nil); got != nil || err != nil {
		t.Errorf("no files: %v, %v", got, err)
	}

	nine := make([]string, model.MaxImages+1)
	for i := range nine {
		nine[i] = pngFile
	}
	for _, tt := range []struct {
		name  string
		files []string
		want  string
	}{
		{"svg named png", []string{pngFile, svg}, "--image " + svg + ": bad image: content is text/plain"},
		{"empty", []string{empty}, "bad image: no data"},
		{"too large", []string{big}, "larger than 5242880 bytes"},
		{"missing", []string{filepath.Join(dir, "nope.png")}, "no such file"},
		{"too many", nine, "9 images, at most 8"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			_, err := readImages(tt.files)
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Errorf("error %v, want one saying %q", err, tt.want)
			}
		})
	}
}
