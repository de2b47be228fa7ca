package webext

import (
	"context"
	_ "embed"
	"path"

	"agentd/internal/extension"
	"agentd/internal/schema"
)

//go:embed renderer.schema.json
var rendererSchema []byte

// RendererType is the `renderer` type: which content the console shows
// how — a content type, a tool's results (a glob over tool names) or an
// artifact kind, shown as a table, code, a diff, a chart, an image, JSON,
// markdown or key-value pairs, with declarative options. The console
// reads the rows (GET /v1/extensions?type=renderer) and draws the view
// itself: a renderer holds no script.
func RendererType() extension.Type {
	return extension.Type{Name: "renderer", Summary: "how the console shows a content type, a tool's results or an artifact kind",
		Schema: rendererSchema, Handler: checker(checkRenderer)}
}

// Renderer is a renderer row's spec.
type Renderer struct {
	Title    string          `json:"title,omitempty"`
	Match    RendererMatch   `json:"match"`
	View     string          `json:"view"`
	Priority int             `json:"priority,omitempty"`
	Options  RendererOptions `json:"options,omitzero"`
}

// RendererMatch is what a renderer shows: every field given must match.
type RendererMatch struct {
	ContentType  string `json:"content_type,omitempty"`
	Tool         string `json:"tool,omitempty"`
	ArtifactKind string `json:"artifact_kind,omitempty"`
}

// RendererOptions are a view's options.
type RendererOptions struct {
	Columns  []Column `json:"columns,omitempty"`
	Language string   `json:"language,omitempty"`
	Chart    string   `json:"chart,omitempty"`
	X        string   `json:"x,omitempty"`
	Y        []string `json:"y,omitempty"`
	Path     string   `json:"path,omitempty"`
}

// Column is one field a table or a key-value view shows.
type Column struct {
	Field  string `json:"field"`
	Title  string `json:"title,omitempty"`
	Format string `json:"format,omitempty"`
}

// Views, and which options each takes.
const (
	ViewTable    = "table"
	ViewCode     = "code"
	ViewDiff     = "diff"
	ViewChart    = "chart"
	ViewImage    = "image"
	ViewJSON     = "json"
	ViewMarkdown = "markdown"
	ViewKV       = "kv"
)

func checkRenderer(_ context.Context, d *extension.Doc) []schema.Error {
	var r Renderer
	if !decodeSpec(d, &r) {
		return nil
	}
	var errs []schema.Error
	if g := r.Match.Tool; g != "" {
		if _, err := path.Match(g, ""); err != nil {
			errs = append(errs, problem("/match/tool", "not a glob: %v", err))
		}
	}
	if r.Match == (RendererMatch{}) {
		errs = append(errs, problem("/match", "name a content_type, a tool or an artifact_kind"))
	}
	o := r.Options
	only := func(name string, set bool, views ...string) {
		if !set {
			return
		}
		for _, v := range views {
			if r.View == v {
				return
			}
		}
		errs = append(errs, problem("/options/"+name, "only a %s view takes %s", joinOr(views), name))
	}
	only("columns", len(o.Columns) > 0, ViewTable, ViewKV)
	only("language", o.Language != "", ViewCode)
	only("chart", o.Chart != "", ViewChart)
	only("x", o.X != "", ViewChart)
	only("y", len(o.Y) > 0, ViewChart)
	if r.View == ViewChart {
		if o.X == "" {
			errs = append(errs, problem("/options/x", "a chart needs the field along its x axis"))
		}
		if len(o.Y) == 0 {
			errs = append(errs, problem("/options/y", "a chart needs the fields it plots"))
		}
	}
	return errs
}

// joinOr is "a", "a or b", "a, b or c".
func joinOr(s []string) string {
	out := ""
	for i, x := range s {
		switch {
		case i == 0:
		case i == len(s)-1:
			out += " or "
		default:
			out += ", "
		}
		out += x
	}
	return out
}
