package policyinput

import (
	"bufio"
	"go/build"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestConsumersLinkNoOPA holds the reason this package exists: auth and
// server use the input types without linking the OPA engine. It walks the
// module's own packages reachable from each (non-test imports, the default
// build context) and fails on any import of an OPA path. Third-party
// packages are not walked; none of the module's dependencies other than
// OPA itself imports OPA.
func TestConsumersLinkNoOPA(t *testing.T) {
	root, module := moduleRoot(t)
	for _, start := range []string{"auth", "server"} {
		seen := map[string]bool{}
		var walk func(path string, chain []string)
		walk = func(path string, chain []string) {
			if seen[path] {
				return
			}
			seen[path] = true
			dir := filepath.Join(root, filepath.FromSlash(strings.TrimPrefix(path, module)))
			pkg, err := build.ImportDir(dir, 0)
			if err != nil {
				t.Fatalf("%s: %v", path, err)
			}
			chain = append(chain, path)
			for _, imp := range pkg.Imports {
				switch {
				case strings.Contains(imp, "open-policy-agent"):
					t.Errorf("%s imports %s", strings.Join(chain, " -> "), imp)
				case strings.HasPrefix(imp, module+"/"):
					walk(imp, chain)
				}
			}
		}
		walk(module+"/"+start, nil)
		if len(seen) < 2 {
			t.Fatalf("%s: walked only %d package(s); the walk is broken", start, len(seen))
		}
	}
}

// moduleRoot finds the directory of go.mod above the test's directory and
// the module path it declares.
func moduleRoot(t *testing.T) (dir, module string) {
	t.Helper()
	dir, err := os.Getwd()
	if err != nil {
		t.Fatal(err)
	}
	for {
		f, err := os.Open(filepath.Join(dir, "go.mod"))
		if err == nil {
			defer f.Close()
			s := bufio.NewScanner(f)
			for s.Scan() {
				if m, ok := strings.CutPrefix(strings.TrimSpace(s.Text()), "module "); ok {
					return dir, strings.Trim(strings.TrimSpace(m), `"`)
				}
			}
			t.Fatalf("%s/go.mod declares no module", dir)
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			t.Fatal("no go.mod above the test directory")
		}
		dir = parent
	}
}
