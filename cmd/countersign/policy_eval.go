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

	"github.com/countersign/countersign/policy"
)

// evalResult is what `policy eval` prints.
type evalResult struct {
	Allow    bool   `json:"allow"`
	Reason   string `json:"reason"`
	Revision string `json:"revision"`
}

// runPolicyEval implements `countersign policy eval`, reading `-input -`
// from the process's standard input.
func runPolicyEval(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	return policyEval(ctx, args, os.Stdin, stdout, stderr)
}

// policyEval is runPolicyEval with standard input given (for tests).
func policyEval(ctx context.Context, args []string, stdin io.Reader, stdout, stderr io.Writer) int {
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
		raw, err = io.ReadAll(stdin)
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
