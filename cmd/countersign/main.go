// Command countersign signs Iceberg remote-signing requests under policy.
//
// A request's path, as wired in pipeline.go: HTTP (server) -> decode
// (remotesign) -> classify (s3req) -> authorize each object (policy) ->
// sign (signer) -> response.
package main

import (
	"context"
	"fmt"
	"io"
	"os"
	"os/signal"
	"syscall"
)

const usage = `countersign signs S3 requests for Iceberg engines, one object at a time, under policy.

Usage:
  countersign serve [-config FILE] [-dev]           run the signing service
  countersign policy test [-v] [-run REGEX] PATH... run Rego unit tests (test_ rules)
  countersign policy eval -policy PATH [-input FILE|-]
                                                    evaluate one input document, print the decision
  countersign config check [-load-policy] FILE      validate a configuration file, naming the bad key
  countersign audit verify|query|proof|verify-proof|keygen|pubkey
                                                    check, search and prove the audit log
  countersign bench -url URL [flags]                load-test a running countersign with an Iceberg-scan workload
  countersign version                               print build information

Run "countersign COMMAND -h" for a command's flags.
`

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	code := run(ctx, os.Args[1:], os.Stdout, os.Stderr)
	stop()
	os.Exit(code)
}

func run(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	if len(args) == 0 {
		fmt.Fprint(stderr, usage)
		return 2
	}
	switch args[0] {
	case "serve":
		return runServe(ctx, args[1:], stdout, stderr)
	case "policy":
		return runPolicy(ctx, args[1:], stdout, stderr)
	case "config":
		return runConfigCmd(ctx, args[1:], stdout, stderr)
	case "audit":
		return runAudit(ctx, args[1:], stdout, stderr)
	case "bench":
		return runBench(ctx, args[1:], stdout, stderr)
	case "version":
		return runVersion(args[1:], stdout, stderr)
	case "help", "-h", "-help", "--help":
		fmt.Fprint(stdout, usage)
		return 0
	}
	fmt.Fprintf(stderr, "countersign: unknown command %q\n\n%s", args[0], usage)
	return 2
}
