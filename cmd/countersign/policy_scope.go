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
	"github.com/countersign/countersign/sessionpolicy"
)

// scopeResult is what `policy scope` prints.
type scopeResult struct {
	Scope policy.Scope `json:"scope"`
	// SessionPolicy is the STS session policy compiled from Scope, empty
	// when the scope grants nothing.
	SessionPolicy string `json:"session_policy"`
	Coarsened     int    `json:"coarsened"`
}

// runPolicyScope implements `countersign policy scope`: what a principal's
// session policy would be (docs/design.md, "Scope compiler").
func runPolicyScope(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("policy scope", flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.Usage = func() {
		fmt.Fprintln(stderr, "Usage: countersign policy scope -policy PATH [-policy PATH]... -principal JSON -bucket B [-access CLASS] [-prefix P] [-table JSON] [-vend] [PATH...]")
		fs.PrintDefaults()
	}
	var paths stringList
	fs.Var(&paths, "policy", "policy file or directory, as in policy.paths (repeatable; extra arguments are more paths)")
	principal := fs.String("principal", "", `the principal, as in the policy input: {"id":...,"issuer":...,"groups":[...],"claims":{...}}; @FILE reads it from a file`)
	bucket := fs.String("bucket", "", "the bucket (required)")
	access := fs.String("access", "", "one access class (read, write, delete, delete_version, list); default all of them")
	prefix := fs.String("prefix", "", "only keys under this prefix (a vended credential's location)")
	table := fs.String("table", "", `the per-table route's table: {"prefix":...,"namespace":[...],"name":...}`)
	maxBytes := fs.Int("max-bytes", sessionpolicy.DefaultMaxBytes, "longest session policy")
	vendMode := fs.Bool("vend", false, "what vended credentials would carry: only the actions whose scope is exact, the session policy naming exactly their prefixes or refused")
	rest, ok := parseInterspersed(fs, args)
	if !ok {
		return 2
	}
	paths = append(paths, rest...)
	if len(paths) == 0 || *principal == "" || *bucket == "" {
		fmt.Fprintln(stderr, "countersign policy scope: -policy PATH, -principal and -bucket are required")
		return 2
	}
	q := policy.ScopeQuery{Access: *access, Bucket: *bucket, Prefix: *prefix, Exact: *vendMode}
	if err := decodeArg(*principal, &q.Principal); err != nil {
		fmt.Fprintln(stderr, "countersign policy scope: -principal:", err)
		return 2
	}
	if *table != "" {
		q.Table = &policy.Table{}
		if err := decodeArg(*table, q.Table); err != nil {
			fmt.Fprintln(stderr, "countersign policy scope: -table:", err)
			return 2
		}
	}
	eng, err := policy.Load(ctx, policy.Options{Paths: paths})
	if err != nil {
		fmt.Fprintln(stderr, "countersign policy scope:", err)
		return 1
	}
	s, err := eng.Scope(ctx, q)
	if err != nil {
		fmt.Fprintln(stderr, "countersign policy scope:", err)
		return 1
	}
	res := scopeResult{Scope: s}
	doc, err := sessionpolicy.Compile(s, sessionpolicy.Options{MaxBytes: *maxBytes, Exact: *vendMode})
	switch {
	case errors.Is(err, sessionpolicy.ErrEmptyScope):
	case err != nil:
		fmt.Fprintln(stderr, "countersign policy scope:", err)
		return 1
	default:
		res.SessionPolicy, res.Coarsened = doc.JSON(), doc.Coarsened
	}
	out, _ := json.Marshal(res)
	fmt.Fprintf(stdout, "%s\n", out)
	return 0
}

// decodeArg decodes a flag's JSON value, or the file it names after @,
// refusing unknown fields.
func decodeArg(arg string, v any) error {
	raw := []byte(arg)
	if len(arg) > 0 && arg[0] == '@' {
		var err error
		if raw, err = os.ReadFile(arg[1:]); err != nil {
			return err
		}
	}
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.DisallowUnknownFields()
	return dec.Decode(v)
}
