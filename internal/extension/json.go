package extension

import (
	"encoding/json"
	"time"

	"agentd/internal/store"
)

// statusJSON is a Status as the API and the extensions tool show it.
type statusJSON struct {
	Type          string          `json:"type"`
	Name          string          `json:"name"`
	Spec          json.RawMessage `json:"spec"`
	Enabled       bool            `json:"enabled"`
	Version       int64           `json:"version"`
	Provenance    string          `json:"provenance"`
	CreatedAt     time.Time       `json:"created_at"`
	CreatedBy     string          `json:"created_by"`
	UpdatedAt     time.Time       `json:"updated_at"`
	UpdatedBy     string          `json:"updated_by"`
	ActiveVersion int64           `json:"active_version"`
	Error         string          `json:"error,omitempty"`
	Seed          string          `json:"seed,omitempty"`
	Drift         bool            `json:"drift"`
}

// MarshalJSON writes the row with snake_case names (EXT-DESIGN's shape).
func (s Status) MarshalJSON() ([]byte, error) {
	return json.Marshal(statusJSON{Type: s.Type, Name: s.Name, Spec: s.Spec, Enabled: s.Enabled, Version: s.Version,
		Provenance: s.Provenance, CreatedAt: s.CreatedAt, CreatedBy: s.CreatedBy, UpdatedAt: s.UpdatedAt,
		UpdatedBy: s.UpdatedBy, ActiveVersion: s.Active, Error: s.Error, Seed: s.Seed, Drift: s.Drift})
}

// UnmarshalJSON reads what MarshalJSON writes (the API's clients).
func (s *Status) UnmarshalJSON(b []byte) error {
	var v statusJSON
	if err := json.Unmarshal(b, &v); err != nil {
		return err
	}
	*s = Status{Extension: store.Extension{Type: v.Type, Name: v.Name, Spec: v.Spec, Enabled: v.Enabled, Version: v.Version,
		Provenance: v.Provenance, CreatedAt: v.CreatedAt, CreatedBy: v.CreatedBy, UpdatedAt: v.UpdatedAt, UpdatedBy: v.UpdatedBy},
		Active: v.ActiveVersion, Error: v.Error, Seed: v.Seed, Drift: v.Drift}
	return nil
}
