// Package policies ships countersign's example policies. The dev policy is
// embedded in the binary for `countersign serve -dev`, with the library it
// is loaded with (lib/).
package policies

import (
	"embed"
	"io/fs"
)

//go:embed dev/*.rego dev/*.json lib/*.rego
var files embed.FS

// Dev returns the development policy: an FS holding dev/ and lib/, and
// the paths in it to load together (policy.ManagerOptions FS and FSPaths),
// as the two directories are loaded from disk.
func Dev() (fs.FS, []string) {
	return files, []string{"lib", "dev"}
}
