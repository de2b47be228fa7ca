package cli

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"

	"github.com/spf13/cobra"

	"agentd/internal/service"
)

// serviceFlags are the flags both service commands take.
type serviceFlags struct {
	user    bool
	name    string
	unitDir string
}

func (f *serviceFlags) add(cmd *cobra.Command) {
	cmd.Flags().BoolVar(&f.user, "user", false, "a user unit (systemctl --user), not a system one")
	cmd.Flags().StringVar(&f.name, "name", service.DefaultName, "the unit's name, without .service")
	cmd.Flags().StringVar(&f.unitDir, "unit-dir", "", "the directory of the unit file (default /etc/systemd/system, or ~/.config/systemd/user with --user)")
}

// systemctl is the systemctl command line for the flags' manager.
func (f *serviceFlags) systemctl(args ...string) string {
	if f.user {
		args = append([]string{"--user"}, args...)
	}
	return "systemctl " + strings.Join(args, " ")
}

func (e *env) serviceCmd() *cobra.Command {
	return group(&cobra.Command{
		Use:   "service",
		Short: "Run agentd under systemd: install or remove its unit",
		Long: "Write a systemd unit that runs agentd serve on the data directory: restarted on failure,\n" +
			"logging to the journal, and confined to write only to its data directory; or remove it.",
		Example: "  agentd service install --data /srv/agentd\n" +
			"  agentd service install --user\n" +
			"  agentd service uninstall --user",
	}, e.serviceInstallCmd(), e.serviceUninstallCmd())
}

func (e *env) serviceInstallCmd() *cobra.Command {
	var f serviceFlags
	var dryRun bool
	cmd := &cobra.Command{
		Use:   "install",
		Short: "Write the systemd unit that runs agentd serve on the data directory",
		Long: "Write a systemd unit that runs `agentd serve` on the data directory, with this agentd binary:\n" +
			"restarted on failure, its output in the journal, API keys read from agentd.env in the data\n" +
			"directory, and hardened (no new privileges; a system unit also writes only to the data\n" +
			"directory, with a private /tmp). A system unit runs agentd as the data directory's owner.\n" +
			"The unit is checked with systemd-analyze verify, where it is installed, before it is written.\n" +
			"--dry-run prints it instead.",
		Example: "  agentd service install --data /srv/agentd\n" +
			"  agentd service install --user\n" +
			"  agentd service install --dry-run",
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if err := e.needData(); err != nil {
				return err
			}
			u, err := e.unit(f)
			if err != nil {
				return err
			}
			b, err := service.Render(u)
			if err != nil {
				return withCode(ExitUsage, err)
			}
			if dryRun {
				_, err := e.stdout.Write(b)
				return err
			}
			path, err := service.Path(u, f.unitDir, os.Getenv)
			if err != nil {
				return err
			}
			checked, err := e.verifyUnit(cmd.Context(), filepath.Base(path), b)
			if err != nil {
				return err
			}
			if err := writeUnit(path, b); err != nil {
				return err
			}
			fmt.Fprintf(e.stdout, "wrote %s%s\n", path, checked)
			fmt.Fprintf(e.stdout, "start it now and at every boot:\n  %s\n  %s\n", f.systemctl("daemon-reload"), f.systemctl("enable", "--now", u.Name))
			journal := "journalctl -u " + u.Name + " -f"
			if f.user {
				journal = "journalctl --user -u " + u.Name + " -f"
			}
			fmt.Fprintf(e.stdout, "its log: %s\nAPI keys: NAME=value lines in %s (mode 0600)\n", journal, filepath.Join(u.DataDir, service.EnvFile))
			if f.user {
				fmt.Fprintln(e.stdout, "to keep it running when you are logged out: loginctl enable-linger")
			} else if u.RunAs == "" {
				fmt.Fprintf(e.stdout, "warning: %s belongs to root, so agentd runs as root; give the data directory to an account of its own (chown -R) and install again\n", u.DataDir)
			}
			return nil
		},
	}
	f.add(cmd)
	cmd.Flags().BoolVar(&dryRun, "dry-run", false, "print the unit instead of writing it")
	return cmd
}

// unit describes the unit for the flags and the data directory.
func (e *env) unit(f serviceFlags) (service.Unit, error) {
	bin, err := os.Executable()
	if err == nil {
		bin, err = filepath.EvalSymlinks(bin)
	}
	if err != nil {
		return service.Unit{}, fmt.Errorf("service: where is agentd's binary? %w", err)
	}
	u := service.Unit{Name: f.name, Binary: bin, DataDir: e.absDataDir(), User: f.user}
	if f.user {
		return u, nil
	}
	// A system unit runs agentd as the data directory's owner.
	fi, err := os.Stat(u.DataDir)
	if err != nil {
		return u, err
	}
	st, ok := fi.Sys().(*syscall.Stat_t)
	if !ok || st.Uid == 0 {
		return u, nil
	}
	uid, gid := strconv.FormatUint(uint64(st.Uid), 10), strconv.FormatUint(uint64(st.Gid), 10)
	u.RunAs, u.Group = uid, gid
	if acct, err := user.LookupId(uid); err == nil {
		u.RunAs = acct.Username
	}
	if g, err := user.LookupGroupId(gid); err == nil {
		u.Group = g.Name
	}
	return u, nil
}

// verifyUnit checks the unit with systemd-analyze before it is installed,
// and says how it was checked.
func (e *env) verifyUnit(ctx context.Context, name string, b []byte) (string, error) {
	dir, err := os.MkdirTemp("", "agentd-unit-")
	if err != nil {
		return "", err
	}
	defer os.RemoveAll(dir)
	tmp := filepath.Join(dir, name)
	if err := os.WriteFile(tmp, b, 0o644); err != nil {
		return "", err
	}
	said, err := service.Verify(ctx, tmp)
	switch {
	case errors.Is(err, service.ErrNoVerifier):
		return " (not checked: systemd-analyze is not installed)", nil
	case err != nil:
		return "", fmt.Errorf("the unit did not pass systemd-analyze verify, so it was not written:\n%s", said)
	case said != "":
		fmt.Fprintf(e.stderr, "systemd-analyze verify says:\n%s\n", said)
		return " (checked with systemd-analyze verify: see what it says above)", nil
	}
	return " (checked with systemd-analyze verify)", nil
}

// writeUnit writes a unit file (mode 0644, as systemd's are) through a
// temporary file in its directory, replacing what was there.
func writeUnit(path string, b []byte) error {
	dir := filepath.Dir(path)
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return unitPermission(path, err)
	}
	tmp, err := os.CreateTemp(dir, ".agentd-unit-*")
	if err != nil {
		return unitPermission(path, err)
	}
	defer os.Remove(tmp.Name())
	_, err = tmp.Write(b)
	if err == nil {
		err = tmp.Chmod(0o644)
	}
	if cerr := tmp.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = os.Rename(tmp.Name(), path)
	}
	return unitPermission(path, err)
}

// unitPermission says what to do when a unit cannot be written.
func unitPermission(path string, err error) error {
	if errors.Is(err, fs.ErrPermission) {
		return fmt.Errorf("cannot write %s: a system unit needs root (sudo agentd service install …), or install a user unit with --user: %w", path, err)
	}
	return err
}

func (e *env) serviceUninstallCmd() *cobra.Command {
	var f serviceFlags
	cmd := &cobra.Command{
		Use:   "uninstall",
		Short: "Remove the systemd unit agentd service install wrote",
		Long: "Remove the unit file agentd service install wrote. A unit that is running or enabled is\n" +
			"refused: stop and disable it first (the command to do so is printed).",
		Example: "  agentd service uninstall\n" +
			"  agentd service uninstall --user --name agentd-lab",
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			u := service.Unit{Name: f.name, User: f.user}
			path, err := service.Path(u, f.unitDir, os.Getenv)
			if err != nil {
				return err
			}
			b, err := os.ReadFile(path)
			if errors.Is(err, fs.ErrNotExist) {
				other := "a user unit (--user)"
				if f.user {
					other = "a system unit (without --user)"
				}
				return withCode(ExitNotFound, fmt.Errorf("no unit at %s: was it %s, or named otherwise (--name)?", path, other))
			}
			if err != nil {
				return err
			}
			if !bytes.HasPrefix(b, []byte("# agentd serve on ")) {
				return fmt.Errorf("%s was not written by agentd service install: remove it yourself if it should go", path)
			}
			if busy := f.inUse(cmd.Context()); busy != "" {
				return fmt.Errorf("%s is %s: stop and disable it first (%s), then uninstall", f.name, busy, f.systemctl("disable", "--now", f.name))
			}
			if err := os.Remove(path); err != nil {
				return unitPermission(path, err)
			}
			fmt.Fprintf(e.stdout, "removed %s\nsystemd forgets it at: %s\n", path, f.systemctl("daemon-reload"))
			return nil
		},
	}
	f.add(cmd)
	return cmd
}

// inUse says whether systemd runs or starts the unit ("running",
// "enabled"), or "" when it does not or cannot be asked.
func (f *serviceFlags) inUse(ctx context.Context) string {
	ask := func(verb string) string {
		args := []string{verb, f.name}
		if f.user {
			args = append([]string{"--user"}, args...)
		}
		out, _ := exec.CommandContext(ctx, "systemctl", args...).Output()
		return strings.TrimSpace(string(out))
	}
	if _, err := exec.LookPath("systemctl"); err != nil {
		return ""
	}
	switch ask("is-active") {
	case "active", "activating", "reloading", "deactivating":
		return "running"
	}
	if strings.HasPrefix(ask("is-enabled"), "enabled") {
		return "enabled"
	}
	return ""
}
