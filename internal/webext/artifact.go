package webext

import (
	"context"
	_ "embed"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"time"

	"agentd/internal/extension"
	"agentd/internal/schema"
	"agentd/internal/store"
)

//go:embed artifact.schema.json
var artifactSchema []byte

// MaxArtifactBytes bounds an artifact's content (an image's base64 text).
const MaxArtifactBytes = 1 << 20

// ArtifactType is the `artifact` type: a versioned document an agent
// produces through the artifact tool (ArtifactTool), which the console
// shows beside the chat with its history and a download. Its versions are
// the row's history.
func ArtifactType() extension.Type {
	return extension.Type{Name: "artifact", Summary: "a versioned document an agent produces: markdown, code, CSV, HTML, an image or text",
		Schema: artifactSchema, Handler: checker(checkArtifact), Actor: extension.AgentOf}
}

// Artifact kinds.
const (
	KindMarkdown = "markdown"
	KindCode     = "code"
	KindCSV      = "csv"
	KindHTML     = "html"
	KindImage    = "image"
	KindText     = "text"
)

// Artifact is an artifact row's spec.
type Artifact struct {
	Title     string `json:"title"`
	Kind      string `json:"kind"`
	Language  string `json:"language,omitempty"`
	MediaType string `json:"media_type,omitempty"`
	Content   string `json:"content"`
	Session   string `json:"session,omitempty"`
	Agent     string `json:"agent,omitempty"`
}

func checkArtifact(_ context.Context, d *extension.Doc) []schema.Error {
	var a Artifact
	if !decodeSpec(d, &a) {
		return nil
	}
	return a.check()
}

// check checks what the schema cannot: the content's size in bytes, and
// that an image is what its media type says.
func (a *Artifact) check() []schema.Error {
	var errs []schema.Error
	if len(a.Content) > MaxArtifactBytes {
		errs = append(errs, problem("/content", "%d bytes: an artifact holds at most %d", len(a.Content), MaxArtifactBytes))
	}
	switch {
	case a.Kind == KindImage && a.MediaType == "":
		errs = append(errs, problem("/media_type", "an image needs its media type (image/png, image/jpeg, image/gif or image/webp)"))
	case a.Kind == KindImage:
		b, err := base64.StdEncoding.DecodeString(a.Content)
		if err != nil {
			errs = append(errs, problem("/content", "an image's content is base64: %v", err))
		} else if got := http.DetectContentType(b); got != a.MediaType {
			errs = append(errs, problem("/content", "the image is not %s (its bytes read as %s)", a.MediaType, got))
		}
	case a.MediaType != "":
		errs = append(errs, problem("/media_type", "only an image has a media type"))
	}
	if a.Language != "" && a.Kind != KindCode {
		errs = append(errs, problem("/language", "only code has a language"))
	}
	return errs
}

// Artifacts reads the artifact rows for the API: the enabled ones, at
// their current or an earlier version.
type Artifacts struct {
	rows Rows
	hist History
}

// NewArtifacts returns the reader over the rows and their history.
func NewArtifacts(rows Rows, hist History) *Artifacts { return &Artifacts{rows: rows, hist: hist} }

// ArtifactInfo is an artifact as a list shows it.
type ArtifactInfo struct {
	Name      string    `json:"name"`
	Title     string    `json:"title"`
	Kind      string    `json:"kind"`
	Language  string    `json:"language"`
	MediaType string    `json:"media_type"`
	Version   int64     `json:"version"`
	Session   string    `json:"session"`
	Agent     string    `json:"agent"`
	UpdatedAt time.Time `json:"updated_at"`
}

// ArtifactView is one version of an artifact with its content: text, or
// an image as a data: URL.
type ArtifactView struct {
	ArtifactInfo
	Content string `json:"content"`
}

// Download is one version of an artifact as a file.
type Download struct {
	Filename    string
	ContentType string // never one a browser renders as a page: HTML is text/plain
	Body        []byte
}

func info(name string, version int64, at time.Time, a *Artifact) ArtifactInfo {
	return ArtifactInfo{Name: name, Title: a.Title, Kind: a.Kind, Language: a.Language, MediaType: a.MediaType,
		Version: version, Session: a.Session, Agent: a.Agent, UpdatedAt: at}
}

// Artifacts lists the enabled artifacts, those of one session when
// session ("agent/key") is not "", by name.
func (r *Artifacts) Artifacts(ctx context.Context, session string) ([]ArtifactInfo, error) {
	rows, err := r.rows.List(ctx, "artifact")
	if err != nil {
		return nil, fmt.Errorf("artifacts: %w", err)
	}
	out := []ArtifactInfo{}
	for _, row := range rows {
		var a Artifact
		if !row.Enabled || json.Unmarshal(row.Spec, &a) != nil || (session != "" && a.Session != session) {
			continue
		}
		out = append(out, info(row.Name, row.Version, row.UpdatedAt, &a))
	}
	return out, nil
}

// version returns an enabled artifact at version (0: its current one).
func (r *Artifacts) version(ctx context.Context, name string, version int64) (ArtifactInfo, *Artifact, error) {
	st, err := r.rows.Get(ctx, "artifact", name)
	switch {
	case err != nil && !isNotFound(err):
		return ArtifactInfo{}, nil, fmt.Errorf("artifact %s: %w", name, err)
	case err != nil || !st.Enabled:
		return ArtifactInfo{}, nil, fmt.Errorf("artifact %s: %w", name, ErrNotFound)
	}
	spec, at := st.Spec, st.UpdatedAt
	if version != 0 && version != st.Version {
		spec = nil
		h, err := r.hist.History(ctx, "artifact", name)
		if err != nil {
			return ArtifactInfo{}, nil, fmt.Errorf("artifact %s: %w", name, err)
		}
		for _, c := range h {
			if c.Version == version && c.Op != store.ExtDelete {
				spec, at = c.Spec, c.At
			}
		}
		if spec == nil {
			return ArtifactInfo{}, nil, fmt.Errorf("artifact %s has no version %d: %w", name, version, ErrNotFound)
		}
	} else {
		version = st.Version
	}
	var a Artifact
	if err := json.Unmarshal(spec, &a); err != nil {
		return ArtifactInfo{}, nil, fmt.Errorf("artifact %s version %d: %w", name, version, err)
	}
	return info(name, version, at, &a), &a, nil
}

// Artifact returns an enabled artifact at version (0: its current one).
func (r *Artifacts) Artifact(ctx context.Context, name string, version int64) (ArtifactView, error) {
	inf, a, err := r.version(ctx, name, version)
	if err != nil {
		return ArtifactView{}, err
	}
	v := ArtifactView{ArtifactInfo: inf, Content: a.Content}
	if a.Kind == KindImage {
		v.Content = "data:" + a.MediaType + ";base64," + a.Content
	}
	return v, nil
}

// Download returns an enabled artifact at version (0: its current one) as
// a file: images as their bytes, everything else as UTF-8 text whose
// content type no browser renders as a page.
func (r *Artifacts) Download(ctx context.Context, name string, version int64) (Download, error) {
	_, a, err := r.version(ctx, name, version)
	if err != nil {
		return Download{}, err
	}
	ctype, ext := downloadType(a)
	d := Download{Filename: name + ext, ContentType: ctype, Body: []byte(a.Content)}
	if a.Kind == KindImage {
		if d.Body, err = base64.StdEncoding.DecodeString(a.Content); err != nil {
			return Download{}, fmt.Errorf("artifact %s: %w", name, err)
		}
	}
	return d, nil
}

// downloadType is the content type and file extension of an artifact's
// download. HTML is text/plain: a browser that opened it anyway would
// show its source, never run it on agentd's origin.
func downloadType(a *Artifact) (ctype, ext string) {
	const text = "text/plain; charset=utf-8"
	switch a.Kind {
	case KindMarkdown:
		return "text/markdown; charset=utf-8", ".md"
	case KindCSV:
		return "text/csv; charset=utf-8", ".csv"
	case KindHTML:
		return text, ".html"
	case KindImage:
		switch a.MediaType {
		case "image/png", "image/gif", "image/webp":
			return a.MediaType, "." + a.MediaType[len("image/"):]
		case "image/jpeg":
			return a.MediaType, ".jpg"
		}
		return "application/octet-stream", ".bin"
	case KindCode:
		return text, codeExt(a.Language)
	}
	return text, ".txt"
}

// codeExt is the file extension of code in a common language (".txt"
// for another).
func codeExt(language string) string {
	switch strings.ToLower(language) {
	case "go":
		return ".go"
	case "python", "py":
		return ".py"
	case "javascript", "js":
		return ".js"
	case "typescript", "ts":
		return ".ts"
	case "rust":
		return ".rs"
	case "java":
		return ".java"
	case "c":
		return ".c"
	case "cpp", "c++":
		return ".cpp"
	case "csharp", "c#":
		return ".cs"
	case "ruby":
		return ".rb"
	case "php":
		return ".php"
	case "shell", "bash", "sh":
		return ".sh"
	case "sql":
		return ".sql"
	case "yaml":
		return ".yaml"
	case "json":
		return ".json"
	case "toml":
		return ".toml"
	case "css":
		return ".css"
	case "html":
		return ".html"
	case "kotlin":
		return ".kt"
	case "swift":
		return ".swift"
	}
	return ".txt"
}
