package cli

import (
	"log/slog"

	"agentd/internal/agent"
)

// logger returns the logger of agentd's own logs, on stderr: at the level
// --log-level names, else at level; as one JSON object a line (time, level,
// msg, then the attributes) when format is "json", else as text.
func (e *env) logger(level, format string) *slog.Logger {
	if e.logLevel != "" {
		level = e.logLevel
	}
	var l slog.Level
	switch level {
	case "debug":
		l = slog.LevelDebug
	case "warn":
		l = slog.LevelWarn
	case "error":
		l = slog.LevelError
	default:
		l = slog.LevelInfo
	}
	o := &slog.HandlerOptions{Level: l}
	if format == "json" {
		return slog.New(slog.NewJSONHandler(e.stderr, o))
	}
	return slog.New(slog.NewTextHandler(e.stderr, o))
}

// quietLogger is the logger of a command that runs agentd, or part of it,
// in process: warnings and errors only unless --log-level says otherwise,
// so that the command's output stays its own, in the format agentd.yaml's
// log.format names.
func (e *env) quietLogger() *slog.Logger {
	l, _ := e.quietLoggerConfig()
	return l
}

// quietLoggerConfig is quietLogger, with the data directory's agentd.yaml
// it read, nil where it does not load (the command that loads it again
// says why): a command that runs agentd in process hands it on rather
// than parse it twice.
func (e *env) quietLoggerConfig() (*slog.Logger, *agent.Config) {
	cfg, err := agent.LoadConfig(e.dataDir())
	if err != nil {
		return e.logger("warn", agent.DefaultLogFormat), nil
	}
	return e.logger("warn", cfg.Log.Format), cfg
}
