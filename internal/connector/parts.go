package connector

import (
	"net/url"
	"path"
	"strings"

	"agentd/internal/connector/markup"
)

// outPart is one part of a reply: a message of Markdown, or a file.
type outPart struct {
	md   string
	file *File
}

// parts cuts a reply into the parts it is delivered in: its text cut
// under the platform's limit, then, on a platform that uploads, each line
// that is only a Markdown image of an http(s) URL as a file of its own
// (agents have no tool to send a file: they write the image). streamed:
// part 0 already shows text, so a reply of images only keeps them as
// text.
func (in *instance) parts(text string, streamed bool) []outPart {
	caps := in.capsNow()
	var files []outPart
	if _, ok := in.platform().(Uploader); ok {
		var kept []string
		for line := range strings.SplitSeq(text, "\n") {
			if f, ok := imageLine(line); ok {
				files = append(files, outPart{file: f})
				continue
			}
			kept = append(kept, line)
		}
		if rest := strings.TrimSpace(strings.Join(kept, "\n")); rest != "" || !streamed {
			text = rest
		} else {
			files = nil
		}
	}
	var out []outPart
	for _, p := range markup.Split(caps.Dialect, text, caps.MaxText, caps.Unit) {
		out = append(out, outPart{md: p})
	}
	return append(out, files...)
}

// imageLine reads a line that is only ![alt](http(s) URL).
func imageLine(line string) (*File, bool) {
	line = strings.TrimSpace(line)
	alt, rest, ok := strings.Cut(strings.TrimPrefix(line, "!["), "](")
	if !ok || !strings.HasPrefix(line, "![") || !strings.HasSuffix(rest, ")") || strings.ContainsAny(alt, "[]") {
		return nil, false
	}
	raw := strings.TrimSuffix(rest, ")")
	u, err := url.Parse(raw)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" || strings.ContainsAny(raw, " ()") {
		return nil, false
	}
	name := path.Base(u.Path)
	if name == "." || name == "/" {
		name = "image"
	}
	return &File{Name: name, URL: raw, Caption: alt}, true
}
