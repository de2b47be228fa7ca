package gateway

import (
	"net/http"

	"agentd/internal/command"
	"agentd/internal/runtime"
)

// Commands says what a chat line that starts with "/" asks for: the
// active `command` extensions (command.Router). Every message submitted
// through the API asks it, so the console, `agentd chat` and `agentd
// send` (through the daemon or in process) and API clients all run
// commands the same way.
type Commands interface {
	Route(line, addr string) (command.Route, bool, error)
	List() []command.Info
}

// CommandList is the body of GET /v1/commands.
type CommandList struct {
	Commands []command.Info `json:"commands"`
}

func (s *Server) commandList(w http.ResponseWriter, r *http.Request) {
	out := CommandList{Commands: []command.Info{}}
	if s.o.Commands != nil {
		out.Commands = s.o.Commands.List()
	}
	writeJSON(w, 200, out)
}

// routeCommand makes in, a message to a session, what the command its
// text names asks for: its filled prompt, to the session the command
// says, with its budget; a line that names no command is left as it is.
// A system message or a literal one is never a command. A command whose
// arguments do not parse is a command.ErrUsage error: nothing is
// submitted.
func (s *Server) routeCommand(in *runtime.Input, literal bool) error {
	if s.o.Commands == nil || literal || in.System || in.Silent {
		return nil
	}
	rt, ok, err := s.o.Commands.Route(in.Text, in.Session)
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
