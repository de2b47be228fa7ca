// Package pdftext pulls the text out of simple PDF files, where it is
// cheap: the content streams that are stored plain or FlateDecode
// compressed, and the strings their text operators (Tj, TJ, ' and ")
// show. Fonts with their own encodings, other filters and encryption are
// not read; a file whose text cannot be had this way gives ErrNoText. The
// work done is bounded whatever the file holds.
package pdftext

import (
	"bytes"
	"compress/zlib"
	"errors"
	"io"
	"strings"
	"unicode"
	"unicode/utf16"
	"unicode/utf8"
)

// ErrNoText is returned for a PDF none of whose text could be read.
var ErrNoText = errors.New("pdftext: no readable text")

// ErrNotPDF is returned for data that does not start like a PDF.
var ErrNotPDF = errors.New("pdftext: not a PDF")

// Options bounds the work Extract does.
type Options struct {
	// MaxStreams is how many streams are looked at (default 2000).
	MaxStreams int
	// MaxInflated bounds the bytes inflated from all streams together
	// (default 64 MiB): a small compressed stream cannot make it more.
	MaxInflated int64
	// MaxText bounds the text returned, in bytes (default 1 MiB).
	MaxText int
}

func (o *Options) withDefaults() Options {
	var v Options
	if o != nil {
		v = *o
	}
	if v.MaxStreams <= 0 {
		v.MaxStreams = 2000
	}
	if v.MaxInflated <= 0 {
		v.MaxInflated = 64 << 20
	}
	if v.MaxText <= 0 {
		v.MaxText = 1 << 20
	}
	return v
}

// Extract returns the text of the PDF in data, page streams in the order
// they are stored. opts may be nil.
func Extract(data []byte, opts *Options) (string, error) {
	o := opts.withDefaults()
	if !bytes.HasPrefix(bytes.TrimLeft(data[:min(len(data), 1024)], "\x00\t\r\n "), []byte("%PDF-")) {
		return "", ErrNotPDF
	}
	var out strings.Builder
	budget := o.MaxInflated
	rest := data
	for n := 0; n < o.MaxStreams && out.Len() < o.MaxText; n++ {
		dict, body, after, ok := nextStream(rest)
		if !ok {
			break
		}
		rest = after
		content, ok := decode(dict, body, &budget)
		if !ok {
			continue
		}
		if t := showText(content, o.MaxText-out.Len()); strings.TrimSpace(t) != "" {
			if out.Len() > 0 {
				out.WriteString("\n\n")
			}
			out.WriteString(strings.TrimSpace(t))
		}
	}
	text := out.String()
	if len(text) > o.MaxText {
		text = text[:o.MaxText]
	}
	text = strings.ToValidUTF8(text, "\uFFFD")
	if strings.TrimSpace(text) == "" {
		return "", ErrNoText
	}
	return text, nil
}

var (
	kwStream    = []byte("stream")
	kwEndstream = []byte("endstream")
)

// nextStream finds the next "stream … endstream" in data and the
// dictionary just before it.
func nextStream(data []byte) (dict, body, rest []byte, ok bool) {
	for {
		i := bytes.Index(data, kwStream)
		if i < 0 {
			return nil, nil, nil, false
		}
		// "endstream" contains "stream": skip it.
		if i >= 3 && string(data[i-3:i]) == "end" {
			data = data[i+len(kwStream):]
			continue
		}
		start := i + len(kwStream)
		if start < len(data) && data[start] == '\r' {
			start++
		}
		if start < len(data) && data[start] == '\n' {
			start++
		}
		j := bytes.Index(data[start:], kwEndstream)
		if j < 0 {
			return nil, nil, nil, false
		}
		head := data[:i]
		if k := bytes.LastIndex(head, []byte("obj")); k >= 0 {
			head = head[k:]
		} else {
			head = head[max(0, len(head)-4096):]
		}
		return head, data[start : start+j], data[start+j+len(kwEndstream):], true
	}
}

// decode returns a stream's bytes: plain, or inflated (FlateDecode)
// within budget. Images, fonts and other filters are skipped.
func decode(dict, body []byte, budget *int64) ([]byte, bool) {
	if bytes.Contains(dict, []byte("/Image")) || bytes.Contains(dict, []byte("/FontFile")) ||
		bytes.Contains(dict, []byte("/Length1")) || bytes.Contains(dict, []byte("/XRef")) {
		return nil, false
	}
	if !bytes.Contains(dict, []byte("/Filter")) {
		return body, true
	}
	f := dict[bytes.Index(dict, []byte("/Filter"))+len("/Filter"):]
	f = bytes.TrimLeft(f, " \t\r\n[")
	if !bytes.HasPrefix(f, []byte("/FlateDecode")) || bytes.Contains(f, []byte("/DCTDecode")) || bytes.Contains(f, []byte("/ASCII")) {
		return nil, false
	}
	if *budget <= 0 {
		return nil, false
	}
	zr, err := zlib.NewReader(bytes.NewReader(body))
	if err != nil {
		return nil, false
	}
	defer zr.Close()
	var buf bytes.Buffer
	n, _ := io.Copy(&buf, io.LimitReader(zr, *budget))
	*budget -= n
	// A stream cut short (a truncated file) still gives what it held.
	return buf.Bytes(), n > 0
}

// showText runs a content stream's text operators and returns the text
// they show, at most limit bytes.
func showText(content []byte, limit int) string {
	var out strings.Builder
	var ops [][]byte // the string operands since the last operator
	var nums []float64
	inText := false
	lx := lexer{data: content}
	for out.Len() < limit {
		tok, kind := lx.next()
		switch kind {
		case tokEOF:
			return out.String()
		case tokString:
			ops = append(ops, tok)
			continue
		case tokNumber:
			nums = append(nums, parseNum(tok))
			if len(ops) > 0 && nums[len(nums)-1] < -200 {
				ops = append(ops, []byte(" ")) // a wide gap inside a TJ array
			}
			continue
		case tokOther:
			continue
		}
		switch string(tok) {
		case "BT":
			inText = true
		case "ET":
			inText = false
			newline(&out)
		case "Tj", "TJ":
			if inText {
				writeStrings(&out, ops)
			}
		case "'", `"`:
			if inText {
				newline(&out)
				writeStrings(&out, ops)
			}
		case "T*":
			newline(&out)
		case "Td", "TD":
			if len(nums) >= 2 && nums[len(nums)-1] != 0 {
				newline(&out)
			} else if out.Len() > 0 && !strings.HasSuffix(out.String(), " ") {
				out.WriteByte(' ')
			}
		case "Tm":
			newline(&out)
		}
		ops, nums = ops[:0], nums[:0]
	}
	return out.String()
}

func newline(b *strings.Builder) {
	s := b.String()
	if len(s) > 0 && !strings.HasSuffix(s, "\n") {
		b.WriteByte('\n')
	}
}

// writeStrings writes the shown strings, decoded: UTF-16BE with its byte
// order mark, else PDFDocEncoding read as Latin-1; control characters
// are dropped.
func writeStrings(b *strings.Builder, ss [][]byte) {
	for _, s := range ss {
		var text string
		if len(s) >= 2 && s[0] == 0xFE && s[1] == 0xFF {
			u := make([]uint16, 0, len(s)/2)
			for i := 2; i+1 < len(s); i += 2 {
				u = append(u, uint16(s[i])<<8|uint16(s[i+1]))
			}
			text = string(utf16.Decode(u))
		} else {
			rs := make([]rune, len(s))
			for i, c := range s {
				rs[i] = rune(c)
			}
			text = string(rs)
		}
		for _, r := range text {
			if r == '\t' || r == ' ' || (unicode.IsPrint(r) && r != utf8.RuneError) {
				b.WriteRune(r)
			}
		}
	}
}
