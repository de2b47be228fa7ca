//go:build linux

// Package ptytest opens pseudo-terminals for tests of what agentd does in
// a terminal (the chat's line editor, Ctrl-C as a key): the test plays the
// terminal on the pty's master side and gives agentd the other side.
package ptytest

import (
	"fmt"
	"os"

	"golang.org/x/sys/unix"
)

// Open returns a new pseudo-terminal: its master (the test's side) and its
// terminal (agentd's stdin, stdout and stderr), 80 columns by 24 rows.
func Open() (master, tty *os.File, err error) {
	m, err := os.OpenFile("/dev/ptmx", os.O_RDWR|unix.O_NOCTTY|unix.O_CLOEXEC, 0)
	if err != nil {
		return nil, nil, fmt.Errorf("ptytest: %w", err)
	}
	fd := int(m.Fd())
	if err := unix.IoctlSetPointerInt(fd, unix.TIOCSPTLCK, 0); err != nil {
		m.Close()
		return nil, nil, fmt.Errorf("ptytest: unlock: %w", err)
	}
	n, err := unix.IoctlGetInt(fd, unix.TIOCGPTN)
	if err != nil {
		m.Close()
		return nil, nil, fmt.Errorf("ptytest: pty number: %w", err)
	}
	t, err := os.OpenFile(fmt.Sprintf("/dev/pts/%d", n), os.O_RDWR|unix.O_NOCTTY|unix.O_CLOEXEC, 0)
	if err != nil {
		m.Close()
		return nil, nil, fmt.Errorf("ptytest: %w", err)
	}
	if err := unix.IoctlSetWinsize(int(t.Fd()), unix.TIOCSWINSZ, &unix.Winsize{Row: 24, Col: 80}); err != nil {
		m.Close()
		t.Close()
		return nil, nil, fmt.Errorf("ptytest: size: %w", err)
	}
	return m, t, nil
}
