package sqlite

import (
	"fmt"

	"modernc.org/libc"
	sqlite3 "modernc.org/sqlite/lib"
)

// SQLite's own memory, for measuring: the page caches, schemas, prepared
// statements and scratch space of every database the process has open
// (this store's and long-term memory's), allocated outside the Go heap and
// so invisible to Go's memory figures. The driver builds SQLite without
// counting it (counting takes a lock on every allocation), so it is
// counted only in a process that asks for it before opening a database.

// EnableMemoryStatus makes SQLite count the memory it holds, for
// MemoryUsed. Call it before the process opens its first database: once
// SQLite has started it can no longer be turned on, and this returns an
// error.
func EnableMemoryStatus() error {
	tls := libc.NewTLS()
	defer tls.Close()
	va := libc.Xmalloc(tls, 8)
	if va == 0 {
		return fmt.Errorf("sqlite: count memory: out of memory")
	}
	defer libc.Xfree(tls, va)
	if rc := sqlite3.Xsqlite3_config(tls, sqlite3.SQLITE_CONFIG_MEMSTATUS, libc.VaList(va, int32(1))); rc != sqlite3.SQLITE_OK {
		return fmt.Errorf("sqlite: count memory: SQLite says %d (a database was opened before)", rc)
	}
	return nil
}

// MemoryUsed returns the bytes SQLite holds in this process now
// (sqlite3_memory_used) and the most it has held (its high-water mark);
// both are 0 unless EnableMemoryStatus was called first.
func MemoryUsed() (now, high int64) {
	tls := libc.NewTLS()
	defer tls.Close()
	return sqlite3.Xsqlite3_memory_used(tls), sqlite3.Xsqlite3_memory_highwater(tls, 0)
}
