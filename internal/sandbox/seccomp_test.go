package sandbox

import (
	"encoding/binary"
	"testing"

	"golang.org/x/sys/unix"
)

// runFilter runs prog, decoded from the bytes bwrap reads, on one system
// call as the kernel would: it knows the instructions seccompFilter uses
// and fails the test on any other.
func runFilter(t *testing.T, enc []byte, arch, nr uint32) uint32 {
	t.Helper()
	var acc uint32
	for pc := 0; pc*8 < len(enc); pc++ {
		in := enc[pc*8 : pc*8+8]
		code := binary.NativeEndian.Uint16(in)
		jt, jf, k := in[2], in[3], binary.NativeEndian.Uint32(in[4:])
		switch code {
		case unix.BPF_LD | unix.BPF_W | unix.BPF_ABS:
			switch k {
			case 0:
				acc = nr
			case 4:
				acc = arch
			default:
				t.Fatalf("pc %d: load of offset %d", pc, k)
			}
		case unix.BPF_JMP | unix.BPF_JEQ | unix.BPF_K:
			pc += int(jf)
			if acc == k {
				pc += int(jt) - int(jf)
			}
		case unix.BPF_JMP | unix.BPF_JGE | unix.BPF_K:
			pc += int(jf)
			if acc >= k {
				pc += int(jt) - int(jf)
			}
		case unix.BPF_RET | unix.BPF_K:
			return k
		default:
			t.Fatalf("pc %d: unknown instruction %#x", pc, code)
		}
	}
	t.Fatalf("the program ran off its end for arch %#x nr %d", arch, nr)
	return 0
}

func TestSeccompFilter(t *testing.T) {
	if seccompArchNative == 0 {
		t.Skip("no seccomp filter on this architecture")
	}
	if len(seccompDenied) > 253 {
		t.Fatalf("%d denied calls: a jump reaches 255 instructions at most", len(seccompDenied))
	}
	enc := encodeFilter(seccompFilter(seccompArchNative, seccompX32Bit, seccompDenied))
	const allow, kill = unix.SECCOMP_RET_ALLOW, unix.SECCOMP_RET_KILL_PROCESS
	denied := map[uint32]bool{}
	for _, nr := range seccompDenied {
		denied[nr] = true
		if got := runFilter(t, enc, seccompArchNative, nr); got != seccompEPERM {
			t.Errorf("call %d: %#x, want EPERM", nr, got)
		}
	}
	for _, nr := range []uint32{unix.SYS_READ, unix.SYS_WRITE, unix.SYS_EXECVE, unix.SYS_CLONE, unix.SYS_CLONE3, unix.SYS_OPENAT, unix.SYS_EXIT_GROUP} {
		if got := runFilter(t, enc, seccompArchNative, nr); got != allow {
			t.Errorf("call %d: %#x, want it allowed", nr, got)
		}
	}
	for nr := uint32(0); nr < 512; nr++ {
		if got := runFilter(t, enc, seccompArchNative, nr); !denied[nr] && got != allow {
			t.Errorf("call %d, not denied: %#x, want it allowed", nr, got)
		}
	}
	for _, arch := range []uint32{unix.AUDIT_ARCH_I386, unix.AUDIT_ARCH_ARM, unix.AUDIT_ARCH_X86_64, unix.AUDIT_ARCH_AARCH64, 0} {
		if arch == seccompArchNative {
			continue
		}
		if got := runFilter(t, enc, arch, unix.SYS_READ); got != kill {
			t.Errorf("read by arch %#x: %#x, want the process killed", arch, got)
		}
	}
	if seccompX32Bit != 0 {
		if got := runFilter(t, enc, seccompArchNative, seccompX32Bit|unix.SYS_READ); got != seccompEPERM {
			t.Errorf("an x32 read: %#x, want EPERM", got)
		}
	}
}
