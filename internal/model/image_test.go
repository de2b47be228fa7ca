package model_test

import (
	"bytes"
	"encoding/base64"
	"errors"
	"fmt"
	"image"
	"image/gif"
	"image/jpeg"
	"image/png"
	"strings"
	"testing"

	"agentd/internal/model"
)

func encoded(t *testing.T, enc func(*bytes.Buffer, image.Image) error) []byte {
	t.Helper()
	var b bytes.Buffer
	if err := enc(&b, image.NewGray(image.Rect(0, 0, 2, 2))); err != nil {
		t.Fatal(err)
	}
	return b.Bytes()
}

func TestCheckImage(t *testing.T) {
	pngData := encoded(t, func(b *bytes.Buffer, m image.Image) error { return png.Encode(b, m) })
	jpegData := encoded(t, func(b *bytes.Buffer, m image.Image) error { return jpeg.Encode(b, m, nil) })
	gifData := encoded(t, func(b *bytes.Buffer, m image.Image) error { return gif.Encode(b, m, nil) })
	webpData := []byte("RIFF\x24\x00\x00\x00WEBPVP8 \x18\x00\x00\x00")
	big := append(bytes.Clone(pngData), make([]byte, model.MaxImageBytes)...)
	tests := []struct {
		name string
		img  model.Image
		want string // a part of the error; "" for none
	}{
		{"png", model.Image{MIMEType: "image/png", Data: pngData}, ""},
		{"jpeg", model.Image{MIMEType: "image/jpeg", Data: jpegData}, ""},
		{"gif", model.Image{MIMEType: "image/gif", Data: gifData}, ""},
		{"webp", model.Image{MIMEType: "image/webp", Data: webpData}, ""},
		{"unsupported type", model.Image{MIMEType: "image/bmp", Data: []byte("BM")}, `type "image/bmp" not supported`},
		{"no type", model.Image{Data: pngData}, `type "" not supported`},
		{"type with parameters", model.Image{MIMEType: "image/png; charset=x", Data: pngData}, "not supported"},
		{"no data", model.Image{MIMEType: "image/png"}, "no data"},
		{"declared png, text inside", model.Image{MIMEType: "image/png", Data: []byte("<svg onload=alert(1)>")}, "content is text/"},
		{"declared png, jpeg inside", model.Image{MIMEType: "image/png", Data: jpegData}, "declared image/png but the content is image/jpeg"},
		{"too large", model.Image{MIMEType: "image/png", Data: big}, "more than 5242880"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := model.CheckImage(tt.img)
			if tt.want == "" {
				if err != nil {
					t.Fatalf("CheckImage: %v", err)
				}
				return
			}
			if !errors.Is(err, model.ErrBadImage) || !strings.Contains(err.Error(), tt.want) {
				t.Fatalf("CheckImage error = %v, want ErrBadImage saying %q", err, tt.want)
			}
		})
	}
}

func TestCheckImages(t *testing.T) {
	pngData := encoded(t, func(b *bytes.Buffer, m image.Image) error { return png.Encode(b, m) })
	ok := model.Image{MIMEType: "image/png", Data: pngData}
	imgs := make([]model.Image, model.MaxImages)
	for i := range imgs {
		imgs[i] = ok
	}
	if err := model.CheckImages(imgs); err != nil {
		t.Errorf("%d images: %v", len(imgs), err)
	}
	if err := model.CheckImages(append(imgs, ok)); !errors.Is(err, model.ErrBadImage) || !strings.Contains(err.Error(), "at most 8") {
		t.Errorf("%d images: error %v, want too many", len(imgs)+1, err)
	}
	err := model.CheckImages([]model.Image{ok, {MIMEType: "image/gif", Data: pngData}})
	if !errors.Is(err, model.ErrBadImage) || !strings.HasPrefix(err.Error(), "image 1: ") {
		t.Errorf("error %v, want one naming image 1", err)
	}
}

func TestDataURL(t *testing.T) {
	img := model.Image{MIMEType: "image/gif", Data: []byte{0, 1, 2, 0xff}}
	want := "data:image/gif;base64," + base64.StdEncoding.EncodeToString(img.Data)
	if got := img.DataURL(); got != want {
		t.Errorf("DataURL = %q, want %q", got, want)
	}
}

func ExampleCheckImages() {
	var b bytes.Buffer
	png.Encode(&b, image.NewGray(image.Rect(0, 0, 1, 1)))
	fmt.Println(model.CheckImages([]model.Image{{MIMEType: "image/png", Data: b.Bytes()}}))
	fmt.Println(model.CheckImages([]model.Image{{MIMEType: "image/jpeg", Data: b.Bytes()}}))
	// Output:
	// <nil>
	// image 0: bad image: declared image/jpeg but the content is image/png
}
