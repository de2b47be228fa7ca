package fakellm

import (
	"bytes"
	"encoding/base64"
	"errors"
	"fmt"
	"strings"
)

// imageTypes are the media types both APIs accept for images.
var imageTypes = map[string]bool{"image/png": true, "image/jpeg": true, "image/gif": true, "image/webp": true}

// imagesOnly reports whether a message's content is an array of OpenAI
// image_url parts and nothing else.
func (t *turn) imagesOnly(raw []byte, i int) bool {
	raw = trimSpace(raw)
	if len(raw) == 0 || raw[0] != '[' {
		return false
	}
	blocks, err := t.blocks(raw, i)
	if err != nil || len(blocks) == 0 {
		return false
	}
	for j := range blocks {
		if blocks[j].Type != "image_url" {
			return false
		}
	}
	return true
}

// scanImages checks every image in the request, as the real APIs would,
// and counts them: OpenAI image_url parts of user messages, Anthropic image
// blocks of user messages and of tool_result contents.
func (t *turn) scanImages() error {
	for i := range t.msgs {
		m := &t.msgs[i]
		c := trimSpace(m.Content)
		// Most contents hold no image: those are not parsed again.
		if len(c) == 0 || c[0] != '[' || !bytes.Contains(c, []byte(`"image`)) {
			continue
		}
		blocks, err := t.blocks(c, i)
		if err != nil {
			return fmt.Errorf("messages[%d].content: want a string or an array of content blocks", i)
		}
		for j := range blocks {
			b := &blocks[j]
			at := fmt.Sprintf("messages[%d].content[%d]", i, j)
			if b.Type == "tool_result" && t.format == anthropic {
				if err := t.scanResult(b.Content, at); err != nil {
					return err
				}
				continue
			}
			if !isImage(t.format, b.Type) {
				continue
			}
			if m.Role != "user" {
				return fmt.Errorf("%s: images are only allowed in user messages, not %q", at, m.Role)
			}
			if err := checkImage(t.format, b); err != nil {
				return fmt.Errorf("%s: %w", at, err)
			}
			t.images++
		}
	}
	return nil
}

// scanResult checks and counts the image blocks of a tool_result content.
func (t *turn) scanResult(raw []byte, at string) error {
	raw = trimSpace(raw)
	if len(raw) == 0 || raw[0] != '[' {
		return nil
	}
	blocks, err := t.blocks(raw, -1)
	if err != nil {
		return fmt.Errorf("%s.content: want a string or an array of content blocks", at)
	}
	for k := range blocks {
		if blocks[k].Type != "image" {
			continue
		}
		if err := checkImage(anthropic, &blocks[k]); err != nil {
			return fmt.Errorf("%s.content[%d]: %w", at, k, err)
		}
		t.images++
	}
	return nil
}

func isImage(f format, typ string) bool {
	if f == openAI {
		return typ == "image_url"
	}
	return typ == "image"
}

// checkImage checks an image part (OpenAI) or block (Anthropic): a data:
// URL or base64 source of a supported type holding valid base64, or an
// http(s) URL.
func checkImage(f format, b *wireBlock) error {
	if f == openAI {
		if b.ImageURL == nil {
			return errors.New("image_url: want an object with a url")
		}
		u := b.ImageURL.URL
		if isHTTP(u) {
			return nil
		}
		rest, ok := strings.CutPrefix(u, "data:")
		if !ok {
			return errors.New("image_url.url: want a data: URL or an http(s) URL")
		}
		mime, data, ok := strings.Cut(rest, ";base64,")
		if !ok {
			return errors.New("image_url.url: want data:<type>;base64,<data>")
		}
		return checkData(mime, data)
	}
	s := b.Source
	if s == nil {
		return errors.New("image: want a source")
	}
	switch s.Type {
	case "base64":
		return checkData(s.MediaType, s.Data)
	case "url":
		if isHTTP(s.URL) {
			return nil
		}
		return errors.New("image.source.url: want an http(s) URL")
	}
	return fmt.Errorf("image.source.type: want base64 or url, got %q", s.Type)
}

func checkData(mime, data string) error {
	if !imageTypes[mime] {
		return fmt.Errorf("image type %q not supported (want image/png, image/jpeg, image/gif or image/webp)", mime)
	}
	if data == "" {
		return errors.New("image data is empty")
	}
	if _, err := base64.StdEncoding.DecodeString(data); err != nil {
		return fmt.Errorf("image data is not base64: %v", err)
	}
	return nil
}

func isHTTP(u string) bool {
	return strings.HasPrefix(u, "https://") || strings.HasPrefix(u, "http://")
}
