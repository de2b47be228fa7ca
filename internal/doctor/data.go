package doctor

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"syscall"

	"agentd/internal/agent"
	"agentd/internal/store/sqlite"
)

func getenv(k string) string { return os.Getenv(k) }

// data checks the data directory: that it holds agentd data, its modes,
// its lock and its store's schema. It reports false when nothing else
// can be checked.
func (d *doctor) data(ctx context.Context) bool {
	const area = "data"
	fi, err := os.Stat(d.dir)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		d.r.add(area, "data directory", Fail, d.dir+" does not exist",
			"name agentd's data directory with --data or $AGENTD_HOME, or make one: agentd init --data "+d.dir)
		return false
	case err != nil:
		d.r.add(area, "data directory", Fail, err.Error(), "")
		return false
	case !fi.IsDir():
		d.r.add(area, "data directory", Fail, d.dir+" is not a directory", "name agentd's data directory with --data or $AGENTD_HOME")
		return false
	case !d.l.HasData(d.dir):
		d.r.add(area, "data directory", Fail, d.dir+" has no agentd data (no "+d.l.DB+", "+agent.ConfigFile+" or "+agent.AgentsDir+"/)",
			"name agentd's data directory with --data or $AGENTD_HOME, or make one here: agentd init --data "+d.dir)
		return false
	}
	if m := fi.Mode().Perm(); m&0o077 != 0 {
		d.r.add(area, "data directory", Fail, fmt.Sprintf("%s is mode %04o: other users can reach agentd's data", d.dir, m),
			"chmod 700 "+d.dir)
	} else {
		d.r.add(area, "data directory", OK, fmt.Sprintf("%s, mode %04o", d.dir, m), "")
	}
	d.fileModes()
	d.lock()
	d.schema(ctx)
	return true
}

// fileModes checks that the data directory's files are the owner's alone
// (the configuration and agent files excepted: they hold no secrets).
func (d *doctor) fileModes() {
	var open []string
	filepath.WalkDir(d.dir, func(p string, e fs.DirEntry, err error) error {
		if err != nil {
			return nil
		}
		rel, _ := filepath.Rel(d.dir, p)
		if e.IsDir() && (rel == agent.AgentsDir || rel == "skills") {
			return filepath.SkipDir
		}
		if rel == "." || rel == agent.ConfigFile || e.Type()&fs.ModeSocket != 0 {
			return nil
		}
		if fi, err := e.Info(); err == nil && fi.Mode().Perm()&0o077 != 0 {
			open = append(open, fmt.Sprintf("%s (%04o)", rel, fi.Mode().Perm()))
		}
		return nil
	})
	if len(open) == 0 {
		d.r.add("data", "file modes", OK, "every file is the owner's alone", "")
		return
	}
	slices.Sort(open)
	d.r.add("data", "file modes", Warn, "others may read "+strings.Join(open, ", ")+" should the directory be opened to them",
		"chmod -R go-rwx "+d.dir)
}

// lock checks who holds the data directory's lock. It is taken (shared,
// at once released) only when no agentd answers: an agentd starting at
// that moment would find it held and stop, as it does for any other
// holder.
func (d *doctor) lock() {
	const area, name = "data", "lock"
	if d.status != nil {
		d.r.add(area, name, OK, fmt.Sprintf("held by the running agentd (pid %d)", d.status.PID), "")
		return
	}
	path := filepath.Join(d.dir, d.l.Lock)
	f, err := os.OpenFile(path, os.O_RDONLY, 0)
	if errors.Is(err, fs.ErrNotExist) {
		d.r.add(area, name, OK, "free: agentd is not running", "")
		return
	}
	if err != nil {
		d.r.add(area, name, Fail, err.Error(), "")
		return
	}
	defer f.Close()
	if err := syscall.Flock(int(f.Fd()), syscall.LOCK_SH|syscall.LOCK_NB); err != nil {
		d.r.add(area, name, Fail, "held by a process that does not answer on "+filepath.Join(d.dir, d.l.Socket),
			"agentd may be starting or stuck, or another program holds it: fuser -v "+path+" shows which process; stop it, then start agentd serve")
		return
	}
	syscall.Flock(int(f.Fd()), syscall.LOCK_UN)
	d.r.add(area, name, OK, "free: agentd is not running", "")
}

// schema checks the store's schema version against this agentd's: the
// shared database agentd.yaml's store names, else the data directory's
// SQLite file (also when agentd.yaml does not load: the agent checks say
// why).
func (d *doctor) schema(ctx context.Context) {
	if cfg, err := agent.LoadConfig(d.dir); err == nil && d.o.Store != nil {
		ctx, cancel := context.WithTimeout(ctx, d.o.Timeout)
		s, ok, err := d.o.Store(ctx, cfg.Store)
		cancel()
		if ok {
			d.sharedSchema(s, err)
			return
		}
	}
	const area, name = "data", "schema"
	path := filepath.Join(d.dir, d.l.DB)
	if _, err := os.Stat(path); errors.Is(err, fs.ErrNotExist) {
		d.r.add(area, name, OK, "no database yet: agentd makes it at its first start", "")
		return
	}
	v, err := sqlite.FileSchemaVersion(ctx, path)
	if err != nil {
		d.r.add(area, name, Fail, err.Error(), "check "+path+" (is it a SQLite database? its mode?); restore it from a backup if it is damaged")
		return
	}
	d.versions(v, sqlite.SchemaVersion(), "")
}

// sharedSchema reports a shared database's schema, or why it could not
// be read.
func (d *doctor) sharedSchema(s StoreSchema, err error) {
	if err != nil {
		d.r.add("data", "schema", Fail, err.Error(),
			"check store.url in "+agent.ConfigFile+" (or --store, $AGENTD_STORE): that the database answers, the user and password (store.password_env), sslmode")
		return
	}
	if s.Have == 0 {
		d.r.add("data", "schema", OK, s.Where+": no tables yet: agentd makes them at its first start", "")
		return
	}
	d.versions(s.Have, s.Want, s.Where+": ")
}

// versions reports a schema version v against want, the one this agentd
// writes.
func (d *doctor) versions(v, want int, where string) {
	const area, name = "data", "schema"
	switch {
	case v > want:
		d.r.add(area, name, Fail, fmt.Sprintf("%sversion %d, written by a newer agentd (this one knows %d)", where, v, want),
			"run the newer agentd, or restore a backup made with this one")
	case v < want:
		d.r.add(area, name, OK, fmt.Sprintf("%sversion %d: this agentd upgrades it to %d at its next start", where, v, want), "")
	default:
		d.r.add(area, name, OK, fmt.Sprintf("%sversion %d (current)", where, v), "")
	}
}
