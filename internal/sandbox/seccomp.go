package sandbox

import (
	"encoding/binary"
	"fmt"
	"os"

	"golang.org/x/sys/unix"
)

// The seccomp filter bwrap installs (--seccomp) before it runs the
// command, in its init too: a classic BPF program that refuses with EPERM
// the system calls a command has no use for and that reach into other
// processes or the kernel (ptrace, which would let a command disarm
// bwrap's init and outlive agentd; modules, kexec, bpf, mounts, keyrings,
// the clock...), kills a process that calls in through another
// architecture's table (where the numbers mean other calls), and allows
// the rest. The numbers are golang.org/x/sys/unix's for the build's
// architecture (seccomp_<arch>.go); where agentd knows no list, no filter
// is given.

// seccompEPERM is what a refused call returns.
const seccompEPERM = unix.SECCOMP_RET_ERRNO | uint32(unix.EPERM)

// seccompData's offsets (struct seccomp_data: int nr; __u32 arch; ...).
const (
	seccompNr   = 0
	seccompArch = 4
)

// seccompFilter assembles the program for arch refusing denied (at most
// 253: a jump goes 255 instructions at most); x32Bit, when not 0, is a bit
// of the number that marks another table of the same arch (x86_64's x32),
// refused whole.
func seccompFilter(arch uint32, x32Bit uint32, denied []uint32) []unix.SockFilter {
	const (
		ld  = unix.BPF_LD | unix.BPF_W | unix.BPF_ABS
		jeq = unix.BPF_JMP | unix.BPF_JEQ | unix.BPF_K
		jge = unix.BPF_JMP | unix.BPF_JGE | unix.BPF_K
		ret = unix.BPF_RET | unix.BPF_K
	)
	p := []unix.SockFilter{
		{Code: ld, K: seccompArch},
		{Code: jeq, K: arch, Jt: 1},
		{Code: ret, K: unix.SECCOMP_RET_KILL_PROCESS},
		{Code: ld, K: seccompNr},
	}
	// Each test jumps over what follows it to the last instruction,
	// the refusal; the one before it allows.
	n := len(denied)
	if x32Bit != 0 {
		p = append(p, unix.SockFilter{Code: jge, K: x32Bit, Jt: uint8(n + 1)})
	}
	for i, nr := range denied {
		p = append(p, unix.SockFilter{Code: jeq, K: nr, Jt: uint8(n - i)})
	}
	return append(p,
		unix.SockFilter{Code: ret, K: unix.SECCOMP_RET_ALLOW},
		unix.SockFilter{Code: ret, K: seccompEPERM})
}

// encodeFilter is prog as the kernel reads it (struct sock_filter[],
// native byte order): what bwrap --seccomp reads from its descriptor.
func encodeFilter(prog []unix.SockFilter) []byte {
	b := make([]byte, 0, 8*len(prog))
	for _, f := range prog {
		b = binary.NativeEndian.AppendUint16(b, f.Code)
		b = append(b, f.Jt, f.Jf)
		b = binary.NativeEndian.AppendUint32(b, f.K)
	}
	return b
}

// seccompFile returns a pipe whose read end holds the encoded filter for
// this architecture, or nil where agentd has none. The caller closes it.
func seccompFile() (*os.File, error) {
	if seccompArchNative == 0 {
		return nil, nil
	}
	b := encodeFilter(seccompFilter(seccompArchNative, seccompX32Bit, seccompDenied))
	r, w, err := os.Pipe()
	if err != nil {
		return nil, fmt.Errorf("sandbox: seccomp: %w", err)
	}
	// A few hundred bytes: the pipe's buffer holds them, so the write
	// does not wait for bwrap.
	_, err = w.Write(b)
	if cerr := w.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		r.Close()
		return nil, fmt.Errorf("sandbox: seccomp: %w", err)
	}
	return r, nil
}
