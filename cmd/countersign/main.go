// Command countersign signs Iceberg remote-signing requests under policy.
//
// A request's path, as wired in pipeline.go: HTTP (server) -> decode
// (remotesign) -> classify (s3req) -> authorize each object (policy) ->
// sign (signer) -> response.
package main

import (
	"context"
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

// run dispatches "countersign COMMAND ...", one file per command.
func run(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	return commands{prog: "countersign", usage: usage, table: map[string]command{
		"serve":   runServe,
		"policy":  runPolicy,
		"config":  runConfigCmd,
		"audit":   runAudit,
		"bench":   runBench,
		"version": runVersion,
	}}.run(ctx, args, stdout, stderr)
}
