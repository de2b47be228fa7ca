package agent

import (
	_ "embed"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
)

var (
	//go:embed example/agentd.yaml
	exampleConfig []byte
	//go:embed example/assistant.yaml
	exampleAgent []byte
)

// Init creates dataDir with a commented agentd.yaml and
// agents/assistant.yaml, which runs offline on the echo model until edited.
// It never overwrites a file; created lists the paths it wrote.
func Init(dataDir string) (created []string, err error) {
	if err := os.MkdirAll(dataDir, 0o700); err != nil {
		return nil, fmt.Errorf("agent: init: %w", err)
	}
	if err := os.MkdirAll(filepath.Join(dataDir, AgentsDir), 0o700); err != nil {
		return nil, fmt.Errorf("agent: init: %w", err)
	}
	for _, f := range []struct {
		rel  string
		data []byte
	}{
		{ConfigFile, exampleConfig},
		{filepath.Join(AgentsDir, BuiltinAgentID+".yaml"), exampleAgent},
	} {
		name := filepath.Join(dataDir, f.rel)
		ok, err := createFile(name, f.data)
		if err != nil {
			return created, fmt.Errorf("agent: init: %w", err)
		}
		if ok {
			created = append(created, name)
		}
	}
	return created, nil
}

// createFile writes data to a new file name; it reports false if name
// already exists.
func createFile(name string, data []byte) (bool, error) {
	f, err := os.OpenFile(name, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)
	if errors.Is(err, fs.ErrExist) {
		return false, nil
	}
	if err != nil {
		return false, err
	}
	if _, err := f.Write(data); err != nil {
		f.Close()
		os.Remove(name)
		return false, err
	}
	if err := f.Close(); err != nil {
		os.Remove(name)
		return false, err
	}
	return true, nil
}

// ModelHint is the line `agentd serve` prints when an agent uses the echo
// model.
func ModelHint() string { return ModelHintFor("") }

// ModelHintFor is ModelHint for the agent file named file (relative to the
// data directory; "" for any agent's file).
func ModelHintFor(file string) string {
	if file == "" {
		file = AgentsDir + "/<id>.yaml"
	}
	return "Using the built-in echo model, which only repeats your messages. For a real model, " +
		"export OPENAI_API_KEY or ANTHROPIC_API_KEY and set model.provider and model.name in " + file + ", " +
		"or set model.base_url to a local server such as Ollama (http://localhost:11434/v1); see docs/configuration.md."
}
