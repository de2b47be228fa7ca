package sandbox

import (
	"os"
	"strconv"
)

// etcFiles are the files of /etc a command sees (read-only, when the host
// has them): enough for users' names, name resolution, TLS roots, the
// dynamic linker, the time zone and git. Nothing else of /etc is there.
var etcFiles = []string{
	"passwd", "group", "hosts", "resolv.conf", "nsswitch.conf", "host.conf",
	"ssl/certs", "ca-certificates.conf", "localtime", "ld.so.cache",
	"ld.so.conf", "ld.so.conf.d", "alternatives", "mime.types",
	"os-release", "gitconfig",
}

// rootLinks are the top-level names a merged-/usr system makes symlinks
// into /usr; bound as they are on the host.
var rootLinks = []string{"/bin", "/sbin", "/lib", "/lib32", "/lib64", "/libx32"}

// bwrapArgs returns bubblewrap's arguments (without the binary) to run
// argv for sp: an allowlist of the host read-only, nothing of it writable
// but the workspace, bound at its own host path.
func bwrapArgs(sp *Spec, dir string, root bool) []string {
	a := []string{"--ro-bind", "/usr", "/usr"}
	for _, name := range rootLinks {
		fi, err := os.Lstat(name)
		switch {
		case err != nil:
		case fi.Mode()&os.ModeSymlink != 0:
			if target, err := os.Readlink(name); err == nil {
				a = append(a, "--symlink", target, name)
			}
		case fi.IsDir():
			a = append(a, "--ro-bind", name, name)
		}
	}
	for _, f := range etcFiles {
		a = append(a, "--ro-bind-try", "/etc/"+f, "/etc/"+f)
	}
	a = append(a,
		"--proc", "/proc",
		"--dev", "/dev",
		"--size", strconv.FormatInt(int64(sp.Limits.Tmp), 10), "--tmpfs", "/tmp",
		"--bind", sp.Workspace, sp.Workspace,
		"--chdir", dir,
		"--unshare-all",
	)
	if sp.Network {
		a = append(a, "--share-net")
	}
	a = append(a, "--die-with-parent", "--new-session", "--hostname", "agentd")
	if root {
		// As root bwrap keeps its capabilities in the sandbox unless told.
		a = append(a, "--cap-drop", "ALL")
	}
	a = append(a, "--")
	return append(a, sp.Argv...)
}
