package telegramfake

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"mime"
	"net/http"
	"strconv"
	"strings"

	"agentd/internal/connector/chatfake"
)

// params are a call's parameters. The Bot API takes them in the query
// string, as application/x-www-form-urlencoded, application/json or
// multipart/form-data (for uploads); a form value holding an object is
// JSON-serialized ("Making requests", https://core.telegram.org/bots/api).
type params struct {
	v     map[string]json.RawMessage
	files map[string]chatfake.File
}

const maxUpload = 50 << 20 // the Bot API's upload limit

func readParams(r *http.Request) (params, error) {
	p := params{v: map[string]json.RawMessage{}, files: map[string]chatfake.File{}}
	for k, vs := range r.URL.Query() {
		p.v[k], _ = json.Marshal(vs[0])
	}
	if r.Method != http.MethodPost && r.Method != http.MethodGet {
		return p, fmt.Errorf("method %s is not supported", r.Method)
	}
	ct, _, _ := mime.ParseMediaType(r.Header.Get("Content-Type"))
	switch ct {
	case "application/json":
		var m map[string]json.RawMessage
		dec := json.NewDecoder(io.LimitReader(r.Body, maxUpload))
		dec.UseNumber()
		if err := dec.Decode(&m); err != nil && !errors.Is(err, io.EOF) {
			return p, fmt.Errorf("can't parse JSON object")
		}
		for k, v := range m {
			p.v[k] = v
		}
	case "application/x-www-form-urlencoded":
		r.Body = http.MaxBytesReader(nil, r.Body, maxUpload)
		if err := r.ParseForm(); err != nil {
			return p, err
		}
		for k, vs := range r.PostForm {
			p.v[k], _ = json.Marshal(vs[0])
		}
	case "multipart/form-data":
		r.Body = http.MaxBytesReader(nil, r.Body, maxUpload)
		if err := r.ParseMultipartForm(maxUpload); err != nil {
			return p, err
		}
		for k, vs := range r.MultipartForm.Value {
			p.v[k], _ = json.Marshal(vs[0])
		}
		for k, fhs := range r.MultipartForm.File {
			f, err := fhs[0].Open()
			if err != nil {
				return p, err
			}
			data, err := io.ReadAll(f)
			f.Close()
			if err != nil {
				return p, err
			}
			p.files[k] = chatfake.File{Name: fhs[0].Filename, Type: fhs[0].Header.Get("Content-Type"), Data: data}
		}
	}
	return p, nil
}

// str is parameter k as text: a JSON string's content, or a number's
// digits ("" absent).
func (p params) str(k string) string {
	raw, ok := p.v[k]
	if !ok {
		return ""
	}
	var s string
	if json.Unmarshal(raw, &s) == nil {
		return s
	}
	return string(bytes.TrimSpace(raw))
}

// int is parameter k as an integer (0 absent); a value that is not one is
// Telegram's "Bad Request: invalid <k> specified"-like error.
func (p params) int(k string) (int64, error) {
	s := p.str(k)
	if s == "" {
		return 0, nil
	}
	n, err := strconv.ParseInt(s, 10, 64)
	if err != nil {
		return 0, badRequest("invalid " + k + " specified")
	}
	return n, nil
}

// decode decodes parameter k (an object, or in a form a JSON-serialized
// one) into v; absent leaves v.
func (p params) decode(k string, v any) error {
	raw, ok := p.v[k]
	if !ok {
		return nil
	}
	var s string
	if json.Unmarshal(raw, &s) == nil {
		raw = []byte(s)
	}
	if err := json.Unmarshal(raw, v); err != nil {
		return badRequest("can't parse " + k + " JSON object")
	}
	return nil
}

// bool is parameter k as a boolean.
func (p params) bool(k string) bool {
	s := strings.ToLower(p.str(k))
	return s == "true" || s == "1"
}
