package reclaim

import (
	"bufio"
	"bytes"
	"os"
	"strconv"
	"strings"

	"golang.org/x/sys/unix"
)

// The executable's own pages. Running agentd reads its code and read-only
// data from its executable, mapped from the page cache: every page it
// touched stays counted in its resident memory (RSS), and starting agentd
// serve touches most of a 25 MB binary (the kernel maps 64 KiB around
// each page faulted). Once work is over, dropCode unmaps those pages
// (madvise MADV_DONTNEED on the read-only mappings of the executable):
// they stay in the page cache, shared, for the kernel to keep or reclaim,
// and come back mapped, from the cache, as code runs again. Only clean,
// never-written mappings are touched: nothing is lost. A crash in between
// leaves nothing behind.

// codeResident returns the bytes of files mapped and resident in the
// process (statm's shared pages: the executable's, and any file mapped).
func codeResident() uint64 {
	b, err := os.ReadFile("/proc/self/statm")
	if err != nil {
		return 0
	}
	f := strings.Fields(string(b))
	if len(f) < 3 {
		return 0
	}
	n, _ := strconv.ParseUint(f[2], 10, 64)
	return n * uint64(os.Getpagesize())
}

// dropCode unmaps the resident pages of the executable's read-only
// mappings; it returns how many mappings it advised.
func dropCode() int {
	var st unix.Stat_t
	if err := unix.Stat("/proc/self/exe", &st); err != nil {
		return 0
	}
	maps, err := os.ReadFile("/proc/self/maps")
	if err != nil {
		return 0
	}
	n := 0
	sc := bufio.NewScanner(bytes.NewReader(maps))
	for sc.Scan() {
		lo, hi, ok := readOnlyMapping(sc.Text(), st.Ino)
		if !ok {
			continue
		}
		if _, _, e := unix.Syscall(unix.SYS_MADVISE, lo, hi-lo, unix.MADV_DONTNEED); e == 0 {
			n++
		}
	}
	return n
}

// readOnlyMapping parses a line of /proc/self/maps ("lo-hi perms offset
// dev inode path") and reports the range of a private mapping of inode
// that cannot be written.
func readOnlyMapping(line string, ino uint64) (lo, hi uintptr, ok bool) {
	f := strings.Fields(line)
	if len(f) < 6 || len(f[1]) != 4 || f[1][0] != 'r' || f[1][1] != '-' || f[1][3] != 'p' {
		return 0, 0, false
	}
	if i, err := strconv.ParseUint(f[4], 10, 64); err != nil || i != ino {
		return 0, 0, false
	}
	a, b, found := strings.Cut(f[0], "-")
	l, err1 := strconv.ParseUint(a, 16, 64)
	h, err2 := strconv.ParseUint(b, 16, 64)
	if !found || err1 != nil || err2 != nil || h <= l {
		return 0, 0, false
	}
	return uintptr(l), uintptr(h), true
}
