package testsupport

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// Build says how Main gets the binaries.
type Build struct {
	// Name goes into the temporary directory's name, e.g. "e2e".
	Name string
	// FlagsEnv names the environment variable whose words are extra
	// go build flags for countersign (e.g. COUNTERSIGN_E2E_BUILDFLAGS=-race,
	// to run the server under the race detector too).
	FlagsEnv string
	// PrebuiltEnv, if set, names an environment variable that may hold the
	// path of a prebuilt countersign to run instead of building one.
	PrebuiltEnv string
	// SeaweedFS also builds SeaweedFS's weed from the pinned tools module
	// tools/seaweedfs (unless the WEED environment variable names a
	// binary), for Servers.StartSeaweedFS. A cold build takes many
	// minutes; the Go build cache makes later ones take seconds.
	SeaweedFS bool
}

// Main is a test module's TestMain: it builds countersign from the
// repository, versitygw from the pinned tools module (unless the
// VERSITYGW environment variable names a binary) and, if b asks, SeaweedFS
// (see Build.SeaweedFS) into a temporary
// directory, records their paths in s, runs the tests and removes the
// directory. It returns the exit code for os.Exit.
func Main(m *testing.M, s *Servers, b Build) int {
	dir, err := os.MkdirTemp("", "countersign-"+b.Name+"-bin-")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	defer os.RemoveAll(dir)
	if b.PrebuiltEnv != "" {
		s.CountersignBin = os.Getenv(b.PrebuiltEnv)
	}
	if s.CountersignBin == "" {
		s.CountersignBin = filepath.Join(dir, "countersign")
		flags := strings.Fields(os.Getenv(b.FlagsEnv))
		if err := goBuild("..", s.CountersignBin, "./cmd/countersign", flags...); err != nil {
			fmt.Fprintln(os.Stderr, "building countersign:", err)
			return 1
		}
	}
	s.VersitygwBin = os.Getenv("VERSITYGW")
	if s.VersitygwBin == "" {
		// Built from the pinned tools module; the Go build cache makes
		// every run after the first take seconds.
		s.VersitygwBin = filepath.Join(dir, "versitygw")
		if err := goBuild("../tools", s.VersitygwBin, "github.com/versity/versitygw/cmd/versitygw"); err != nil {
			fmt.Fprintln(os.Stderr, "building versitygw:", err)
			return 1
		}
	}
	if b.SeaweedFS {
		s.WeedBin = os.Getenv("WEED")
		if s.WeedBin == "" {
			s.WeedBin = filepath.Join(dir, "weed")
			if err := goBuild("../tools/seaweedfs", s.WeedBin, "github.com/seaweedfs/seaweedfs/weed"); err != nil {
				fmt.Fprintln(os.Stderr, "building weed:", err)
				return 1
			}
		}
	}
	return m.Run()
}

func goBuild(moduleDir, out, pkg string, flags ...string) error {
	args := append([]string{"build", "-o", out}, flags...)
	cmd := exec.Command("go", append(args, pkg)...)
	cmd.Dir = moduleDir
	cmd.Stdout, cmd.Stderr = os.Stderr, os.Stderr
	return cmd.Run()
}

// WithCountersignTags returns a copy of s whose countersign is built from
// the repository with the given build tags (into a test temporary
// directory), for a test that needs a test-only hook compiled in (see
// server/testhook_on.go); every other server binary is s's.
func (s *Servers) WithCountersignTags(t testing.TB, tags string) *Servers {
	t.Helper()
	c := *s
	c.CountersignBin = filepath.Join(t.TempDir(), "countersign-"+strings.ReplaceAll(tags, ",", "-"))
	if err := goBuild("..", c.CountersignBin, "./cmd/countersign", "-tags", tags); err != nil {
		t.Fatalf("building countersign with tags %s: %v", tags, err)
	}
	return &c
}
