package sandbox

import "golang.org/x/sys/unix"

// seccompArchNative is the audit arch a command's calls must come in by
// (a 32-bit arm program is killed); arm64 has no second table to refuse.
const (
	seccompArchNative = unix.AUDIT_ARCH_AARCH64
	seccompX32Bit     = 0
)

// seccompDenied are the calls the filter refuses (seccomp.go says why);
// arm64 has no iopl, ioperm.
var seccompDenied = []uint32{
	unix.SYS_PTRACE, unix.SYS_PROCESS_VM_READV, unix.SYS_PROCESS_VM_WRITEV,
	unix.SYS_KEXEC_LOAD, unix.SYS_KEXEC_FILE_LOAD,
	unix.SYS_INIT_MODULE, unix.SYS_FINIT_MODULE, unix.SYS_DELETE_MODULE,
	unix.SYS_BPF, unix.SYS_PERF_EVENT_OPEN, unix.SYS_USERFAULTFD,
	unix.SYS_KEYCTL, unix.SYS_ADD_KEY, unix.SYS_REQUEST_KEY,
	unix.SYS_MOUNT, unix.SYS_UMOUNT2, unix.SYS_PIVOT_ROOT, unix.SYS_MOUNT_SETATTR,
	unix.SYS_OPEN_TREE, unix.SYS_MOVE_MOUNT, unix.SYS_FSOPEN, unix.SYS_FSCONFIG, unix.SYS_FSMOUNT, unix.SYS_FSPICK,
	unix.SYS_SWAPON, unix.SYS_SWAPOFF, unix.SYS_REBOOT, unix.SYS_SETNS,
	unix.SYS_OPEN_BY_HANDLE_AT, unix.SYS_NAME_TO_HANDLE_AT,
	unix.SYS_ACCT, unix.SYS_SETTIMEOFDAY, unix.SYS_CLOCK_SETTIME, unix.SYS_LOOKUP_DCOOKIE,
	unix.SYS_QUOTACTL, unix.SYS_QUOTACTL_FD, unix.SYS_NFSSERVCTL,
}
