package event

import "encoding/json"

// Kinds of events about extensions.
const (
	// Control records that a control (an extension row of type control)
	// changed value, in the session <agent>/controls of the agent it
	// applies to (ControlData).
	Control Kind = "control"
	// Extension says an extension row's activation changed on this node
	// (ExtensionData); live, with Session 0: it is about no session.
	Extension Kind = "extension"
)

// ControlData is the payload of a Control event.
type ControlData struct {
	Name     string          `json:"name"`
	Value    json.RawMessage `json:"value"`
	Previous json.RawMessage `json:"previous,omitempty"` // absent for a new control
	Effect   string          `json:"effect,omitempty"`
	Version  int64           `json:"version"`
	By       string          `json:"by,omitempty"`
}

// ExtensionData is the payload of an Extension event.
type ExtensionData struct {
	Type    string `json:"type"`
	Name    string `json:"name"`
	Version int64  `json:"version,omitempty"` // 0: the row is gone
	Enabled bool   `json:"enabled"`
	Active  int64  `json:"active_version"`
	Error   string `json:"error,omitempty"`
}
