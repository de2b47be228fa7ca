package sandbox

import "golang.org/x/sys/unix"

// seccompArchNative is the audit arch a command's calls must come in by;
// the x32 table (numbers with __X32_SYSCALL_BIT) is refused whole.
const (
	seccompArchNative = unix.AUDIT_ARCH_X86_64
	seccompX32Bit     = 0x40000000
)

// seccompDenied are the calls the filter refuses: the common ones and
// x86's port I/O.
var seccompDenied = append(seccompCommon(), unix.SYS_IOPL, unix.SYS_IOPERM)
