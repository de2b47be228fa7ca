package extension

import (
	"embed"
	"io/fs"
)

//go:embed builtin
var builtinFS embed.FS

// Builtins are the seed documents embedded in the binary, as
// <type>/<name>.yaml.
func Builtins() fs.FS {
	sub, err := fs.Sub(builtinFS, "builtin")
	if err != nil {
		panic(err) // the directory is embedded: cannot happen
	}
	return sub
}
