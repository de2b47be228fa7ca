package agent

import (
	"bytes"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"reflect"

	"go.yaml.in/yaml/v3"

	"agentd/internal/atomicfile"
)

// PutFile validates data as the content of agents/<id>.yaml — with the
// checks a file on disk gets, each problem named by its line in data and
// its field — and, if it is valid, writes it there (atomically, mode 0600:
// the file may hold an MCP server's env) and reloads. JSON is YAML too: a
// JSON document is written in YAML's block style, a YAML one as it is,
// comments included. If agents/<id>/system.md exists it stays the prompt,
// and data may not set system_prompt. created reports that there was no
// file before. A document with problems gives a *ConfigError and writes
// nothing.
func (r *Registry) PutFile(id string, data []byte) (created bool, err error) {
	if !ValidID(id) {
		return false, fmt.Errorf("agent: put %q: %w", id, ErrInvalidID)
	}
	if created, err = r.writeFile(id, data); err != nil {
		return false, err
	}
	changed, err := r.reload()
	r.notify(changed)
	if err != nil {
		return created, err
	}
	return created, r.snap.Load().errs[id]
}

func (r *Registry) writeFile(id string, data []byte) (bool, error) {
	rel := path.Join(AgentsDir, id+".yaml")
	if len(data) > maxFileSize {
		return false, fileError(rel, "file is larger than %d KiB", maxFileSize>>10)
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	sys, err := readSystemPrompt(r.dataDir, id)
	if err != nil {
		return false, err
	}
	def, err := parseDefinition(rel, data, id, r.cfg, sys)
	if err != nil {
		return false, err
	}
	out := data
	if isJSON(data) {
		// Block style reads better; keep it only if it means the same.
		if b, err := blockStyle(data); err == nil {
			if again, err := parseDefinition(rel, b, id, r.cfg, sys); err == nil && reflect.DeepEqual(def, again) {
				out = b
			}
		}
	}
	dir := filepath.Join(r.dataDir, AgentsDir)
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return false, fmt.Errorf("agent: put %q: %w", id, err)
	}
	name := filepath.Join(dir, id+".yaml")
	_, err = os.Lstat(name)
	created := errors.Is(err, fs.ErrNotExist)
	if err := atomicfile.Write(name, out, 0o600); err != nil {
		return false, fmt.Errorf("agent: put %q: %w", id, err)
	}
	return created, nil
}

// isJSON reports whether data is a JSON object (its first non-space byte
// opens one).
func isJSON(data []byte) bool {
	t := bytes.TrimLeft(data, " \t\r\n")
	return len(t) > 0 && t[0] == '{'
}

// blockStyle re-renders a YAML (or JSON) document in block style.
func blockStyle(data []byte) ([]byte, error) {
	var n yaml.Node
	if err := yaml.Unmarshal(data, &n); err != nil {
		return nil, err
	}
	var plain func(*yaml.Node)
	plain = func(n *yaml.Node) {
		n.Style = 0
		for _, c := range n.Content {
			plain(c)
		}
	}
	plain(&n)
	var b bytes.Buffer
	enc := yaml.NewEncoder(&b)
	enc.SetIndent(2)
	if err := enc.Encode(&n); err != nil {
		return nil, err
	}
	if err := enc.Close(); err != nil {
		return nil, err
	}
	return b.Bytes(), nil
}
