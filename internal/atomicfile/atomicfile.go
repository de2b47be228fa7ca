// Package atomicfile replaces files whole: agent files written at run
// time, a connector's resume point.
package atomicfile

import (
	"os"
	"path/filepath"
)

// Write replaces name with data, with file mode perm: readers see the old
// file or the new one, never a part; the data and the rename are synced, so
// a crash leaves one of the two.
func Write(name string, data []byte, perm os.FileMode) (err error) {
	dir, base := filepath.Split(name)
	f, err := os.CreateTemp(dir, "."+base+".*.tmp")
	if err != nil {
		return err
	}
	defer func() {
		if err != nil {
			f.Close()
			os.Remove(f.Name())
		}
	}()
	if _, err = f.Write(data); err != nil {
		return err
	}
	if err = f.Chmod(perm); err != nil {
		return err
	}
	if err = f.Sync(); err != nil {
		return err
	}
	if err = f.Close(); err != nil {
		return err
	}
	if err = os.Rename(f.Name(), name); err != nil {
		return err
	}
	if d, derr := os.Open(filepath.Clean(dir)); derr == nil {
		_ = d.Sync() // make the rename durable where the platform allows it
		d.Close()
	}
	return nil
}
