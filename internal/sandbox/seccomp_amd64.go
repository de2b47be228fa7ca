package sandbox

import "golang.org/x/sys/unix"

// seccompArchNative is the audit arch a command's calls must come in by;
// the x32 table (numbers with __X32_SYSCALL_BIT) is refused whole.
const (
	seccompArchNative = unix.AUDIT_ARCH_X86_64
	seccompX32Bit     = 0x40000000
)

// seccompDenied are the calls the filter refuses (seccomp.go says why).
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
	unix.SYS_IOPL, unix.SYS_IOPERM,
	unix.SYS_ACCT, unix.SYS_SETTIMEOFDAY, unix.SYS_CLOCK_SETTIME, unix.SYS_LOOKUP_DCOOKIE,
	unix.SYS_QUOTACTL, unix.SYS_QUOTACTL_FD, unix.SYS_NFSSERVCTL,
}
