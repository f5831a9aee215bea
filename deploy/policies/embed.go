// Package policies ships countersign's example policies. The dev policy is
// embedded in the binary for `countersign serve -dev`, with the library it
// is loaded with (lib/); so is the vending example, the one written to
// vend credentials.
package policies

import (
	"embed"
	"io/fs"
)

//go:embed dev/*.rego dev/*.json vending/*.rego vending/*.json lib/*.rego
var files embed.FS

// Dev returns the development policy: an FS holding dev/ and lib/, and
// the paths in it to load together (policy.ManagerOptions FS and FSPaths),
// as the two directories are loaded from disk.
func Dev() (fs.FS, []string) {
	return files, []string{"lib", "dev"}
}

// Vending returns the example written to vend credentials (vending/, see
// its authz.rego): an FS holding vending/ and lib/, and the paths in it
// to load together, as Dev. Its *_test.rego files are in the FS too;
// policy.Load skips them, as it does on disk.
func Vending() (fs.FS, []string) {
	return files, []string{"lib", "vending"}
}
