// Package e2e tests countersign as users run it: the real binary, started
// with a config file, signing requests that a real S3 server (versitygw,
// which verifies SigV4 like AWS) then serves or refuses.
package e2e

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
	dir, err := os.MkdirTemp("", "countersign-e2e-bin-")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	code := func() int {
		defer os.RemoveAll(dir)
		countersignBin = filepath.Join(dir, "countersign")
		// COUNTERSIGN_E2E_BUILDFLAGS=-race runs the server under the race
		// detector too (make e2e does).
		flags := strings.Fields(os.Getenv("COUNTERSIGN_E2E_BUILDFLAGS"))
		if err := goBuild("..", countersignBin, "./cmd/countersign", flags...); err != nil {
			fmt.Fprintln(os.Stderr, "building countersign:", err)
			return 1
		}
		versitygwBin = os.Getenv("VERSITYGW")
		if versitygwBin == "" {
			// Built from the pinned tools module; the Go build cache makes
			// every run after the first take seconds.
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
