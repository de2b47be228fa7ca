// Package console serves agentd's web console: one page written as plain
// ES modules and CSS, embedded in the binary, so running agentd needs no
// build step and the page needs nothing from outside the daemon (no fonts,
// no CDN).
//
// The files hold no data and are served before login; everything the page
// shows it asks of the API of its own origin, behind the API's login
// cookie. The page never takes a server address from its URL.
//
// Routes (the gateway mounts the handler at GET /{$} and GET /console/):
//
//	GET /                      index.html, revalidated on every load
//	GET /console/v-HASH/NAME   the assets of this build: cached for good
//	GET /console/NAME          the same assets, revalidated (ETag)
//
// Every answer carries a strict Content-Security-Policy: scripts, styles
// and connections only from the page's own origin, no framing.
package console

import (
	"bytes"
	"compress/gzip"
	"crypto/sha256"
	"embed"
	"encoding/hex"
	"io/fs"
	"log/slog"
	"net/http"
	"path"
	"sort"
	"strconv"
	"strings"
	"sync"
)

//go:embed static
var static embed.FS

// CSP is the Content-Security-Policy of every answer.
const CSP = "default-src 'self'; script-src 'self'; style-src 'self'; connect-src 'self'; img-src 'self' data:; " +
	"font-src 'self'; object-src 'none'; frame-ancestors 'none'; base-uri 'none'; form-action 'self'"

// Prefix is where the assets are served.
const Prefix = "/console/"

// basePlaceholder in index.html is replaced by the versioned asset prefix.
const basePlaceholder = "{{BASE}}"

// Options configure the handler. The zero value is usable.
type Options struct {
	Logger *slog.Logger
}

// asset is one embedded file, ready to serve.
type asset struct {
	name  string
	ctype string
	body  []byte
	etag  string

	gzOnce sync.Once
	gz     []byte // nil when compressing does not pay
}

func (a *asset) gzipped() []byte {
	a.gzOnce.Do(func() {
		if len(a.body) < 1024 || !compressible(a.ctype) {
			return
		}
		var b bytes.Buffer
		zw, _ := gzip.NewWriterLevel(&b, gzip.BestCompression)
		zw.Write(a.body)
		zw.Close()
		if b.Len() < len(a.body)*9/10 {
			a.gz = b.Bytes()
		}
	})
	return a.gz
}

type handler struct {
	log *slog.Logger

	// The files, read and hashed at the first request: a node whose
	// console nobody opens does neither.
	once    sync.Once
	index   *asset
	assets  map[string]*asset // by name under static/, index.html excluded
	version string            // "v-" and a hash of every file
}

// Handler returns the console's handler. o may be nil.
func Handler(o *Options) http.Handler {
	var opts Options
	if o != nil {
		opts = *o
	}
	h := &handler{log: opts.Logger}
	if h.log == nil {
		h.log = slog.New(slog.DiscardHandler)
	}
	return h
}

// load reads and hashes the embedded files.
func (h *handler) load() {
	h.assets = map[string]*asset{}
	var names []string
	fs.WalkDir(static, "static", func(p string, d fs.DirEntry, err error) error {
		if err == nil && !d.IsDir() {
			names = append(names, strings.TrimPrefix(p, "static/"))
		}
		return nil
	})
	sort.Strings(names)
	sum := sha256.New()
	for _, name := range names {
		b, _ := static.ReadFile("static/" + name)
		sum.Write([]byte(name))
		sum.Write([]byte{0})
		sum.Write(b)
		h.assets[name] = &asset{name: name, ctype: contentType(name), body: b, etag: etag(b)}
	}
	h.version = "v-" + hex.EncodeToString(sum.Sum(nil))[:12]
	idx := h.assets["index.html"]
	delete(h.assets, "index.html")
	body := bytes.ReplaceAll(idx.body, []byte(basePlaceholder), []byte(Prefix+h.version+"/"))
	h.index = &asset{name: "index.html", ctype: idx.ctype, body: body, etag: etag(body)}
}

func etag(b []byte) string {
	s := sha256.Sum256(b)
	return `"` + hex.EncodeToString(s[:])[:20] + `"`
}

// contentType names the type of each kind of file the console ships; a
// file of another kind is served as bytes nobody may sniff.
func contentType(name string) string {
	switch path.Ext(name) {
	case ".html":
		return "text/html; charset=utf-8"
	case ".js", ".mjs":
		return "text/javascript; charset=utf-8"
	case ".css":
		return "text/css; charset=utf-8"
	case ".svg":
		return "image/svg+xml"
	case ".png":
		return "image/png"
	case ".json":
		return "application/json"
	case ".webmanifest":
		return "application/manifest+json"
	}
	return "application/octet-stream"
}

func compressible(ctype string) bool {
	return strings.HasPrefix(ctype, "text/") || strings.HasPrefix(ctype, "image/svg") || strings.Contains(ctype, "json")
}

func securityHeaders(h http.Header) {
	h.Set("Content-Security-Policy", CSP)
	h.Set("X-Content-Type-Options", "nosniff")
	h.Set("Referrer-Policy", "no-referrer")
	h.Set("X-Frame-Options", "DENY")
	h.Set("Cross-Origin-Opener-Policy", "same-origin")
	h.Set("Cross-Origin-Resource-Policy", "same-origin")
	h.Set("Permissions-Policy", "camera=(), microphone=(), geolocation=(), payment=(), usb=()")
}

func (h *handler) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	securityHeaders(w.Header())
	if r.Method != http.MethodGet && r.Method != http.MethodHead {
		w.Header().Set("Allow", "GET, HEAD")
		http.Error(w, "method not allowed", http.StatusMethodNotAllowed)
		return
	}
	h.once.Do(h.load)
	a, immutable := h.lookup(r.URL.Path)
	if a == nil {
		http.Error(w, "not found", http.StatusNotFound)
		return
	}
	if immutable {
		w.Header().Set("Cache-Control", "public, max-age=31536000, immutable")
	} else {
		w.Header().Set("Cache-Control", "no-cache")
	}
	h.serve(w, r, a)
}

// lookup finds the asset a path names: "/", or a name of the build under
// Prefix, with or without this build's version. Nothing is read from a
// file system, so a path can only name one of the embedded files.
func (h *handler) lookup(p string) (a *asset, immutable bool) {
	if p == "/" {
		return h.index, false
	}
	rest, ok := strings.CutPrefix(p, Prefix)
	if !ok {
		return nil, false
	}
	if v, name, ok := strings.Cut(rest, "/"); ok && strings.HasPrefix(v, "v-") {
		if v != h.version {
			// Another build's asset: an old page asking after an upgrade.
			// Answering with this build's file under a name cached for good
			// would mix builds, so it is not found; the page reloads.
			return nil, false
		}
		rest, immutable = name, true
	}
	return h.assets[rest], immutable
}

func (h *handler) serve(w http.ResponseWriter, r *http.Request, a *asset) {
	hd := w.Header()
	hd.Set("Content-Type", a.ctype)
	body, tag := a.body, a.etag
	if gz := a.gzipped(); gz != nil {
		hd.Add("Vary", "Accept-Encoding")
		if acceptsGzip(r.Header.Get("Accept-Encoding")) {
			body = gz
			tag = strings.TrimSuffix(tag, `"`) + `-gz"`
			hd.Set("Content-Encoding", "gzip")
		}
	}
	hd.Set("ETag", tag)
	if match(r.Header.Get("If-None-Match"), tag) {
		hd.Del("Content-Type")
		hd.Del("Content-Encoding")
		w.WriteHeader(http.StatusNotModified)
		return
	}
	hd.Set("Content-Length", strconv.Itoa(len(body)))
	w.WriteHeader(http.StatusOK)
	if r.Method != http.MethodHead {
		w.Write(body)
	}
}

// acceptsGzip reports whether an Accept-Encoding header admits gzip.
func acceptsGzip(v string) bool {
	for part := range strings.SplitSeq(v, ",") {
		name, params, _ := strings.Cut(strings.TrimSpace(part), ";")
		if !strings.EqualFold(strings.TrimSpace(name), "gzip") {
			continue
		}
		q := strings.ReplaceAll(strings.TrimSpace(params), " ", "")
		return q != "q=0" && q != "q=0.0" && q != "q=0.00" && q != "q=0.000"
	}
	return false
}

// match reports whether an If-None-Match header names tag.
func match(v, tag string) bool {
	for part := range strings.SplitSeq(v, ",") {
		part = strings.TrimSpace(part)
		if part == "*" || strings.TrimPrefix(part, "W/") == tag {
			return true
		}
	}
	return false
}
