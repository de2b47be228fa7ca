package event

// Kinds of stored events about the context window.
const (
	// Summary stands in for the events it folds (SummaryData): the model
	// context is rebuilt from it and what follows; the log keeps every
	// folded event.
	Summary Kind = "summary"
	// ContextWarning says the context has grown past a threshold of the
	// model's window (ContextData).
	ContextWarning Kind = "context_warning"
	// CompactRequest is the kind of an inbox item that asks for the
	// session's context to be compacted (its text is the focus); it is
	// logged as the summary it produces, or a marker saying why not.
	CompactRequest Kind = "compact"
)

// SummaryData is the payload of a Summary event.
type SummaryData struct {
	Text string `json:"text"`
	// Through is the sequence number of the last folded event: the
	// context is this summary, then the events after Through.
	Through int64 `json:"through"`
	// Folded is how many events it folds, and FoldedTokens their
	// estimated size; Tokens is the summary's.
	Folded       int `json:"folded"`
	FoldedTokens int `json:"folded_tokens"`
	Tokens       int `json:"tokens"`
	// Model wrote the summary; Focus is what a /compact asked it to keep.
	Model string `json:"model,omitempty"`
	Focus string `json:"focus,omitempty"`
	// Restored are identifiers from the folded span the model's summary
	// left out, appended to Text so that none is lost.
	Restored []string `json:"restored,omitempty"`
	// Pruned marks an emergency cut: the oldest events were dropped from
	// the context without a model summary.
	Pruned bool `json:"pruned,omitempty"`
	// Skills are the skills loaded in the conversation it folds: they stay
	// loaded (their servers' tools stay the session's).
	Skills []string `json:"skills,omitempty"`
}

// ContextData is the payload of a ContextWarning event.
type ContextData struct {
	Tokens    int     `json:"tokens"`    // the estimated size of the next request
	Window    int     `json:"window"`    // the model's context window
	Threshold float64 `json:"threshold"` // the fraction crossed (0.75, 0.9)
	Action    string  `json:"action"`    // "warn", "compact", "prune"
}
