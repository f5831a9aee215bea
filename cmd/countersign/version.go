package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"runtime/debug"
)

// version is stamped at build time: -ldflags "-X main.version=v1.2.3".
var version = "dev"

func runVersion(_ context.Context, args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("version", flag.ContinueOnError)
	fs.SetOutput(stderr)
	if err := fs.Parse(args); err != nil {
		return 2
	}
	fmt.Fprintf(stdout, "countersign %s\n", version)
	if bi, ok := debug.ReadBuildInfo(); ok {
		fmt.Fprintf(stdout, "go: %s\n", bi.GoVersion)
		for _, s := range bi.Settings {
			switch s.Key {
			case "vcs.revision", "vcs.time", "vcs.modified", "GOOS", "GOARCH":
				fmt.Fprintf(stdout, "%s: %s\n", s.Key, s.Value)
			}
		}
	}
	return 0
}
