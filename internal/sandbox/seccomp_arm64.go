package sandbox

import "golang.org/x/sys/unix"

// seccompArchNative is the audit arch a command's calls must come in by
// (a 32-bit arm program is killed); arm64 has no second table to refuse.
const (
	seccompArchNative = unix.AUDIT_ARCH_AARCH64
	seccompX32Bit     = 0
)

// seccompDenied are the calls the filter refuses (arm64 has no iopl,
// ioperm).
var seccompDenied = seccompCommon()
