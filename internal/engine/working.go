package engine

import "agentd/internal/xmlproto"

// stateSections are what the model is shown of the turn's state each
// step: the context instance's instructions and renders, then the
// session's working memory (budgeted). The native protocol renders them
// as sections of the system prompt, the XML protocol as elements.
func (r *run) stateSections() []xmlproto.Section {
	return nil
}
