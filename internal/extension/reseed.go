package extension

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io/fs"
	"maps"
	"os"
	"path"
	"path/filepath"
	"slices"
	"strings"

	"agentd/internal/store"
)

// SeedDir is the folder of seed documents under the data directory.
const SeedDir = "extensions"

// Report says what a reseed did, each row as "type/name".
type Report struct {
	Created   []string `json:"created"`
	Updated   []string `json:"updated"`
	Unchanged []string `json:"unchanged"`
	// Kept are rows a person or an agent changed, left as they are (a
	// forced reseed overwrites them).
	Kept []string `json:"kept"`
	// Removed are rows a reseed wrote whose document is gone.
	Removed []string `json:"removed"`
	// Errors are documents that could not be read or are invalid, each
	// naming its file.
	Errors []string `json:"errors"`
}

// Reseed syncs the seed documents — built in, under <data>/extensions/
// and from the Seeders — into rows: a missing row is made, a row a reseed
// wrote is updated, a row a person or an agent changed is kept unless
// force, and a row a reseed wrote whose document is gone is removed. A
// file's document wins over a built-in one of the same type and name.
// Reseed fails only when the store cannot be read.
func (m *Manager) Reseed(ctx context.Context, force bool) (Report, error) {
	var rep Report
	seeds := m.collect(&rep)
	rows, err := m.st.Extensions(ctx, "")
	if err != nil {
		return rep, fmt.Errorf("extension: reseed: %w", err)
	}
	byKey := make(map[string]*store.Extension, len(rows))
	for i := range rows {
		byKey[key(rows[i].Type, rows[i].Name)] = &rows[i]
	}
	marks := make(map[string]seedMark, len(seeds))
	for _, k := range slices.Sorted(maps.Keys(seeds)) {
		s := seeds[k]
		_, spec, err := m.check(ctx, &s.Doc)
		if err != nil {
			rep.Errors = append(rep.Errors, s.Source+": "+strings.TrimPrefix(err.Error(), "extension: "))
			continue
		}
		marks[k] = seedMark{prov: s.Provenance, hash: specHash(spec), spec: spec, enabled: s.Enabled == nil || *s.Enabled}
		m.sync(ctx, &rep, s, spec, byKey[k], force)
	}
	for _, k := range slices.Sorted(maps.Keys(byKey)) {
		e := byKey[k]
		if _, ok := seeds[k]; ok || !seeded(e) || e.SeedHash == "" {
			continue
		}
		if err := m.st.DeleteExtension(ctx, e.Type, e.Name, e.Provenance, e.Version); err != nil {
			rep.Errors = append(rep.Errors, k+": "+err.Error())
			continue
		}
		m.deactivate(ctx, e.Type, e.Name)
		rep.Removed = append(rep.Removed, k)
	}
	m.mu.Lock()
	m.seeds = marks
	m.mu.Unlock()
	if len(rep.Errors) > 0 {
		m.log.Warn("extension seed documents not applied", "errors", rep.Errors)
	}
	return rep, nil
}

// sync writes one seed document into its row as Reseed says.
func (m *Manager) sync(ctx context.Context, rep *Report, s Seed, spec []byte, row *store.Extension, force bool) {
	k := s.Key()
	e := store.Extension{Type: s.Type, Name: s.Name, Spec: spec, Enabled: true, Provenance: s.Provenance,
		SeedHash: specHash(spec), CreatedBy: s.Provenance, UpdatedBy: s.Provenance}
	if s.Enabled != nil {
		e.Enabled = *s.Enabled
	}
	ifv := int64(store.NoVersion)
	list := &rep.Created
	if row != nil {
		switch {
		case bytes.Equal(row.Spec, spec) && (seeded(row) || !force):
			rep.Unchanged = append(rep.Unchanged, k)
			m.activate(ctx, row)
			return
		case !seeded(row) && !force:
			rep.Kept = append(rep.Kept, k)
			return
		}
		e.Enabled, ifv, list = row.Enabled, row.Version, &rep.Updated
	}
	if _, err := m.write(ctx, e, store.ExtPut, ifv, row); err != nil {
		if errors.Is(err, store.ErrConflict) {
			return // another node's reseed wrote it meanwhile
		}
		rep.Errors = append(rep.Errors, s.Source+": "+err.Error())
		return
	}
	*list = append(*list, k)
}

// seeded reports whether a reseed wrote the row last.
func seeded(e *store.Extension) bool {
	return e.Provenance == store.ProvenanceBuiltin || e.Provenance == store.ProvenanceFile
}

// collect reads every seed document, by key; the later source wins:
// built-in, then the Seeders, then extensions/.
func (m *Manager) collect(rep *Report) map[string]Seed {
	seeds := map[string]Seed{}
	add := func(s Seed) {
		if _, ok := m.typ(s.Type); !ok {
			rep.Errors = append(rep.Errors, fmt.Sprintf("%s: unknown extension type %q", s.Source, s.Type))
			return
		}
		seeds[s.Key()] = s
	}
	m.readTree(rep, m.builtins, "builtin:", store.ProvenanceBuiltin, add)
	for _, sd := range m.seeders {
		got, err := sd.Seeds()
		if err != nil {
			rep.Errors = append(rep.Errors, err.Error())
		}
		for _, s := range got {
			add(s)
		}
	}
	if m.dir != "" {
		dir := filepath.Join(m.dir, SeedDir)
		if _, err := os.Stat(dir); err == nil {
			m.readTree(rep, os.DirFS(dir), dir+string(filepath.Separator), store.ProvenanceFile, add)
		}
	}
	return seeds
}

// readTree reads <type>/<name>.yaml (or .yml, .json) documents of fsys.
func (m *Manager) readTree(rep *Report, fsys fs.FS, prefix, prov string, add func(Seed)) {
	files, _ := fs.Glob(fsys, "*/*")
	for _, f := range files {
		ext := path.Ext(f)
		if ext != ".yaml" && ext != ".yml" && ext != ".json" {
			continue
		}
		typ, name := path.Dir(f), strings.TrimSuffix(path.Base(f), ext)
		src := prefix + filepath.FromSlash(f)
		data, err := fs.ReadFile(fsys, f)
		if err != nil {
			rep.Errors = append(rep.Errors, src+": "+err.Error())
			continue
		}
		d, err := DecodeSpec(data, "")
		if err != nil {
			rep.Errors = append(rep.Errors, src+": "+strings.TrimPrefix(err.Error(), "extension: "))
			continue
		}
		if d.Type == "" {
			d.Type = typ
		}
		if d.Name == "" {
			d.Name = name
		}
		if d.Type != typ || d.Name != name {
			rep.Errors = append(rep.Errors, fmt.Sprintf("%s: names %s, but its path says %s/%s", src, d.Key(), typ, name))
			continue
		}
		add(Seed{Doc: d, Provenance: prov, Source: src})
	}
}
