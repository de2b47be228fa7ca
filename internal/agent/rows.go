package agent

import (
	"encoding/json"
	"fmt"
	"path"

	"go.yaml.in/yaml/v3"
)

// Agents defined by extension rows of type agent (made through the API,
// the console or by an agent) sit beside the files under agents/: of the
// same id, a row wins over a file, and a file over the built-in assistant.
// A file's own row (provenance file) is installed by the file, not here.

// SetRow installs (or replaces) an agent defined by an extension row.
func (r *Registry) SetRow(def *Definition) {
	r.mu.Lock()
	if r.rows == nil {
		r.rows = map[string]*Definition{}
	}
	r.rows[def.ID] = def
	changed := r.publish(true)
	r.mu.Unlock()
	r.notify(changed)
}

// RemoveRow removes an agent a row defined; the file of its id, if any,
// defines it again.
func (r *Registry) RemoveRow(id string) {
	r.mu.Lock()
	if _, ok := r.rows[id]; !ok {
		r.mu.Unlock()
		return
	}
	delete(r.rows, id)
	changed := r.publish(true)
	r.mu.Unlock()
	r.notify(changed)
}

// Hide takes away (or gives back) the agent of a file whose row is
// disabled; it reports whether a file defines id (a row-only agent needs
// no hiding: removing its row removes it).
func (r *Registry) Hide(id string, hide bool) bool {
	r.mu.Lock()
	def, fromFile := r.files.defs[id]
	fromFile = fromFile && def.File != ""
	if hide && !fromFile || hide == r.hidden[id] {
		r.mu.Unlock()
		return fromFile
	}
	if r.hidden == nil {
		r.hidden = map[string]bool{}
	}
	if hide {
		r.hidden[id] = true
	} else {
		delete(r.hidden, id)
	}
	changed := r.publish(true)
	r.mu.Unlock()
	r.notify(changed)
	return fromFile
}

// Row reports whether agent id is defined by a row.
func (r *Registry) Row(id string) bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	_, ok := r.rows[id]
	return ok
}

// ParseRow checks and decodes an agent definition given as JSON (an
// extension row's spec) and applies the defaults; problems are a
// *ConfigError whose fields are dotted paths into the spec.
func (r *Registry) ParseRow(id string, spec json.RawMessage) (*Definition, error) {
	if !ValidID(id) {
		return nil, fmt.Errorf("agent: %w: %q", ErrInvalidID, id)
	}
	return parseDefinition(path.Join("extension", "agent", id), spec, id, r.cfg, nil)
}

// FileSpec returns agent id's file as JSON (and its system.md as
// system_prompt), as a row of type agent holds it; ok is false when id has
// no file.
func (r *Registry) FileSpec(id string) (spec json.RawMessage, ok bool, err error) {
	data, err := readFile(r.dataDir, path.Join(AgentsDir, id+".yaml"))
	if err != nil {
		return nil, false, nil
	}
	v, err := yamlToJSON(data)
	if err != nil {
		return nil, true, fmt.Errorf("agent: %s: %w", path.Join(AgentsDir, id+".yaml"), err)
	}
	sys, err := readSystemPrompt(r.dataDir, id)
	if err != nil {
		return nil, true, err
	}
	if sys != nil {
		v["system_prompt"] = sys.text
	}
	spec, err = json.Marshal(v)
	return spec, true, err
}

// yamlToJSON decodes a YAML mapping into values encoding/json writes.
func yamlToJSON(data []byte) (map[string]any, error) {
	var v map[string]any
	if err := yaml.Unmarshal(data, &v); err != nil {
		return nil, err
	}
	if v == nil {
		v = map[string]any{}
	}
	if _, err := json.Marshal(v); err != nil {
		return nil, fmt.Errorf("cannot be written as JSON: %w", err)
	}
	return v, nil
}
