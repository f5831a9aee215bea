// Package e2e tests countersign as users run it: the real binary, started
// with a config file, signing requests that a real S3 server (versitygw,
// which verifies SigV4 like AWS) then serves or refuses.
package e2e

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
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
		if err := goBuild("..", countersignBin, "./cmd/countersign"); err != nil {
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

func goBuild(moduleDir, out, pkg string) error {
	cmd := exec.Command("go", "build", "-o", out, pkg)
	cmd.Dir = moduleDir
	cmd.Stdout, cmd.Stderr = os.Stderr, os.Stderr
	return cmd.Run()
}
