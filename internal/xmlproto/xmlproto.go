// Package xmlproto is agentd's XML tool protocol, for models that cannot
// call tools natively (many local models) and for any agent that asks
// for it (tool_protocol: xml): the prompt that tells the model its
// instructions, state, actions and outputs as XML, the transform of a
// conversation's tool calls and results into text, and a streaming
// parser that turns the model's text into thoughts, action calls and
// outputs as the tokens arrive. It knows nothing of the engine.
package xmlproto

import "encoding/json"

// The protocol's element names.
const (
	TagThink   = "think"
	TagCall    = "action_call"
	TagOutput  = "output"
	TagResults = "action_results"
	TagResult  = "action_result"
	TagProblem = "protocol_error"
)

// Kind is what an Item is.
type Kind int

// Item kinds.
const (
	ThoughtDelta Kind = iota + 1 // a piece of a <think> element (Text)
	Thought                      // a whole <think> element (Text)
	OutputDelta                  // a piece of an <output type="text"> element (Text)
	Output                       // a whole <output> element (Type, Attrs, Text; Args the content as JSON when it parses)
	Call                         // a whole <action_call> element (Name, Args)
	Text                         // text outside any element (Text)
	Problem                      // a call's bad JSON or missing name, a mismatched, unclosed or oversize element, one of agentd's own (Err, Raw)
)

// Item is one thing the parser found.
type Item struct {
	Kind  Kind
	Text  string
	Name  string            // Call: the action's name
	Type  string            // Output: its type attribute ("text" when left out)
	Attrs map[string]string // Output: its other attributes
	Args  json.RawMessage   // Call: the JSON arguments; Output: the content when it is JSON
	Err   string            // Problem: what is wrong, for the model
	Raw   string            // Call, Problem: the element as written
}

// Options configure a Parser.
type Options struct {
	// MaxElement bounds one element's size in bytes (default 1 MiB);
	// a longer one is a Problem and is dropped.
	MaxElement int
}

// Action is an action or output type offered to the model.
type Action struct {
	Name        string
	Description string
	Schema      json.RawMessage
}

// Section is one part of the prompt's state: <Tag attrs…>Body</Tag>,
// Body escaped unless Raw (for a body that is itself XML the renderer
// made).
type Section struct {
	Tag   string
	Attrs []Attr
	Body  string
	Raw   bool
}

// Attr is an attribute of a Section.
type Attr struct{ Name, Value string }

// Prompt is what the XML protocol's system prompt holds.
type Prompt struct {
	Instructions string    // the agent's system prompt and its additions
	Sections     []Section // state: contexts' renders, working memory
	Actions      []Action
	Outputs      []Action // output types besides text
}

// Result is one action's result, as the next step's message shows it.
type Result struct {
	Call    string // the call's id
	Name    string
	Output  string
	IsError bool
}
