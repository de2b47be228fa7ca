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

// procMasked are the files of /proc that show the host's kernel or act
// on it (what Docker and Podman mask): each the kernel has is covered by
// the host's /dev/null bound read-only, which bwrap mounts without device
// access, so it can be neither read nor written.
var procMasked = []string{"kcore", "keys", "latency_stats", "timer_list", "timer_stats", "sched_debug", "sysrq-trigger"}

// procReadOnly are the trees of /proc bound read-only: a command is uid 0
// of the host when agentd is root, and /proc/sys checks only that uid
// (kernel.core_pattern, kernel.modprobe: programs the kernel runs as root).
var procReadOnly = []string{"sys", "irq", "bus", "fs", "acpi", "scsi", "asound"}

// bwrapFDs are descriptors bwrap gets besides its standard ones; -1 for
// none.
type bwrapFDs struct {
	seccomp   int // the filter (seccompFile), read by --seccomp
	workspace int // an open directory of the workspace, bound by --bind-fd
}

// bwrapFiles returns the descriptors bwrap gets for sp, numbered from
// first on as they are given to it, the files to give, and a func that
// closes what bwrapFiles opened (the seccomp filter's pipe), to call once
// bwrap is started; sp.WorkspaceFD stays the caller's.
func bwrapFiles(sp *Spec, first int) (bwrapFDs, []*os.File, func(), error) {
	fds := bwrapFDs{seccomp: -1, workspace: -1}
	var files []*os.File
	done := func() {}
	f, err := seccompFile()
	if err != nil {
		return fds, nil, done, err
	}
	if f != nil {
		fds.seccomp = first + len(files)
		files = append(files, f)
		done = func() { f.Close() }
	}
	if sp.WorkspaceFD != nil {
		fds.workspace = first + len(files)
		files = append(files, sp.WorkspaceFD)
	}
	return fds, files, done, nil
}

// bwrapArgs returns bubblewrap's arguments (without the binary) to run
// argv for sp: an allowlist of the host read-only, nothing of it writable
// but the workspace, bound at its own host path (from fds.workspace when
// it is open, so the directory bound is the one opened, whatever the path
// names by then).
func bwrapArgs(sp *Spec, dir string, root bool, fds bwrapFDs) []string {
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
	a = append(a, "--proc", "/proc")
	a = append(a, procArgs()...)
	size := strconv.FormatInt(int64(sp.Limits.Tmp), 10)
	a = append(a,
		"--dev", "/dev",
		"--perms", "1777", "--size", size, "--tmpfs", "/dev/shm",
		"--size", size, "--tmpfs", "/tmp",
	)
	if fds.workspace >= 0 {
		a = append(a, "--bind-fd", strconv.Itoa(fds.workspace), sp.Workspace)
	} else {
		a = append(a, "--bind", sp.Workspace, sp.Workspace)
	}
	a = append(a,
		"--chdir", dir,
		"--unshare-all",
		// A user namespace of the sandbox's own, in which no other can be
		// made: user namespaces are how a command would get capabilities
		// again (unshare fails with ENOSPC).
		"--unshare-user", "--disable-userns",
	)
	if sp.Network {
		a = append(a, "--share-net")
	}
	a = append(a, "--die-with-parent", "--new-session", "--hostname", "agentd")
	if root {
		// As root bwrap keeps its capabilities in the sandbox unless told.
		a = append(a, "--cap-drop", "ALL")
	}
	if fds.seccomp >= 0 {
		a = append(a, "--seccomp", strconv.Itoa(fds.seccomp))
	}
	a = append(a, "--")
	return append(a, sp.Argv...)
}

// procArgs covers /proc's masked files and read-only trees that this
// kernel has (bwrap cannot bind over a name procfs does not show).
func procArgs() []string {
	var a []string
	for _, name := range procMasked {
		if _, err := os.Lstat("/proc/" + name); err == nil {
			a = append(a, "--ro-bind", os.DevNull, "/proc/"+name)
		}
	}
	for _, name := range procReadOnly {
		if _, err := os.Lstat("/proc/" + name); err == nil {
			a = append(a, "--ro-bind", "/proc/"+name, "/proc/"+name)
		}
	}
	return a
}
