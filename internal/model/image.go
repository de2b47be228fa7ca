package model

import (
	"encoding/base64"
	"errors"
	"fmt"
	"net/http"
)

// Image is an image in a message: its bytes and their media type. Images
// travel as bytes, never as URLs, so that the session log holds everything
// needed to send the conversation again and no model provider is asked to
// fetch anything on agentd's behalf.
//
// On a RoleUser message the images are the user's attachments; on a
// RoleTool message they are what the tool returned besides its text.
type Image struct {
	MIMEType string // one of ImageTypes
	Data     []byte
}

// Limits on the images of one message, checked where input enters agentd.
const (
	MaxImageBytes = 5 << 20 // per image, decoded
	MaxImages     = 8       // per message
)

// ImageTypes are the image media types agentd accepts: those both
// supported model APIs take.
var ImageTypes = [...]string{"image/png", "image/jpeg", "image/gif", "image/webp"}

// ErrBadImage is the kind of every error CheckImage and CheckImages return.
var ErrBadImage = errors.New("bad image")

// SupportedImageType reports whether mime is one of ImageTypes.
func SupportedImageType(mime string) bool {
	for _, t := range ImageTypes {
		if mime == t {
			return true
		}
	}
	return false
}

// SniffImage returns the media type of data judged from its content
// (http.DetectContentType), or an error wrapping ErrBadImage if it is not
// one of ImageTypes.
func SniffImage(data []byte) (string, error) {
	if len(data) == 0 {
		return "", fmt.Errorf("%w: no data", ErrBadImage)
	}
	mime := http.DetectContentType(data)
	if !SupportedImageType(mime) {
		return "", fmt.Errorf("%w: content is %s, want PNG, JPEG, GIF or WebP", ErrBadImage, mime)
	}
	return mime, nil
}

// CheckImage checks one image: a supported type that its content agrees
// with, and at most MaxImageBytes. Errors wrap ErrBadImage and say why.
func CheckImage(img Image) error {
	if !SupportedImageType(img.MIMEType) {
		return fmt.Errorf("%w: type %q not supported (want image/png, image/jpeg, image/gif or image/webp)", ErrBadImage, img.MIMEType)
	}
	if len(img.Data) > MaxImageBytes {
		return fmt.Errorf("%w: %d bytes, more than %d", ErrBadImage, len(img.Data), MaxImageBytes)
	}
	sniffed, err := SniffImage(img.Data)
	if err != nil {
		return err
	}
	if sniffed != img.MIMEType {
		return fmt.Errorf("%w: declared %s but the content is %s", ErrBadImage, img.MIMEType, sniffed)
	}
	return nil
}

// CheckImages checks the images of one message: at most MaxImages, each
// as CheckImage wants. An error names the image by its index.
func CheckImages(imgs []Image) error {
	if len(imgs) > MaxImages {
		return fmt.Errorf("%w: %d images, at most %d per message", ErrBadImage, len(imgs), MaxImages)
	}
	for i, img := range imgs {
		if err := CheckImage(img); err != nil {
			return fmt.Errorf("image %d: %w", i, err)
		}
	}
	return nil
}

// DataURL returns the image as a data: URL (data:<type>;base64,<data>).
func (img Image) DataURL() string {
	prefix := "data:" + img.MIMEType + ";base64,"
	b := make([]byte, len(prefix)+base64.StdEncoding.EncodedLen(len(img.Data)))
	copy(b, prefix)
	base64.StdEncoding.Encode(b[len(prefix):], img.Data)
	return string(b)
}
