package gateway

// The routes of the extension substrate: its types and their schemas, the
// rows (list, read, write with a dry run and If-Match, enable, disable,
// delete), a row's history and revert, and a reseed. Who changes a row
// through the API is recorded as the user, by the credential the request
// came with (CallerOf).

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"strings"
	"time"

	"agentd/internal/extension"
	"agentd/internal/schema"
	"agentd/internal/store"
)

// Extensions is the extension substrate (extension.Manager): its types,
// and its rows, which it validates, writes and activates.
type Extensions interface {
	Types() []extension.Type
	Schema(typ string) (json.RawMessage, bool)
	List(ctx context.Context, typ string) ([]extension.Status, error)
	Get(ctx context.Context, typ, name string) (extension.Status, error)
	Check(ctx context.Context, d extension.Doc) error
	Put(ctx context.Context, d extension.Doc, who extension.Who) (extension.Status, error)
	SetEnabled(ctx context.Context, typ, name string, on bool, who extension.Who) (extension.Status, error)
	Delete(ctx context.Context, typ, name string, who extension.Who) error
	History(ctx context.Context, typ, name string) ([]store.ExtensionChange, error)
	Revert(ctx context.Context, typ, name string, version int64, who extension.Who) (extension.Status, error)
	Reseed(ctx context.Context, force bool) (extension.Report, error)
}

// ExtensionList answers GET /v1/extensions. A row is shown as
// extension.Status marshals it, as the agents' extensions tool shows it
// too.
type ExtensionList struct {
	Extensions []extension.Status `json:"extensions"`
}

// ExtensionType is a type as GET /v1/extensions/schemas lists it.
type ExtensionType struct {
	Name    string `json:"name"`
	Summary string `json:"summary"`
}

// ExtensionTypes answers GET /v1/extensions/schemas.
type ExtensionTypes struct {
	Types []ExtensionType `json:"types"`
}

// ExtensionChange is one entry of a row's history.
type ExtensionChange struct {
	Version    int64           `json:"version"`
	Op         string          `json:"op"` // put, enable, disable, revert, delete
	Spec       json.RawMessage `json:"spec"`
	Enabled    bool            `json:"enabled"`
	Provenance string          `json:"provenance"`
	By         string          `json:"by"`
	At         time.Time       `json:"at"`
}

// ExtensionHistory answers GET /v1/extensions/{type}/{name}/history.
type ExtensionHistory struct {
	History []ExtensionChange `json:"history"`
}

// ExtensionCheck answers a PUT with ?dry_run=true whose document is valid:
// nothing was written.
type ExtensionCheck struct {
	Type  string `json:"type"`
	Name  string `json:"name"`
	Valid bool   `json:"valid"`
}

// RevertRequest is the body of POST /v1/extensions/{type}/{name}/revert
// (optional).
type RevertRequest struct {
	// Version is the version whose spec the row goes back to; 0 (or no
	// body) is the one before the current.
	Version int64 `json:"version,omitempty"`
}

// ReseedRequest is the body of POST /v1/extensions/reseed (optional).
type ReseedRequest struct {
	Force bool `json:"force"`
}

// who is who makes a change through the API: the user, by the credential
// the request came with ("user:socket", "user:token", "user:console").
func who(r *http.Request) extension.Who {
	return extension.Who{Provenance: store.ProvenanceUser, By: store.ProvenanceUser + ":" + CallerOf(r)}
}

// extensions answers for the substrate, or (nil) answers the request 501
// when this agentd has none.
func (s *Server) extensions(w http.ResponseWriter) Extensions {
	if s.o.Extensions == nil {
		s.unavailable(w, "the extension substrate")
	}
	return s.o.Extensions
}

// extRow returns the substrate and the row's type and name from the path,
// answering the request itself (and returning nil) for an unknown type
// (404) or a name that cannot name a row (400).
func (s *Server) extRow(w http.ResponseWriter, r *http.Request) (Extensions, string, string) {
	x := s.extensions(w)
	if x == nil {
		return nil, "", ""
	}
	typ, name := r.PathValue("type"), r.PathValue("name")
	if err := knownType(x, typ); err != nil {
		s.fail(w, err)
		return nil, "", ""
	}
	if !extension.ValidName(name) {
		s.fail(w, &extension.ValidationError{Doc: typ + "/" + name, Errors: []schema.Error{nameError(name)}})
		return nil, "", ""
	}
	return x, typ, name
}

// knownType is nil for a registered type, else an error naming the types.
func knownType(x Extensions, typ string) error {
	var names []string
	for _, t := range x.Types() {
		if t.Name == typ {
			return nil
		}
		names = append(names, t.Name)
	}
	return fmt.Errorf("%.64q: %w (the types are %s)", typ, extension.ErrUnknownType, strings.Join(names, ", "))
}

// nameError says why name cannot name a row.
func nameError(name string) schema.Error {
	return schema.Error{Pointer: "/name", Message: fmt.Sprintf("%.80q is not a valid name: use up to %d letters, digits, '-', '_' and inner dots",
		name, extension.MaxName)}
}

func (s *Server) extList(w http.ResponseWriter, r *http.Request) {
	x := s.extensions(w)
	if x == nil {
		return
	}
	typ := r.URL.Query().Get("type")
	if typ != "" {
		if err := knownType(x, typ); err != nil {
			s.fail(w, badRequest("type: %v", err))
			return
		}
	}
	list, err := x.List(r.Context(), typ)
	if err != nil {
		s.fail(w, err)
		return
	}
	if list == nil {
		list = []extension.Status{}
	}
	writeJSON(w, 200, ExtensionList{Extensions: list})
}

func (s *Server) extTypes(w http.ResponseWriter, r *http.Request) {
	x := s.extensions(w)
	if x == nil {
		return
	}
	out := ExtensionTypes{Types: []ExtensionType{}}
	for _, t := range x.Types() {
		out.Types = append(out.Types, ExtensionType{Name: t.Name, Summary: t.Summary})
	}
	writeJSON(w, 200, out)
}

func (s *Server) extSchema(w http.ResponseWriter, r *http.Request) {
	x := s.extensions(w)
	if x == nil {
		return
	}
	typ := r.PathValue("type")
	sc, ok := x.Schema(typ)
	if !ok {
		s.fail(w, knownType(x, typ))
		return
	}
	w.Header().Set("Content-Type", "application/schema+json")
	w.WriteHeader(200)
	w.Write(sc)
}

// answerRow answers with a row, its version as the ETag (If-Match takes
// it back).
func answerRow(w http.ResponseWriter, st extension.Status) {
	w.Header().Set("ETag", strconv.Quote(strconv.FormatInt(st.Version, 10)))
	writeJSON(w, 200, st)
}

func (s *Server) extGet(w http.ResponseWriter, r *http.Request) {
	x, typ, name := s.extRow(w, r)
	if x == nil {
		return
	}
	st, err := x.Get(r.Context(), typ, name)
	if err != nil {
		s.fail(w, rowErr(err, typ, name))
		return
	}
	answerRow(w, st)
}

// rowErr names the row in a store.ErrNotFound, which the table says as
// "not found" alone.
func rowErr(err error, typ, name string) error {
	if errors.Is(err, store.ErrNotFound) {
		return notFound("no extension %s/%s", typ, name)
	}
	return err
}

// extPutControl is extPut for a control row (a route of its own, the
// token's: see the route table).
func (s *Server) extPutControl(w http.ResponseWriter, r *http.Request) {
	r.SetPathValue("type", "control")
	s.extPut(w, r)
}

func (s *Server) extPut(w http.ResponseWriter, r *http.Request) {
	x, typ, name := s.extRow(w, r)
	if x == nil {
		return
	}
	dry, err := boolParam(r.URL.Query(), "dry_run")
	if err != nil {
		s.fail(w, err)
		return
	}
	ifVersion, err := ifMatch(r.Header)
	if err != nil {
		s.fail(w, err)
		return
	}
	d, err := readDoc(r)
	if err != nil {
		s.fail(w, err)
		return
	}
	if err := docAt(&d, typ, name); err != nil {
		s.fail(w, err)
		return
	}
	if dry {
		if err := x.Check(r.Context(), d); err != nil {
			s.fail(w, err)
			return
		}
		writeJSON(w, 200, ExtensionCheck{Type: typ, Name: name, Valid: true})
		return
	}
	d.IfVersion = ifVersion
	st, err := x.Put(r.Context(), d, who(r))
	if err != nil {
		s.fail(w, conflict(err, typ, name, ifVersion))
		return
	}
	answerRow(w, st)
}

// conflict says a store.ErrConflict of a write that asked for version
// ifVersion (If-Match) in words: the row is at another version.
func conflict(err error, typ, name string, ifVersion int64) error {
	if !errors.Is(err, store.ErrConflict) {
		return err
	}
	if ifVersion != 0 {
		return say(errConflict, "%s/%s is not at version %d (If-Match): it changed meanwhile; read it again", typ, name, ifVersion)
	}
	return say(errConflict, "%s/%s changed while it was written: send it again", typ, name)
}

// ifMatch is the version an If-Match header asks the row to be at, a
// version ("3", or the ETag "\"3\""); 0 without the header.
func ifMatch(h http.Header) (int64, error) {
	v := strings.TrimSpace(h.Get("If-Match"))
	if v == "" {
		return 0, nil
	}
	n, err := strconv.ParseInt(strings.Trim(v, `"`), 10, 64)
	if err != nil || n < 1 {
		return 0, badRequest("If-Match: want the row's version (its ETag), as in If-Match: \"3\"; got %.40q", v)
	}
	return n, nil
}

// readDoc reads the document of a PUT: JSON, or YAML by its content type
// (extension.DecodeSpec).
func readDoc(r *http.Request) (extension.Doc, error) {
	body, err := io.ReadAll(r.Body)
	if err != nil {
		var tooBig *http.MaxBytesError
		if errors.As(err, &tooBig) {
			return extension.Doc{}, say(errTooLarge, "body larger than %d bytes", tooBig.Limit)
		}
		return extension.Doc{}, badRequest("body: %v", err)
	}
	return extension.DecodeSpec(body, r.Header.Get("Content-Type"))
}

// docAt makes the body's document the row's at the URL: a type or name
// the body leaves out is the URL's; one it gives must be the URL's.
func docAt(d *extension.Doc, typ, name string) error {
	var errs []schema.Error
	if d.Type != "" && d.Type != typ {
		errs = append(errs, schema.Error{Pointer: "/type", Message: fmt.Sprintf("%.64q, where the URL says %q", d.Type, typ)})
	}
	if d.Name != "" && d.Name != name {
		errs = append(errs, schema.Error{Pointer: "/name", Message: fmt.Sprintf("%.80q, where the URL says %q", d.Name, name)})
	}
	if errs != nil {
		return &extension.ValidationError{Doc: typ + "/" + name, Errors: errs}
	}
	d.Type, d.Name = typ, name
	return nil
}

func (s *Server) extDelete(w http.ResponseWriter, r *http.Request) {
	x, typ, name := s.extRow(w, r)
	if x == nil {
		return
	}
	if err := x.Delete(r.Context(), typ, name, who(r)); err != nil {
		s.fail(w, conflict(rowErr(err, typ, name), typ, name, 0))
		return
	}
	w.WriteHeader(http.StatusNoContent)
}

func (s *Server) extEnable(w http.ResponseWriter, r *http.Request)  { s.extSetEnabled(w, r, true) }
func (s *Server) extDisable(w http.ResponseWriter, r *http.Request) { s.extSetEnabled(w, r, false) }

func (s *Server) extSetEnabled(w http.ResponseWriter, r *http.Request, on bool) {
	x, typ, name := s.extRow(w, r)
	if x == nil {
		return
	}
	st, err := x.SetEnabled(r.Context(), typ, name, on, who(r))
	if err != nil {
		s.fail(w, rowErr(err, typ, name))
		return
	}
	answerRow(w, st)
}

func (s *Server) extRevert(w http.ResponseWriter, r *http.Request) {
	x, typ, name := s.extRow(w, r)
	if x == nil {
		return
	}
	var req RevertRequest
	if r.ContentLength != 0 && !s.decode(w, r, &req) {
		return
	}
	if req.Version < 0 {
		s.fail(w, badRequest("version: want the version to go back to (see the row's history), or none for the one before the current"))
		return
	}
	st, err := x.Revert(r.Context(), typ, name, req.Version, who(r))
	if errors.Is(err, store.ErrNotFound) {
		if _, herr := x.History(r.Context(), typ, name); herr == nil {
			err = notFound("%s/%s has no version %d to revert to (see its history)", typ, name, req.Version)
		}
	}
	if err != nil {
		s.fail(w, rowErr(err, typ, name))
		return
	}
	answerRow(w, st)
}

func (s *Server) extHistory(w http.ResponseWriter, r *http.Request) {
	x, typ, name := s.extRow(w, r)
	if x == nil {
		return
	}
	hist, err := x.History(r.Context(), typ, name)
	if err != nil {
		s.fail(w, rowErr(err, typ, name))
		return
	}
	out := ExtensionHistory{History: make([]ExtensionChange, len(hist))}
	for i, c := range hist {
		out.History[i] = ExtensionChange{Version: c.Version, Op: c.Op, Spec: c.Spec, Enabled: c.Enabled,
			Provenance: c.Provenance, By: c.By, At: c.At}
	}
	writeJSON(w, 200, out)
}

func (s *Server) extReseed(w http.ResponseWriter, r *http.Request) {
	x := s.extensions(w)
	if x == nil {
		return
	}
	var req ReseedRequest
	if r.ContentLength != 0 && !s.decode(w, r, &req) {
		return
	}
	rep, err := x.Reseed(r.Context(), req.Force)
	if err != nil {
		s.fail(w, err)
		return
	}
	// Empty lists, not null, for clients that read them as lists.
	for _, l := range []*[]string{&rep.Created, &rep.Updated, &rep.Unchanged, &rep.Kept, &rep.Removed, &rep.Errors} {
		if *l == nil {
			*l = []string{}
		}
	}
	writeJSON(w, 200, rep)
}
