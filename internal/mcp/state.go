package mcp

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"

	"agentd/internal/agent"
)

// stateVersion is the version of the state file's format.
const stateVersion = 1

// stateFile is the JSON document at Options.StatePath.
type stateFile struct {
	Version int           `json:"version"`
	Servers []stateServer `json:"servers"`
}

type stateServer struct {
	Name   string          `json:"name"`
	Config agent.MCPServer `json:"config"`
	Agents []string        `json:"agents"` // null: node-wide
	Source string          `json:"source,omitempty"`
}

// loadState reads the servers saved at path; a missing file holds none.
func loadState(path string) ([]Def, error) {
	b, err := os.ReadFile(path)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("mcp: reading state: %w", err)
	}
	defs, err := parseState(b)
	if err != nil {
		return nil, fmt.Errorf("mcp: reading state %s: %w", path, err)
	}
	return defs, nil
}

// parseState decodes a state file.
func parseState(b []byte) ([]Def, error) {
	if len(bytes.TrimSpace(b)) == 0 {
		return nil, nil
	}
	var f stateFile
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&f); err != nil {
		return nil, fmt.Errorf("invalid JSON: %v", err)
	}
	if dec.More() {
		return nil, errors.New("invalid JSON: data after the document")
	}
	if f.Version != stateVersion {
		return nil, fmt.Errorf("unsupported version %d (want %d)", f.Version, stateVersion)
	}
	defs := make([]Def, 0, len(f.Servers))
	for _, s := range f.Servers {
		defs = append(defs, Def{Name: s.Name, Config: s.Config, Agents: s.Agents, Source: s.Source})
	}
	return defs, nil
}

// saveState writes defs to path atomically (a temporary file in the same
// folder, synced, then renamed over it), mode 0600.
func saveState(path string, defs []Def) error {
	f := stateFile{Version: stateVersion, Servers: []stateServer{}}
	for _, d := range defs {
		f.Servers = append(f.Servers, stateServer{Name: d.Name, Config: d.Config, Agents: d.Agents, Source: d.Source})
	}
	b, err := json.MarshalIndent(f, "", "  ")
	if err != nil {
		return fmt.Errorf("mcp: saving state: %w", err)
	}
	b = append(b, '\n')
	dir := filepath.Dir(path)
	tmp, err := os.CreateTemp(dir, "."+filepath.Base(path)+".*")
	if err != nil {
		return fmt.Errorf("mcp: saving state: %w", err)
	}
	done := false
	defer func() {
		if !done {
			tmp.Close()
			os.Remove(tmp.Name())
		}
	}()
	if err := tmp.Chmod(0o600); err != nil {
		return fmt.Errorf("mcp: saving state: %w", err)
	}
	if _, err := tmp.Write(b); err != nil {
		return fmt.Errorf("mcp: saving state: %w", err)
	}
	if err := tmp.Sync(); err != nil {
		return fmt.Errorf("mcp: saving state: %w", err)
	}
	if err := tmp.Close(); err != nil {
		return fmt.Errorf("mcp: saving state: %w", err)
	}
	if err := os.Rename(tmp.Name(), path); err != nil {
		return fmt.Errorf("mcp: saving state: %w", err)
	}
	done = true
	if d, err := os.Open(dir); err == nil {
		_ = d.Sync()
		d.Close()
	}
	return nil
}
