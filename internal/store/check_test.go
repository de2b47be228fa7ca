package store_test

import (
	"errors"
	"testing"

	"agentd/internal/store"
)

// The version a write gives a row, and when it is a conflict.
func TestExtensionVersion(t *testing.T) {
	for _, c := range []struct {
		name                     string
		current, last, ifVersion int64
		want                     int64 // 0: store.ErrConflict
	}{
		{"a new row", 0, 0, store.NoVersion, 1},
		{"a new row, any version", 0, 0, store.AnyVersion, 1},
		{"a row made again after a delete", 0, 6, store.NoVersion, 7},
		{"a row made again, any version", 0, 6, store.AnyVersion, 7},
		{"the expected version", 3, 3, 3, 4},
		{"any version", 3, 3, store.AnyVersion, 4},
		{"none expected, one there", 3, 3, store.NoVersion, 0},
		{"a stale version", 3, 3, 2, 0},
		{"a version ahead", 3, 3, 4, 0},
		{"a version of a deleted row", 0, 6, 5, 0},
	} {
		got, err := store.ExtensionVersion(c.current, c.last, c.ifVersion)
		if c.want == 0 {
			if !errors.Is(err, store.ErrConflict) {
				t.Errorf("%s: ExtensionVersion(%d, %d, %d) = %d, %v; want ErrConflict", c.name, c.current, c.last, c.ifVersion, got, err)
			}
			continue
		}
		if err != nil || got != c.want {
			t.Errorf("%s: ExtensionVersion(%d, %d, %d) = %d, %v; want %d", c.name, c.current, c.last, c.ifVersion, got, err, c.want)
		}
	}
}

// What may be an extension row's type and name, and its provenance.
func TestCheckExtensionKey(t *testing.T) {
	long := string(make([]byte, store.MaxExtensionKey+1))
	for _, c := range []struct {
		typ, name string
		ok        bool
	}{
		{"action", "weather", true},
		{"action", "beta.2_x-y", true},
		{"action", "météo", true},
		{"", "x", false},
		{"action", "", false},
		{"action", "a/b", false},
		{"a/b", "x", false},
		{"action", "a\x00b", false},
		{"action", "a\x7fb", false},
		{"action", "\xff", false},
		{"action", long, false},
	} {
		if err := store.CheckExtensionKey(c.typ, c.name); (err == nil) != c.ok {
			t.Errorf("CheckExtensionKey(%q, %q) = %v, want ok %v", c.typ, c.name, err, c.ok)
		}
	}
	for p, ok := range map[string]bool{store.ProvenanceBuiltin: true, store.ProvenanceFile: true, store.ProvenanceUser: true,
		store.ProvenanceAgent + "researcher": true, store.ProvenanceAgent: false, "": false, "admin": false, "user:cli": false} {
		if err := store.CheckProvenance(p); (err == nil) != ok {
			t.Errorf("CheckProvenance(%q) = %v, want ok %v", p, err, ok)
		}
	}
}
