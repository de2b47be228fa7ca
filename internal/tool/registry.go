package tool

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"maps"
	"reflect"
	"regexp"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/google/jsonschema-go/jsonschema"
)

// Errors returned by Register.
var (
	ErrDuplicate   = errors.New("tool already registered")
	ErrInvalidName = errors.New("invalid tool name")
	ErrInvalidKind = errors.New("invalid tool kind")
	ErrBadSchema   = errors.New("invalid input schema")
)

// namePattern is what a tool name must look like: it is sent to model APIs
// as a function name, and those accept no more than this.
var namePattern = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`^[a-zA-Z0-9_-]{1,64}$`) })

// RegistryOptions configures a Registry. The zero value is usable.
type RegistryOptions struct {
	// Logger receives tool panics and calls abandoned at their deadline.
	// Nil discards them.
	Logger *slog.Logger
	// Timeout and MaxOutputBytes are the defaults for calls whose
	// RunOptions leave them zero (60s and 64 KiB when these are zero too).
	Timeout        time.Duration
	MaxOutputBytes int
}

// Registry holds the tools agentd can run, keyed by name. It is safe for
// concurrent use. Lookups and runs read an immutable snapshot and take no
// lock; Register and Unregister copy the snapshot.
type Registry struct {
	log      *slog.Logger
	defaults RunOptions

	mu   sync.Mutex // serializes writers
	snap atomic.Pointer[snapshot]
}

// snapshot is one immutable version of the registry's contents.
type snapshot struct {
	byName  map[string]*entry
	version uint64 // one more than the snapshot before

	// sorted is every spec, by name, made when first asked for: a node
	// registering thousands of tools (action rows at start) sorts once,
	// not once per tool.
	sorted func() []Spec
}

// specs returns every spec, sorted by name; the slice is shared.
func (s *snapshot) specs() []Spec { return s.sorted() }

// entry is a registered tool with its spec and schema, both taken once at
// registration. The general validator's compiled schema is made then, or,
// for a schema the fast checker covers and that cannot fail to compile
// (see plainSchema), when a call first needs it: a node starts without
// compiling the schemas of its tools, most of which the fast checker
// alone ever sees.
type entry struct {
	tool Tool
	spec Spec
	fast *fastSchema // nil when the schema needs the general validator

	once   sync.Once
	schema *jsonschema.Resolved
	err    error
}

// resolved returns the general validator's schema, compiling it once.
func (e *entry) resolved() (*jsonschema.Resolved, error) {
	e.once.Do(func() {
		if e.schema == nil {
			e.schema, e.err = compileSchema(e.spec.InputSchema)
		}
	})
	return e.schema, e.err
}

// NewRegistry returns an empty registry. opts may be nil.
func NewRegistry(opts *RegistryOptions) *Registry {
	var o RegistryOptions
	if opts != nil {
		o = *opts
	}
	r := &Registry{
		log:      o.Logger,
		defaults: RunOptions{Timeout: o.Timeout, MaxOutputBytes: o.MaxOutputBytes},
	}
	if r.log == nil {
		r.log = slog.New(slog.DiscardHandler)
	}
	if r.defaults.Timeout <= 0 {
		r.defaults.Timeout = DefaultTimeout
	}
	if r.defaults.MaxOutputBytes <= 0 {
		r.defaults.MaxOutputBytes = DefaultMaxOutputBytes
	}
	r.snap.Store(newSnapshot(map[string]*entry{}, 0))
	return r
}

// Register adds t. It fails with ErrInvalidName if the name does not match
// ^[a-zA-Z0-9_-]{1,64}$, ErrInvalidKind for an unknown Kind, ErrDuplicate if
// a tool of that name is already registered, and ErrBadSchema if the input
// schema is not a valid JSON Schema for an object. An empty or null schema
// accepts an object with any properties.
//
// The tool's Spec is read once, here; later changes to what Spec returns
// are not seen.
func (r *Registry) Register(t Tool) error { return r.Replace(nil, t) }

// Replace puts t in place of old, the tool registered under t's name, in
// one step: a call made meanwhile finds old or t, never no tool. With old
// nil it is Register. It fails as Register does, and with ErrDuplicate
// when what is registered under the name is not old (another tool, or
// none while old is not nil); then nothing changed. old must be of a
// comparable type (a pointer): it is told apart by ==.
func (r *Registry) Replace(old, t Tool) error {
	if old != nil && !reflect.TypeOf(old).Comparable() {
		return fmt.Errorf("tool: replace: a %T cannot be compared", old)
	}
	e, err := newEntry(t)
	if err != nil {
		return err
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	snap := r.snap.Load()
	cur, ok := snap.byName[e.spec.Name]
	switch {
	case old == nil && ok:
		return fmt.Errorf("tool: register %q: %w", e.spec.Name, ErrDuplicate)
	case old != nil && (!ok || cur.tool != old):
		return fmt.Errorf("tool: replace %q: %w: it is not the tool to replace", e.spec.Name, ErrDuplicate)
	}
	byName := maps.Clone(snap.byName)
	if byName == nil {
		byName = map[string]*entry{}
	}
	byName[e.spec.Name] = e
	r.snap.Store(newSnapshot(byName, snap.version+1))
	return nil
}

// newEntry checks t's spec and compiles its schema.
func newEntry(t Tool) (*entry, error) {
	if t == nil {
		return nil, fmt.Errorf("tool: register: %w: nil tool", ErrInvalidName)
	}
	spec := t.Spec()
	if !namePattern().MatchString(spec.Name) {
		return nil, fmt.Errorf("tool: register %q: %w: want 1 to 64 letters, digits, '_' or '-'", spec.Name, ErrInvalidName)
	}
	switch spec.Kind {
	case "", KindModel, KindContext, KindAction, KindPostprocess, KindServer:
	default:
		return nil, fmt.Errorf("tool: register %q: %w %q", spec.Name, ErrInvalidKind, spec.Kind)
	}
	spec.InputSchema = bytes.Clone(spec.InputSchema)
	e := &entry{tool: t, spec: spec}
	plain := plainSchema(spec.InputSchema)
	if plain != nil {
		e.fast = plain
	} else {
		schema, err := compileSchema(spec.InputSchema)
		if err != nil {
			return nil, fmt.Errorf("tool: register %q: %w", spec.Name, err)
		}
		e.schema, e.fast = schema, compileFast(spec.InputSchema)
	}
	return e, nil
}

// CheckSpec reports whether Register would accept a tool with spec (its
// name, kind and input schema), without registering anything.
func CheckSpec(spec Spec) error {
	_, err := newEntry(Func(spec, nil))
	return err
}

// Unregister removes the tool called name and reports whether it was
// registered. Calls already running finish normally.
func (r *Registry) Unregister(name string) bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	old := r.snap.Load()
	if _, ok := old.byName[name]; !ok {
		return false
	}
	byName := make(map[string]*entry, len(old.byName))
	for k, v := range old.byName {
		if k != name {
			byName[k] = v
		}
	}
	r.snap.Store(newSnapshot(byName, old.version+1))
	return true
}

func newSnapshot(byName map[string]*entry, version uint64) *snapshot {
	return &snapshot{byName: byName, version: version, sorted: sync.OnceValue(func() []Spec {
		specs := make([]Spec, 0, len(byName))
		for _, e := range byName {
			specs = append(specs, e.spec)
		}
		slices.SortFunc(specs, func(a, b Spec) int { return strings.Compare(a.Name, b.Name) })
		return specs
	})}
}

// Version tells the registry's contents apart: it changes with every
// Register and Unregister, so what was derived from Visible may be kept
// while it stays the same.
func (r *Registry) Version() uint64 { return r.snap.Load().version }

// Get returns the tool called name.
func (r *Registry) Get(name string) (Tool, bool) {
	e, ok := r.snap.Load().byName[name]
	if !ok {
		return nil, false
	}
	return e.tool, true
}

// Specs returns the specs of all registered tools, sorted by name. The
// slice is the caller's; the InputSchema bytes are shared and must not be
// modified.
func (r *Registry) Specs() []Spec {
	return slices.Clone(r.snap.Load().specs())
}

// Visible returns the specs of the tools policy p allows or asks about,
// sorted by name: what an agent with that policy may be offered. The
// InputSchema bytes are shared and must not be modified.
func (r *Registry) Visible(p Policy) []Spec {
	specs := r.snap.Load().specs()
	out := make([]Spec, 0, len(specs))
	for i := range specs {
		if p.Decide(specs[i]).Verdict != Deny {
			out = append(out, specs[i])
		}
	}
	return out
}

// names returns up to max registered names and how many were left out.
func (s *snapshot) names(max int) ([]string, int) {
	specs := s.specs()
	n := min(len(specs), max)
	out := make([]string, n)
	for i := range n {
		out[i] = specs[i].Name
	}
	return out, len(specs) - n
}

// compileSchema parses and resolves an input schema. Empty or null means
// an object with any properties.
func compileSchema(raw json.RawMessage) (*jsonschema.Resolved, error) {
	s := &jsonschema.Schema{Type: "object"}
	if t := bytes.TrimSpace(raw); len(t) > 0 && !bytes.Equal(t, []byte("null")) {
		s = new(jsonschema.Schema)
		if err := json.Unmarshal(t, s); err != nil {
			return nil, fmt.Errorf("%w: %v", ErrBadSchema, err)
		}
		if s.Type != "" && s.Type != "object" || s.Types != nil && !slices.Contains(s.Types, "object") {
			return nil, fmt.Errorf("%w: the arguments must be an object, but the schema's type is %s", ErrBadSchema, schemaTypes(s))
		}
		if err := checkTypes(s, "#"); err != nil {
			return nil, fmt.Errorf("%w: %v", ErrBadSchema, err)
		}
	}
	rs, err := s.Resolve(&jsonschema.ResolveOptions{ValidateDefaults: true})
	if err != nil {
		return nil, fmt.Errorf("%w: %v", ErrBadSchema, err)
	}
	return rs, nil
}

func schemaTypes(s *jsonschema.Schema) string {
	if s.Type != "" {
		return fmt.Sprintf("%q", s.Type)
	}
	return fmt.Sprintf("%q", s.Types)
}

var jsonTypes = []string{"array", "boolean", "integer", "null", "number", "object", "string"}

var (
	schemaPtrType   = reflect.TypeFor[*jsonschema.Schema]()
	schemaSliceType = reflect.TypeFor[[]*jsonschema.Schema]()
	schemaMapType   = reflect.TypeFor[map[string]*jsonschema.Schema]()
)

// checkTypes reports a "type" keyword anywhere in s that names no JSON
// type: such a schema resolves, but then rejects every value, so a typo
// like "strng" would fail every call instead of registration.
func checkTypes(s *jsonschema.Schema, at string) error {
	if s == nil {
		return nil
	}
	for _, t := range append([]string{s.Type}, s.Types...) {
		if t != "" && !slices.Contains(jsonTypes, t) {
			return fmt.Errorf("%s: unknown type %q", at, t)
		}
	}
	v := reflect.ValueOf(s).Elem()
	for i := range v.NumField() {
		f, name := v.Field(i), keyword(v.Type().Field(i))
		switch f.Type() {
		case schemaPtrType:
			if err := checkTypes(f.Interface().(*jsonschema.Schema), at+"/"+name); err != nil {
				return err
			}
		case schemaSliceType:
			for j, sub := range f.Interface().([]*jsonschema.Schema) {
				if err := checkTypes(sub, fmt.Sprintf("%s/%s/%d", at, name, j)); err != nil {
					return err
				}
			}
		case schemaMapType:
			for k, sub := range f.Interface().(map[string]*jsonschema.Schema) {
				if err := checkTypes(sub, at+"/"+name+"/"+k); err != nil {
					return err
				}
			}
		}
	}
	return nil
}

// keyword is the JSON Schema keyword of a jsonschema.Schema field.
func keyword(f reflect.StructField) string {
	switch f.Name {
	case "Items", "ItemsArray":
		return "items"
	case "DependencySchemas":
		return "dependencies"
	}
	name, _, _ := strings.Cut(f.Tag.Get("json"), ",")
	if name == "" || name == "-" {
		return f.Name
	}
	return name
}
