// Package service writes the systemd unit that runs agentd serve on a data
// directory: restarted on failure, logging to the journal, and confined so
// that it writes only to its data directory.
package service

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
)

// Unit describes agentd's unit.
type Unit struct {
	// Name is the unit's name without .service (default "agentd").
	Name string
	// Binary is agentd's absolute path.
	Binary string
	// DataDir is the data directory's absolute path.
	DataDir string
	// User makes a user unit (systemctl --user) instead of a system one.
	User bool
	// RunAs and Group are the account a system unit runs agentd as; ""
	// runs it as root.
	RunAs, Group string
}

// ErrPath is returned by Render for a path a unit cannot hold as it is.
var ErrPath = errors.New("path unfit for a systemd unit")

// EnvFile is the optional file of NAME=value lines, in the data directory,
// that the unit gives agentd as environment variables (API keys).
const EnvFile = "agentd.env"

// DefaultName is a unit's name when Unit.Name is empty.
const DefaultName = "agentd"

// check reports why a path cannot go into a unit unquoted: systemd splits
// on spaces, expands $ and % and reads quotes and backslashes.
func check(what, p string) error {
	if !filepath.IsAbs(p) {
		return fmt.Errorf("%w: %s %q is not absolute", ErrPath, what, p)
	}
	if i := strings.IndexFunc(p, func(r rune) bool {
		return r <= ' ' || r == 0x7f || strings.ContainsRune("\"'\\$%;", r)
	}); i >= 0 {
		return fmt.Errorf("%w: %s %q holds %q, which systemd would read as more than a path; use a path without it (a symlink will do)", ErrPath, what, p, p[i:i+1])
	}
	return nil
}

// Render returns the unit file.
func Render(u Unit) ([]byte, error) {
	if u.Name == "" {
		u.Name = DefaultName
	}
	for _, c := range []struct{ what, p string }{{"agentd's binary", u.Binary}, {"the data directory", u.DataDir}} {
		if err := check(c.what, c.p); err != nil {
			return nil, err
		}
	}
	if strings.ContainsAny(u.Name, "/ \t\n%$\\") || u.Name == "." || u.Name == ".." {
		return nil, fmt.Errorf("%w: unit name %q", ErrPath, u.Name)
	}
	return unit(u, filepath.Join(u.DataDir, EnvFile)), nil
}

// Path returns where the unit goes: /etc/systemd/system, or for a user
// unit $XDG_CONFIG_HOME/systemd/user (~/.config/systemd/user), unless dir
// names another directory.
func Path(u Unit, dir string, getenv func(string) string) (string, error) {
	name := u.Name
	if name == "" {
		name = DefaultName
	}
	switch {
	case dir != "":
	case !u.User:
		dir = "/etc/systemd/system"
	case getenv("XDG_CONFIG_HOME") != "":
		dir = filepath.Join(getenv("XDG_CONFIG_HOME"), "systemd", "user")
	case getenv("HOME") != "":
		dir = filepath.Join(getenv("HOME"), ".config", "systemd", "user")
	default:
		return "", errors.New("service: neither $XDG_CONFIG_HOME nor $HOME is set: where do user units go?")
	}
	return filepath.Join(dir, name+".service"), nil
}

// ErrNoVerifier is returned by Verify when systemd-analyze is not installed.
var ErrNoVerifier = errors.New("systemd-analyze is not installed")

// Verify checks a unit file with systemd-analyze verify: it returns what
// systemd-analyze says of it (nothing for a good unit), and an error if it
// finds the unit unusable. The file's name must end in .service.
func Verify(ctx context.Context, file string) (string, error) {
	bin, err := exec.LookPath("systemd-analyze")
	if err != nil {
		return "", ErrNoVerifier
	}
	// System mode: a user manager may not run here (no session), and the
	// checks that matter (syntax, the binary, the options) are the same.
	cmd := exec.CommandContext(ctx, bin, "verify", file)
	cmd.Env = append(os.Environ(), "SYSTEMD_LOG_COLOR=0")
	out, err := cmd.CombinedOutput()
	said := strings.TrimSpace(string(out))
	if err != nil {
		return said, fmt.Errorf("service: systemd-analyze verify %s: %w", file, err)
	}
	return said, nil
}

// unit writes the unit file of u, whose paths have been checked. It is
// written out rather than kept as a text/template: a template's reflective
// method calls keep every exported method of every type in the binary.
func unit(u Unit, envFile string) []byte {
	var b bytes.Buffer
	line := func(parts ...string) {
		for _, p := range parts {
			b.WriteString(p)
		}
		b.WriteByte('\n')
	}
	journal, target := "", "multi-user.target"
	if u.User {
		journal, target = " --user", "default.target"
	}
	line("# agentd serve on ", u.DataDir, ": written by agentd service install,")
	line("# removed by agentd service uninstall.")
	line("[Unit]")
	line("Description=agentd (data in ", u.DataDir, ")")
	line("After=network-online.target")
	line("Wants=network-online.target")
	line()
	line("[Service]")
	line("Type=simple")
	line("ExecStart=", u.Binary, " --data ", u.DataDir, " serve")
	line("# On SIGTERM agentd stops taking input and lets running turns finish for")
	line("# --grace (10s); what is left resumes at the next start.")
	line("TimeoutStopSec=30")
	line("Restart=on-failure")
	line("RestartSec=2")
	line("# API keys and other variables, as NAME=value lines (mode 0600); optional.")
	line("EnvironmentFile=-", envFile)
	line("# Its output goes to the journal: journalctl", journal, " -u ", u.Name)
	line("StandardOutput=journal")
	line("StandardError=journal")
	if !u.User && u.RunAs != "" {
		line("User=", u.RunAs)
		if u.Group != "" {
			line("Group=", u.Group)
		}
	}
	line("UMask=0077")
	line("# Hardening.")
	line("NoNewPrivileges=yes")
	line("LockPersonality=yes")
	line("RestrictRealtime=yes")
	line("RestrictSUIDSGID=yes")
	line("SystemCallArchitectures=native")
	if u.User {
		line("# A user unit cannot confine the file system (ProtectSystem=, PrivateTmp=,")
		line("# ReadWritePaths=) without unprivileged user namespaces; a system unit")
		line("# (agentd service install without --user) does.")
	} else {
		line("# agentd writes only to its data directory. An MCP server that writes")
		line("# elsewhere (npx to ~/.npm) needs that path added to ReadWritePaths.")
		line("ProtectSystem=strict")
		line("ProtectHome=read-only")
		line("ReadWritePaths=", u.DataDir)
		line("PrivateTmp=yes")
		line("PrivateDevices=yes")
		line("ProtectKernelTunables=yes")
		line("ProtectKernelModules=yes")
		line("ProtectKernelLogs=yes")
		line("ProtectControlGroups=yes")
		line("ProtectClock=yes")
		line("ProtectHostname=yes")
	}
	line()
	line("[Install]")
	line("WantedBy=", target)
	return b.Bytes()
}
