package webext

import (
	"context"
	"crypto/sha256"
	_ "embed"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"path"
	"regexp"
	"sort"
	"strings"
	"sync"

	"agentd/internal/extension"
	"agentd/internal/schema"
	"agentd/internal/store"
)

//go:embed app.schema.json
var appSchema []byte

// App caps: an app is a few small files, kept in memory while it is
// active.
const (
	MaxAppFiles = 64
	MaxAppBytes = 512 << 10 // the files' content as written (images as base64)
)

// AppCSP is the Content-Security-Policy of every file of an app: scripts,
// styles, images and connections only from agentd's own origin (its
// files, and the API it calls with the console's login), no inline
// script or style, no plugins, framed only by agentd's own pages.
const AppCSP = "default-src 'self'; script-src 'self'; style-src 'self'; img-src 'self' data:; connect-src 'self'; " +
	"object-src 'none'; frame-ancestors 'self'; base-uri 'none'; form-action 'self'"

// AppType is the `app` type: a small static web app whose files are in
// the row, served by apps under /apps/<name>/. It runs in people's
// browsers with their console login, so a row an agent writes is stored
// disabled (PersonEnables), and apps never serves a version an agent
// wrote: a person enables it, which makes the version theirs.
func AppType(apps *Apps) extension.Type {
	return extension.Type{Name: "app", Summary: "a small static web app served under /apps/<name>/, calling agentd's API with the console's login",
		Schema: appSchema, Handler: apps, PersonEnables: true}
}

// App is an app row's spec.
type App struct {
	Title       string            `json:"title"`
	Description string            `json:"description,omitempty"`
	Files       map[string]string `json:"files"`
}

// AppFile is one file of an active app, ready to serve.
type AppFile struct {
	ContentType string
	Body        []byte
	ETag        string
}

// Apps is the app type's Handler: it holds the active version of every
// enabled app, which the gateway serves (File).
type Apps struct {
	mu   sync.RWMutex
	apps map[string]map[string]*AppFile // name → path → file
}

// NewApps returns an empty set of apps.
func NewApps() *Apps { return &Apps{apps: map[string]map[string]*AppFile{}} }

// appPath is what a file's path may be: segments of letters, digits, '-'
// and '_' with inner dots (compiled when first used).
var appPath = sync.OnceValue(func() *regexp.Regexp {
	return regexp.MustCompile(`^[A-Za-z0-9_-]+(\.[A-Za-z0-9_-]+)*(/[A-Za-z0-9_-]+(\.[A-Za-z0-9_-]+)*)*$`)
})

// appType is the content type of a file an app may have, by its
// extension ("" for one it may not have); images are base64 in the row.
func appType(ext string) string {
	switch ext {
	case ".html":
		return "text/html; charset=utf-8"
	case ".css":
		return "text/css; charset=utf-8"
	case ".js", ".mjs":
		return "text/javascript; charset=utf-8"
	case ".json":
		return "application/json"
	case ".svg":
		return "image/svg+xml"
	case ".txt", ".md":
		return "text/plain; charset=utf-8"
	case ".png":
		return "image/png"
	case ".jpg", ".jpeg":
		return "image/jpeg"
	case ".gif":
		return "image/gif"
	case ".webp":
		return "image/webp"
	case ".ico":
		return "image/x-icon"
	}
	return ""
}

// binary reports whether a file's content is base64.
func binary(ctype string) bool { return strings.HasPrefix(ctype, "image/") && ctype != "image/svg+xml" }

// Check checks what the schema cannot: the caps, each path, and that each
// image is base64.
func (a *Apps) Check(_ context.Context, d *extension.Doc) []schema.Error {
	var app App
	if !decodeSpec(d, &app) {
		return nil
	}
	_, errs := app.build()
	return errs
}

// build checks an app and returns its files, ready to serve.
func (app *App) build() (map[string]*AppFile, []schema.Error) {
	var errs []schema.Error
	if len(app.Files) > MaxAppFiles {
		errs = append(errs, problem("/files", "%d files: an app has at most %d", len(app.Files), MaxAppFiles))
	}
	if _, ok := app.Files["index.html"]; !ok {
		errs = append(errs, problem("/files", "an app needs its page, index.html"))
	}
	paths := make([]string, 0, len(app.Files))
	total := 0
	for p, content := range app.Files {
		paths = append(paths, p)
		total += len(content)
	}
	if total > MaxAppBytes {
		errs = append(errs, problem("/files", "%d bytes: an app's files hold at most %d", total, MaxAppBytes))
	}
	sort.Strings(paths)
	files := make(map[string]*AppFile, len(paths))
	for _, p := range paths {
		ptr := "/files/" + schema.Escape(p)
		ctype := appType(path.Ext(p))
		if !appPath().MatchString(p) || len(p) > 200 || ctype == "" {
			errs = append(errs, problem(ptr, "a path is segments of letters, digits, '-', '_' and inner dots, "+
				"ending in .html, .css, .js, .mjs, .json, .svg, .txt, .md, .png, .jpg, .jpeg, .gif, .webp or .ico"))
			continue
		}
		body := []byte(app.Files[p])
		if binary(ctype) {
			b, err := base64.StdEncoding.DecodeString(app.Files[p])
			if err != nil {
				errs = append(errs, problem(ptr, "an image is base64: %v", err))
				continue
			}
			body = b
		}
		sum := sha256.Sum256(body)
		files[p] = &AppFile{ContentType: ctype, Body: body, ETag: `"` + hex.EncodeToString(sum[:10]) + `"`}
	}
	return files, errs
}

// Activate makes a version of an app the one served. A version an agent
// wrote is refused (the version a person enabled stays served): an
// agent's change to an enabled app waits for a person to enable it again.
func (a *Apps) Activate(_ context.Context, e *store.Extension) error {
	if strings.HasPrefix(e.Provenance, store.ProvenanceAgent) {
		return fmt.Errorf("app %s: version %d was written by %s: a person enables it (disable, then enable)", e.Name, e.Version, e.Provenance)
	}
	var app App
	if err := json.Unmarshal(e.Spec, &app); err != nil {
		return fmt.Errorf("app %s: %w", e.Name, err)
	}
	files, errs := app.build()
	if len(errs) > 0 {
		return fmt.Errorf("app %s: %s", e.Name, errs[0])
	}
	a.mu.Lock()
	a.apps[e.Name] = files
	a.mu.Unlock()
	return nil
}

// Deactivate stops serving an app.
func (a *Apps) Deactivate(_ context.Context, name string) error {
	a.mu.Lock()
	delete(a.apps, name)
	a.mu.Unlock()
	return nil
}

// File returns a file of an active app: p is the path under
// /apps/<name>/, "" or a path ending in "/" naming its index.html.
// ErrNotFound when the app is not active or has no such file.
func (a *Apps) File(name, p string) (*AppFile, error) {
	if p == "" || strings.HasSuffix(p, "/") {
		p += "index.html"
	}
	a.mu.RLock()
	f := a.apps[name][p]
	a.mu.RUnlock()
	if f == nil {
		return nil, fmt.Errorf("app %s: %s: %w", name, p, ErrNotFound)
	}
	return f, nil
}
