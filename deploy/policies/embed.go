// Package policies ships countersign's example policies. The dev policy is
// embedded in the binary for `countersign serve -dev`.
package policies

import (
	"embed"
	"io/fs"
)

//go:embed dev/*.rego dev/*.json
var files embed.FS

// Dev returns the development policy (dev/), rooted at its directory.
func Dev() fs.FS {
	sub, err := fs.Sub(files, "dev")
	if err != nil {
		panic(err) // the directory is embedded at build time
	}
	return sub
}
