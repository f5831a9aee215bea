package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"regexp"
	"strings"
	"time"

	"github.com/countersign/countersign/policy"
)

// policyUsage is the `countersign policy` help, and its lines for the
// top-level usage.
const policyUsage = `Usage:
  countersign policy test [-v] [-run REGEX] PATH...
      Run the Rego unit tests (rules named test_*) in the .rego files under
      PATH, like "opa test": the PATHs are loaded together, _test.rego files
      included. PATH/... tests every directory below PATH that holds
      *_test.rego files on its own (e.g. deploy/policies/...); a directory
      named lib there is a library, tested once on its own and loaded
      (without its tests) with each directory below its parent. Exits 1 on
      any failure, or when no test was found.

  countersign policy eval -policy PATH [-policy PATH]... [-input FILE|-] [PATH...]
      Load the policy exactly as "serve" does (policy.paths; _test.rego
      skipped) and decide one input document (JSON, policy input version 1,
      as in the README; default: standard input). Prints
      {"allow":...,"reason":...,"revision":...}. To evaluate a bundle,
      extract it (tar xzf) and pass the directory.

  countersign policy scope -policy PATH [-policy PATH]... -principal JSON -bucket B
                           [-access CLASS] [-prefix P] [-table JSON] [PATH...]
      Compile what the principal may reach in the bucket (one access class,
      or all): the key prefixes and IAM actions, and the STS session policy
      per-principal sessions and vended credentials are minted with.
      Prints {"scope":{"grants":[...],"exact":...},"session_policy":...}.
`

// runPolicy implements `countersign policy test|eval|scope`.
func runPolicy(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	return commands{prog: "countersign policy", usage: policyUsage, table: map[string]command{
		"test":  runPolicyTest,
		"eval":  runPolicyEval,
		"scope": runPolicyScope,
	}}.run(ctx, args, stdout, stderr)
}

// runPolicyTest implements `countersign policy test`.
func runPolicyTest(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("policy test", flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.Usage = func() {
		fmt.Fprintln(stderr, "Usage: countersign policy test [-v] [-run REGEX] [-timeout D] PATH...")
		fs.PrintDefaults()
	}
	verbose := fs.Bool("v", false, "report every test, and the trace of failures")
	run := fs.String("run", "", "run only the tests whose full name (data.<package>.test_<name>) matches this regular expression")
	timeout := fs.Duration("timeout", 5*time.Second, "time limit for each test")
	paths, ok := parseInterspersed(fs, args)
	if !ok {
		return 2
	}
	if len(paths) == 0 {
		fmt.Fprintln(stderr, "countersign policy test: give at least one PATH (a .rego file or a directory; DIR/... for each test directory below DIR)")
		return 2
	}
	if _, err := regexp.Compile(*run); err != nil {
		fmt.Fprintf(stderr, "countersign policy test: -run: %v\n", err)
		return 2
	}
	sum, err := policy.RunTests(ctx, paths, policy.TestOptions{
		Run: *run, Verbose: *verbose, Output: stdout, Timeout: *timeout,
	})
	if err != nil {
		fmt.Fprintln(stderr, "countersign policy test:", err)
		return 1
	}
	switch {
	case sum.Total() == 0:
		fmt.Fprintf(stderr, "countersign policy test: no tests found in %s\n", strings.Join(paths, " "))
		return 1
	case !sum.OK():
		return 1
	}
	return 0
}
