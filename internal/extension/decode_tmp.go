package extension

import (
	"encoding/json"
	"fmt"

	"go.yaml.in/yaml/v3"
)

// DecodeDocs decodes one YAML or JSON document.
func DecodeDocs(data []byte) ([]Doc, error) {
	var v struct {
		Type    string         `yaml:"type"`
		Name    string         `yaml:"name"`
		Spec    map[string]any `yaml:"spec"`
		Enabled *bool          `yaml:"enabled"`
	}
	if err := yaml.Unmarshal(data, &v); err != nil {
		return nil, fmt.Errorf("extension: %w", err)
	}
	spec, err := json.Marshal(v.Spec)
	if err != nil {
		return nil, err
	}
	return []Doc{{Type: v.Type, Name: v.Name, Spec: spec, Enabled: v.Enabled, Line: 1}}, nil
}
