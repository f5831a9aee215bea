package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
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
      *_test.rego files on its own (e.g. deploy/policies/...). Exits 1 on
      any failure, or when no test was found.

  countersign policy eval -policy PATH [-policy PATH]... [-input FILE|-] [PATH...]
      Load the policy exactly as "serve" does (policy.paths; _test.rego
      skipped) and decide one input document (JSON, policy input version 1,
      as in the README; default: standard input). Prints
      {"allow":...,"reason":...,"revision":...}. To evaluate a bundle,
      extract it (tar xzf) and pass the directory.
`

// policyStdin is where `policy eval -input -` reads (tests replace it).
var policyStdin io.Reader = os.Stdin

// runPolicy implements `countersign policy test|eval`.
func runPolicy(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	return commands{prog: "countersign policy", usage: policyUsage, table: map[string]command{
		"test": runPolicyTest,
		"eval": runPolicyEval,
	}}.run(ctx, args, stdout, stderr)
}

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

// stringList is a repeatable string flag.
type stringList []string

func (l *stringList) String() string { return strings.Join(*l, ",") }

func (l *stringList) Set(s string) error {
	*l = append(*l, s)
	return nil
}

// evalResult is what `policy eval` prints.
type evalResult struct {
	Allow    bool   `json:"allow"`
	Reason   string `json:"reason"`
	Revision string `json:"revision"`
}

func runPolicyEval(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("policy eval", flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.Usage = func() {
		fmt.Fprintln(stderr, "Usage: countersign policy eval -policy PATH [-policy PATH]... [-input FILE|-] [PATH...]")
		fs.PrintDefaults()
	}
	var paths stringList
	fs.Var(&paths, "policy", "policy file or directory, as in policy.paths (repeatable; extra arguments are more paths)")
	inputPath := fs.String("input", "-", `input document (JSON), or "-" for standard input`)
	rest, ok := parseInterspersed(fs, args)
	if !ok {
		return 2
	}
	paths = append(paths, rest...)
	if len(paths) == 0 {
		fmt.Fprintln(stderr, "countersign policy eval: -policy PATH is required")
		return 2
	}

	var raw []byte
	var err error
	if *inputPath == "-" {
		raw, err = io.ReadAll(policyStdin)
	} else {
		raw, err = os.ReadFile(*inputPath)
	}
	if err != nil {
		fmt.Fprintln(stderr, "countersign policy eval: reading input:", err)
		return 1
	}
	in, err := decodeInput(raw)
	if err != nil {
		fmt.Fprintf(stderr, "countersign policy eval: input %s: %v\n", *inputPath, err)
		return 1
	}

	eng, err := policy.Load(ctx, policy.Options{Paths: paths})
	if err != nil {
		fmt.Fprintln(stderr, "countersign policy eval:", err)
		return 1
	}
	d, err := eng.Authorize(ctx, in)
	if err != nil {
		// The server answers 503 for this: no decision, nothing signed.
		fmt.Fprintln(stderr, "countersign policy eval:", err)
		return 1
	}
	out, _ := json.Marshal(evalResult{Allow: d.Allow, Reason: d.Reason, Revision: d.Revision})
	fmt.Fprintf(stdout, "%s\n", out)
	return 0
}

// decodeInput reads one policy input document strictly: an unknown field
// (a typo such as "principle") is an error rather than a silently absent
// value.
func decodeInput(raw []byte) (*policy.Input, error) {
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.DisallowUnknownFields()
	in := new(policy.Input)
	if err := dec.Decode(in); err != nil {
		return nil, err
	}
	if dec.More() {
		return nil, errors.New("more than one JSON document")
	}
	return in, nil
}

// parseInterspersed parses flags that may come before, between or after
// the positional arguments ("policy test deploy/policies/... -v").
func parseInterspersed(fs *flag.FlagSet, args []string) ([]string, bool) {
	var pos []string
	for {
		if len(args) > 0 && args[0] == "--" {
			return append(pos, args[1:]...), true
		}
		if err := fs.Parse(args); err != nil {
			return nil, false
		}
		args = fs.Args()
		if len(args) == 0 {
			return pos, true
		}
		pos = append(pos, args[0])
		args = args[1:]
	}
}
