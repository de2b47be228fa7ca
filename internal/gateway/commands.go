package gateway

import (
	"context"
	"net/http"

	"agentd/internal/command"
	"agentd/internal/runtime"
)

// Commands says what a chat line that starts with a chat prefix asks
// for (command.Prefixes): an active `command` extension (/name, !name)
// or an agent (@id, #tag) (command.Router). Every message submitted
// through the API asks it, so the console, `agentd chat` and `agentd
// send` (through the daemon or in process) and API clients all route
// lines the same way.
type Commands interface {
	Route(ctx context.Context, line, addr string) (command.Route, bool, error)
	List() []command.Info
	Tags() []command.Tag
}

// CommandList is the body of GET /v1/commands: the active commands, the
// chat prefixes that route (none without commands) and the agents' tags.
type CommandList struct {
	Commands []command.Info   `json:"commands"`
	Prefixes []command.Prefix `json:"prefixes"`
	Tags     []command.Tag    `json:"tags"`
}

func (s *Server) commandList(w http.ResponseWriter, r *http.Request) {
	out := CommandList{Commands: []command.Info{}, Prefixes: []command.Prefix{}, Tags: []command.Tag{}}
	if s.o.Commands != nil {
		out.Commands, out.Prefixes, out.Tags = s.o.Commands.List(), command.Prefixes, s.o.Commands.Tags()
	}
	writeJSON(w, 200, out)
}

// routeCommand makes in, a message to a session, what the chat prefix
// its text starts with asks for: a command's filled prompt, to the
// session the command says, with its budget; or the text after "@id" or
// "#tag", to that agent's session (which refuses it as a direct post
// would, for an agent that is disabled; a paused one's waits). A line
// that routes nowhere is left as it is. A system message or a literal one
// is never routed. A command whose arguments do not parse, or an agent
// addressed with nothing to say, is a command.ErrUsage error: nothing is
// submitted.
func (s *Server) routeCommand(ctx context.Context, in *runtime.Input, literal bool) error {
	if s.o.Commands == nil || literal || in.System || in.Silent {
		return nil
	}
	rt, ok, err := s.o.Commands.Route(ctx, in.Text, in.Session)
	if !ok || err != nil {
		return err
	}
	opts, err := rt.Options(in.Options)
	if err != nil {
		return err
	}
	in.Session, in.Text, in.Options = rt.Session, rt.Text, opts
	if rt.Silent {
		in.System, in.Silent, in.Origin = true, true, "/"+rt.Command
	}
	return nil
}
