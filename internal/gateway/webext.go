package gateway

// The console's extension data (package webext): the home page's
// widgets evaluated, agents' artifacts with their versions and
// downloads, and apps' files under /apps/<name>/. Themes and renderers
// need no route of their own: they are rows of /v1/extensions.

import (
	"context"
	"mime"
	"net/http"
	"strconv"
	"strings"

	"agentd/internal/runtime"
	"agentd/internal/webext"
)

// Widgets evaluates the home page's widgets (webext.Widgets).
type Widgets interface {
	Widgets(ctx context.Context) ([]webext.WidgetView, error)
	Widget(ctx context.Context, name string) (webext.WidgetView, error)
}

// Artifacts reads agents' artifacts (webext.Artifacts).
type Artifacts interface {
	Artifacts(ctx context.Context, session string) ([]webext.ArtifactInfo, error)
	Artifact(ctx context.Context, name string, version int64) (webext.ArtifactView, error)
	Download(ctx context.Context, name string, version int64) (webext.Download, error)
}

// Apps gives the files of the active apps (webext.Apps).
type Apps interface {
	File(name, path string) (*webext.AppFile, error)
}

// WidgetsPage answers GET /v1/widgets.
type WidgetsPage struct {
	Widgets []webext.WidgetView `json:"widgets"`
}

// ArtifactsPage answers GET /v1/artifacts.
type ArtifactsPage struct {
	Artifacts []webext.ArtifactInfo `json:"artifacts"`
}

func (s *Server) widgets(w http.ResponseWriter, r *http.Request) {
	if s.o.Widgets == nil {
		s.unavailable(w, "widgets")
		return
	}
	ws, err := s.o.Widgets.Widgets(r.Context())
	if err != nil {
		s.fail(w, err)
		return
	}
	if ws == nil {
		ws = []webext.WidgetView{}
	}
	writeJSON(w, http.StatusOK, WidgetsPage{Widgets: ws})
}

func (s *Server) widget(w http.ResponseWriter, r *http.Request) {
	if s.o.Widgets == nil {
		s.unavailable(w, "widgets")
		return
	}
	v, err := s.o.Widgets.Widget(r.Context(), r.PathValue("name"))
	if err != nil {
		s.fail(w, err)
		return
	}
	writeJSON(w, http.StatusOK, v)
}

func (s *Server) artifacts(w http.ResponseWriter, r *http.Request) {
	if s.o.Artifacts == nil {
		s.unavailable(w, "artifacts")
		return
	}
	session := r.URL.Query().Get("session")
	if session != "" {
		if _, _, err := runtime.ParseAddress(session); err != nil {
			s.fail(w, badRequest("session: %v", err))
			return
		}
	}
	list, err := s.o.Artifacts.Artifacts(r.Context(), session)
	if err != nil {
		s.fail(w, err)
		return
	}
	writeJSON(w, http.StatusOK, ArtifactsPage{Artifacts: list})
}

// artifactVersion is the version a request asks for: ?version=N, 0 for
// the current one.
func artifactVersion(r *http.Request) (int64, error) {
	v, err := intParam(r.URL.Query().Get("version"), 0)
	if err != nil {
		return 0, badRequest("version: %v", err)
	}
	return v, nil
}

func (s *Server) artifact(w http.ResponseWriter, r *http.Request) {
	if s.o.Artifacts == nil {
		s.unavailable(w, "artifacts")
		return
	}
	version, err := artifactVersion(r)
	if err != nil {
		s.fail(w, err)
		return
	}
	a, err := s.o.Artifacts.Artifact(r.Context(), r.PathValue("name"), version)
	if err != nil {
		s.fail(w, err)
		return
	}
	writeJSON(w, http.StatusOK, a)
}

// downloadCSP keeps a download that a browser shows anyway from running
// or loading anything.
const downloadCSP = "default-src 'none'; sandbox"

// artifactDownload answers with an artifact's bytes as an attachment
// whose type no browser runs: HTML is text/plain, images are only the
// raster types the artifact type allows, and nothing may be sniffed.
func (s *Server) artifactDownload(w http.ResponseWriter, r *http.Request) {
	if s.o.Artifacts == nil {
		s.unavailable(w, "artifacts")
		return
	}
	version, err := artifactVersion(r)
	if err != nil {
		s.fail(w, err)
		return
	}
	d, err := s.o.Artifacts.Download(r.Context(), r.PathValue("name"), version)
	if err != nil {
		s.fail(w, err)
		return
	}
	h := w.Header()
	h.Set("Content-Type", safeDownloadType(d.ContentType))
	h.Set("Content-Disposition", mime.FormatMediaType("attachment", map[string]string{"filename": d.Filename}))
	h.Set("X-Content-Type-Options", "nosniff")
	h.Set("Content-Security-Policy", downloadCSP)
	h.Set("Cache-Control", "private, no-cache")
	h.Set("Content-Length", strconv.Itoa(len(d.Body)))
	w.WriteHeader(http.StatusOK)
	w.Write(d.Body)
}

// safeDownloadType is t when a browser would never render it as a page or
// run it, application/octet-stream otherwise.
func safeDownloadType(t string) string {
	mt, _, err := mime.ParseMediaType(t)
	switch {
	case err != nil:
	case mt == "text/plain", mt == "text/markdown", mt == "text/csv",
		mt == "image/png", mt == "image/jpeg", mt == "image/gif", mt == "image/webp":
		return t
	}
	return "application/octet-stream"
}

// appHeaders are the headers of every answer of an app: its own strict
// CSP, and nothing sniffed, referred or opened across origins.
func appHeaders(h http.Header) {
	h.Set("Content-Security-Policy", webext.AppCSP)
	h.Set("X-Content-Type-Options", "nosniff")
	h.Set("Referrer-Policy", "no-referrer")
	h.Set("X-Frame-Options", "SAMEORIGIN")
	h.Set("Cross-Origin-Opener-Policy", "same-origin")
	h.Set("Cross-Origin-Resource-Policy", "same-origin")
	h.Set("Permissions-Policy", "camera=(), microphone=(), geolocation=(), payment=(), usb=()")
}

// appRoot sends /apps/<name> to /apps/<name>/, where the app's relative
// links resolve.
func (s *Server) appRoot(w http.ResponseWriter, r *http.Request) {
	if s.o.Apps == nil {
		s.unavailable(w, "apps")
		return
	}
	http.Redirect(w, r, "/apps/"+r.PathValue("name")+"/", http.StatusMovedPermanently)
}

// appFile serves a file of an active app. The route needs the token or
// the console's login, like the API the app calls.
func (s *Server) appFile(w http.ResponseWriter, r *http.Request) {
	appHeaders(w.Header())
	if s.o.Apps == nil {
		s.unavailable(w, "apps")
		return
	}
	f, err := s.o.Apps.File(r.PathValue("name"), r.PathValue("path"))
	if err != nil {
		s.fail(w, err)
		return
	}
	h := w.Header()
	h.Set("Content-Type", f.ContentType)
	h.Set("Cache-Control", "private, no-cache")
	h.Set("ETag", f.ETag)
	if inm := r.Header.Get("If-None-Match"); inm != "" && strings.Contains(inm, f.ETag) {
		w.WriteHeader(http.StatusNotModified)
		return
	}
	h.Set("Content-Length", strconv.Itoa(len(f.Body)))
	w.WriteHeader(http.StatusOK)
	w.Write(f.Body)
}
