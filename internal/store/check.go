package store

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"
	"unicode/utf8"

	"agentd/internal/event"
)

// The rules every store applies to what it is given, before it writes
// anything. A store reports a broken rule as ErrInvalid.

// CheckBatch reports what is wrong with b, nil if nothing.
func CheckBatch(b *Batch) error {
	if b.Session < 0 {
		return fmt.Errorf("session id %d", b.Session)
	}
	if b.Session == 0 && (len(b.Events) > 0 || b.State != "") {
		return errors.New("events or state without a session")
	}
	if b.State != "" && !slices.Contains(States(), b.State) {
		return fmt.Errorf("unknown session state %q", b.State)
	}
	for i := range b.Events {
		e := &b.Events[i]
		switch {
		case e.Session != 0 && e.Session != b.Session:
			return fmt.Errorf("event %d belongs to session %d, batch to %d", i, e.Session, b.Session)
		case e.Kind == "":
			return fmt.Errorf("event %d has no kind", i)
		case e.Kind.Live():
			return fmt.Errorf("event %d: kind %q is live-only and never stored", i, e.Kind)
		case len(e.Data) > 0 && !json.Valid(e.Data):
			return fmt.Errorf("event %d (%s): payload is not valid JSON", i, e.Kind)
		}
	}
	for _, id := range b.Done {
		if id <= 0 {
			return fmt.Errorf("inbox item id %d", id)
		}
	}
	for i, u := range b.Usage {
		if u.Session == 0 && b.Session == 0 {
			return fmt.Errorf("usage %d has no session", i)
		}
	}
	return nil
}

// Working memory limits.
const (
	MaxWorkingKey   = 256      // bytes
	MaxWorkingValue = 64 << 10 // bytes of JSON
)

// OwnWorkingKey reports whether key is one of agentd's own working
// memory keys, which begin with "_" (a context instance's state): agents
// and the API do not set or delete them.
func OwnWorkingKey(key string) bool { return strings.HasPrefix(key, "_") }

// CheckWorkingKey reports what is wrong with a working memory key.
func CheckWorkingKey(key string) error {
	switch {
	case key == "":
		return errors.New("empty key")
	case len(key) > MaxWorkingKey:
		return fmt.Errorf("key longer than %d bytes", MaxWorkingKey)
	case !utf8.ValidString(key):
		return errors.New("key is not valid UTF-8")
	}
	for _, r := range key {
		if r < 0x20 || r == 0x7f {
			return fmt.Errorf("key %q contains a control character", key)
		}
	}
	return nil
}

// CheckWorking reads a working_memory event's payload and reports what is
// wrong with it: a store keeps working memory as the projection of these
// events.
func CheckWorking(data []byte) (event.WorkingMemoryData, error) {
	var d event.WorkingMemoryData
	if err := json.Unmarshal(data, &d); err != nil {
		return d, fmt.Errorf("working memory payload: %v", err)
	}
	if err := CheckWorkingKey(d.Key); err != nil {
		return d, fmt.Errorf("working memory: %v", err)
	}
	if !d.Deleted && len(d.Value) == 0 {
		return d, fmt.Errorf("working memory %q: no value", d.Key)
	}
	return d, nil
}

// InputTitle is the title (TitleOf) of an input event's payload, "" for a
// silent input or one without text: a store titles a session from its
// first input with one.
func InputTitle(data []byte) string {
	var in struct {
		Text   string `json:"text"`
		Silent bool   `json:"silent"`
	}
	if json.Unmarshal(data, &in) != nil || in.Silent {
		return ""
	}
	return TitleOf(in.Text)
}

// WorkingValue returns a working memory value compacted, or what is wrong
// with it: not valid JSON, or longer than MaxWorkingValue once compacted.
func WorkingValue(value json.RawMessage) ([]byte, error) {
	if !json.Valid(value) {
		return nil, errors.New("value is not valid JSON")
	}
	var buf bytes.Buffer
	if err := json.Compact(&buf, value); err != nil {
		return nil, err
	}
	if buf.Len() > MaxWorkingValue {
		return nil, fmt.Errorf("value longer than %d bytes", MaxWorkingValue)
	}
	return buf.Bytes(), nil
}

// MaxExtensionKey is the longest type or name an extension row may have,
// in bytes; the extension substrate holds names to a shorter rule.
const MaxExtensionKey = 255

// CheckExtensionKey reports what is wrong with an extension row's type
// and name: each must hold something, be valid UTF-8 of at most
// MaxExtensionKey bytes, and hold no '/' (a row's address is
// "type/name") and no control character.
func CheckExtensionKey(typ, name string) error {
	for _, f := range [2]struct{ what, s string }{{"type", typ}, {"name", name}} {
		switch {
		case f.s == "":
			return fmt.Errorf("empty %s", f.what)
		case len(f.s) > MaxExtensionKey:
			return fmt.Errorf("%s longer than %d bytes", f.what, MaxExtensionKey)
		case !utf8.ValidString(f.s):
			return fmt.Errorf("%s is not valid UTF-8", f.what)
		}
		for _, r := range f.s {
			if r < 0x20 || r == 0x7f || r == '/' {
				return fmt.Errorf("%s %q contains %q", f.what, f.s, r)
			}
		}
	}
	return nil
}

// CheckProvenance reports what is wrong with an extension row's
// provenance: it is ProvenanceBuiltin, ProvenanceFile, ProvenanceUser or
// ProvenanceAgent followed by the agent's id.
func CheckProvenance(p string) error {
	switch p {
	case ProvenanceBuiltin, ProvenanceFile, ProvenanceUser:
		return nil
	}
	if id, ok := strings.CutPrefix(p, ProvenanceAgent); ok && id != "" && utf8.ValidString(id) {
		return nil
	}
	return fmt.Errorf("unknown provenance %q", p)
}

// ExtensionWrite checks a row PutExtension is given and returns it ready
// to write: its spec compacted, UpdatedBy defaulting to its provenance.
// The row's own Version, CreatedAt, CreatedBy and UpdatedAt are ignored.
func ExtensionWrite(e Extension, op string, ifVersion int64) (Extension, error) {
	if err := CheckExtensionKey(e.Type, e.Name); err != nil {
		return e, err
	}
	switch op {
	case ExtPut, ExtEnable, ExtDisable, ExtRevert:
	default:
		return e, fmt.Errorf("%s/%s: op %q is not a write (put, enable, disable, revert)", e.Type, e.Name, op)
	}
	if ifVersion < AnyVersion {
		return e, fmt.Errorf("%s/%s: expected version %d", e.Type, e.Name, ifVersion)
	}
	if err := CheckProvenance(e.Provenance); err != nil {
		return e, fmt.Errorf("%s/%s: %v", e.Type, e.Name, err)
	}
	if !json.Valid(e.Spec) {
		return e, fmt.Errorf("%s/%s: spec is not valid JSON", e.Type, e.Name)
	}
	if !utf8.Valid(e.Spec) {
		return e, fmt.Errorf("%s/%s: spec is not valid UTF-8", e.Type, e.Name)
	}
	var buf bytes.Buffer
	if err := json.Compact(&buf, e.Spec); err != nil {
		return e, fmt.Errorf("%s/%s: spec: %v", e.Type, e.Name, err)
	}
	e.Spec = buf.Bytes()
	if e.UpdatedBy == "" {
		e.UpdatedBy = e.Provenance
	}
	e.Version, e.CreatedAt, e.CreatedBy, e.UpdatedAt = 0, time.Time{}, "", time.Time{}
	return e, nil
}

// ExtensionVersion is the version a write of a row gives it, or
// ErrConflict: current is the row's version now (0: there is none), last
// the last version in its history (a deleted row's goes on from there),
// ifVersion what the caller expects (AnyVersion, NoVersion or a version).
func ExtensionVersion(current, last, ifVersion int64) (int64, error) {
	if ifVersion != AnyVersion && ifVersion != current {
		switch {
		case current == 0:
			return 0, fmt.Errorf("%w: the row does not exist, expected at version %d", ErrConflict, ifVersion)
		case ifVersion == NoVersion:
			return 0, fmt.Errorf("%w: the row exists (version %d), expected none", ErrConflict, current)
		}
		return 0, fmt.Errorf("%w: the row is at version %d, expected %d", ErrConflict, current, ifVersion)
	}
	return max(current, last) + 1, nil
}
