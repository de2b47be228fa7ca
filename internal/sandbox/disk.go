package sandbox

import (
	"time"

	"golang.org/x/sys/unix"
)

// watchDisk kills the command when the free space of the workspace's file
// system falls by more than limit since the start, or below 1% of it
// (when it was above). Another writer on the same file system counts too:
// the watch bounds the space lost while the command runs, whoever took it.
func (p *Process) watchDisk(dir string, limit int64, every time.Duration) {
	start, total, err := freeSpace(dir)
	if err != nil {
		return
	}
	t := time.NewTicker(every)
	defer t.Stop()
	for {
		select {
		case <-p.done:
			return
		case <-t.C:
		}
		free, _, err := freeSpace(dir)
		if err != nil {
			continue
		}
		if start-free > limit || (free < total/100 && free < start) {
			p.kill(ReasonDisk)
			return
		}
	}
}

// freeSpace returns the bytes free to unprivileged users and the size of
// dir's file system.
func freeSpace(dir string) (free, total int64, err error) {
	var st unix.Statfs_t
	if err := unix.Statfs(dir, &st); err != nil {
		return 0, 0, err
	}
	return int64(st.Bavail) * st.Bsize, int64(st.Blocks) * st.Bsize, nil
}
