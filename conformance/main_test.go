package conformance

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// Binaries built once per test run by TestMain.
var (
	countersignBin string
	versitygwBin   string
)

func TestMain(m *testing.M) {
	dir, err := os.MkdirTemp("", "countersign-conformance-bin-")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	code := func() int {
		defer os.RemoveAll(dir)
		// COUNTERSIGN_BIN runs a prebuilt countersign instead of building
		// the one in this work tree.
		countersignBin = os.Getenv("COUNTERSIGN_BIN")
		if countersignBin == "" {
			countersignBin = filepath.Join(dir, "countersign")
			// COUNTERSIGN_CONFORMANCE_BUILDFLAGS=-race runs the server
			// under the race detector too (make conformance does).
			flags := strings.Fields(os.Getenv("COUNTERSIGN_CONFORMANCE_BUILDFLAGS"))
			if err := goBuild("..", countersignBin, "./cmd/countersign", flags...); err != nil {
				fmt.Fprintln(os.Stderr, "building countersign:", err)
				return 1
			}
		}
		versitygwBin = os.Getenv("VERSITYGW")
		if versitygwBin == "" {
			versitygwBin = filepath.Join(dir, "versitygw")
			if err := goBuild("../tools", versitygwBin, "github.com/versity/versitygw/cmd/versitygw"); err != nil {
				fmt.Fprintln(os.Stderr, "building versitygw:", err)
				return 1
			}
		}
		return m.Run()
	}()
	os.Exit(code)
}

func goBuild(moduleDir, out, pkg string, flags ...string) error {
	args := append([]string{"build", "-o", out}, flags...)
	cmd := exec.Command("go", append(args, pkg)...)
	cmd.Dir = moduleDir
	cmd.Stdout, cmd.Stderr = os.Stderr, os.Stderr
	return cmd.Run()
}
