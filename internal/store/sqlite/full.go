package sqlite

import (
	"context"
	"errors"
	"fmt"
	"syscall"
	"time"

	sqlitedrv "modernc.org/sqlite"
	sqlite3 "modernc.org/sqlite/lib"

	"agentd/internal/store"
)

// A full disk (or quota) fails a write with SQLITE_FULL, or, while the
// shared-memory index grows, SQLITE_IOERR_SHMSIZE; SQLite rolls the
// transaction back whole, so nothing of the write is kept and the same
// write succeeds once there is space. Such errors are store.ErrFull, and
// the store remembers that the disk was full until a write succeeds, so
// that readiness can say so (Writable).

// isFull reports whether err is a write failing for lack of space.
func isFull(err error) bool {
	var se *sqlitedrv.Error
	if errors.As(err, &se) {
		switch se.Code() {
		case sqlite3.SQLITE_FULL, sqlite3.SQLITE_IOERR_SHMSIZE:
			return true
		}
		return se.Code()&0xff == sqlite3.SQLITE_FULL
	}
	return errors.Is(err, syscall.ENOSPC) || errors.Is(err, syscall.EDQUOT)
}

// fullErr marks a write error that is a full disk as store.ErrFull.
func fullErr(err error) error {
	if err == nil || errors.Is(err, store.ErrFull) || !isFull(err) {
		return err
	}
	return fmt.Errorf("%w: %w", store.ErrFull, err)
}

// MinFree is the free space below which the disk holding the database
// counts as full for Writable: a turn's writes, the search index and the
// write-ahead log's growth need more than a page or two.
const MinFree = 1 << 20

// probeEvery bounds how often Writable writes to find out whether a full
// disk has space again.
const probeEvery = time.Second

// Writable reports whether the store can take writes: nil, or
// store.ErrFull while the disk holding the database has less than MinFree
// bytes free, or a write failed for lack of space and none has succeeded
// since (a quota, say). In that last case, once the disk has room again,
// it finds out with a small write of its own (after a failed one, again
// at most every probeEvery). Otherwise it costs a statfs.
func (s *Store) Writable(ctx context.Context) error {
	if s.isDown.Load() {
		return store.ErrClosed
	}
	var st syscall.Statfs_t
	if err := syscall.Statfs(s.dir, &st); err == nil {
		if free := uint64(st.Bavail) * uint64(st.Bsize); free < MinFree {
			return fmt.Errorf("%w: %d bytes free", store.ErrFull, free)
		}
	}
	if !s.full.Load() {
		return nil
	}
	s.probeMu.Lock()
	defer s.probeMu.Unlock()
	if s.probeErr != nil && time.Since(s.probed) < probeEvery {
		return s.probeErr
	}
	r := s.getRequest(ctx, opProbe)
	if err := s.send(ctx, r); err != nil {
		return err
	}
	s.probeErr = r.err
	s.putRequest(r)
	s.probed = time.Now()
	return s.probeErr
}

// applyProbe writes a row the store keeps anyway (the search index's
// progress, unchanged), which takes a page of the write-ahead log.
func (w *writer) applyProbe() error {
	if _, err := w.probe.Exec(); err != nil {
		return fmt.Errorf("sqlite: probe: %w", err)
	}
	return nil
}

// noteWrite keeps the store's knowledge of the disk in step with a
// group's outcome: full when a write failed for lack of space, not full
// once a group committed.
func (s *Store) noteWrite(committed bool, err error) {
	switch {
	case errors.Is(err, store.ErrFull):
		if !s.full.Swap(true) {
			s.log.Error("store: the disk is full: writes fail until space is freed", "err", err)
		}
	case committed:
		if s.full.Swap(false) {
			s.log.Info("store: the disk has space again")
		}
	}
}
