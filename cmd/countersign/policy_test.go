package main

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/countersign/countersign/policy"
)

const testAuthz = `package countersign.authz

default allow := false

allow if input.resource.bucket == "lake"

reason := "not the lake" if not allow
`

const testAuthzTests = `package countersign.authz_test

import data.countersign.authz

test_lake_allowed if authz.allow with input as {"resource": {"bucket": "lake"}}

test_other_denied if not authz.allow with input as {"resource": {"bucket": "other"}}
`

func policyDir(t *testing.T, files map[string]string) string {
	t.Helper()
	dir := t.TempDir()
	for name, content := range files {
		p := filepath.Join(dir, name)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(content), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	return dir
}

func runPolicyCmd(t *testing.T, args ...string) (code int, stdout, stderr string) {
	t.Helper()
	var out, errOut bytes.Buffer
	code = runPolicy(context.Background(), args, &out, &errOut)
	return code, out.String(), errOut.String()
}

func TestPolicyUsage(t *testing.T) {
	if code, _, stderr := runPolicyCmd(t); code != 2 || !strings.Contains(stderr, "countersign policy test") {
		t.Fatalf("no args: %d %q", code, stderr)
	}
	if code, _, stderr := runPolicyCmd(t, "frobnicate"); code != 2 || !strings.Contains(stderr, `unknown command "frobnicate"`) {
		t.Fatalf("unknown: %d %q", code, stderr)
	}
	if code, stdout, _ := runPolicyCmd(t, "help"); code != 0 || !strings.Contains(stdout, "countersign policy eval") {
		t.Fatalf("help: %d %q", code, stdout)
	}
	if code, _, _ := runPolicyCmd(t, "test"); code != 2 {
		t.Fatalf("test without paths: %d", code)
	}
	if code, _, stderr := runPolicyCmd(t, "test", "-run", "(", "."); code != 2 || !strings.Contains(stderr, "-run") {
		t.Fatalf("bad -run: %d %q", code, stderr)
	}
	if code, _, _ := runPolicyCmd(t, "test", "-nope", "."); code != 2 {
		t.Fatalf("unknown flag: %d", code)
	}
	if code, _, _ := runPolicyCmd(t, "eval"); code != 2 {
		t.Fatalf("eval without -policy: %d", code)
	}
}

func TestPolicyTestPasses(t *testing.T) {
	dir := policyDir(t, map[string]string{"authz.rego": testAuthz, "authz_test.rego": testAuthzTests})
	code, stdout, stderr := runPolicyCmd(t, "test", dir)
	if code != 0 || !strings.Contains(stdout, "PASS: 2/2") || stderr != "" {
		t.Fatalf("code %d\nstdout %s\nstderr %s", code, stdout, stderr)
	}
	// Quiet by default, like opa test: passing tests are not listed.
	if strings.Contains(stdout, "test_lake_allowed") {
		t.Errorf("non-verbose output lists passing tests: %s", stdout)
	}

	// -v lists every test; flags may follow the paths.
	code, stdout, _ = runPolicyCmd(t, "test", dir, "-v")
	if code != 0 || !strings.Contains(stdout, "data.countersign.authz_test.test_lake_allowed: PASS") ||
		!strings.Contains(stdout, "data.countersign.authz_test.test_other_denied: PASS") {
		t.Fatalf("-v: %d %s", code, stdout)
	}

	// -run selects tests by name.
	code, stdout, _ = runPolicyCmd(t, "test", "-v", "-run", "other", dir)
	if code != 0 || !strings.Contains(stdout, "PASS: 1/1") || strings.Contains(stdout, "test_lake_allowed") {
		t.Fatalf("-run: %d %s", code, stdout)
	}
}

func TestPolicyTestFailures(t *testing.T) {
	failing := testAuthzTests + `
test_wrong_expectation if authz.allow with input as {"resource": {"bucket": "other"}}
`
	dir := policyDir(t, map[string]string{"authz.rego": testAuthz, "authz_test.rego": failing})
	code, stdout, _ := runPolicyCmd(t, "test", dir)
	if code != 1 || !strings.Contains(stdout, "data.countersign.authz_test.test_wrong_expectation: FAIL") ||
		!strings.Contains(stdout, "PASS: 2/3") || !strings.Contains(stdout, "FAIL: 1/3") {
		t.Fatalf("failing test: %d\n%s", code, stdout)
	}
	// The failure names its file and line.
	if !strings.Contains(stdout, "authz_test.rego:9") {
		t.Errorf("failure location missing:\n%s", stdout)
	}

	// No tests at all is a failure, not a pass.
	empty := policyDir(t, map[string]string{"authz.rego": testAuthz})
	if code, _, stderr := runPolicyCmd(t, "test", empty); code != 1 || !strings.Contains(stderr, "no tests found") {
		t.Fatalf("no tests: %d %q", code, stderr)
	}
	dir = policyDir(t, map[string]string{"authz.rego": testAuthz, "authz_test.rego": testAuthzTests})
	if code, _, stderr := runPolicyCmd(t, "test", "-run", "nothing_matches", dir); code != 1 || !strings.Contains(stderr, "no tests found") {
		t.Fatalf("-run matching nothing: %d %q", code, stderr)
	}

	// A test file that does not compile: exit 1, file and line on stderr.
	broken := policyDir(t, map[string]string{"authz.rego": testAuthz, "authz_test.rego": "package countersign.authz_test\n\ntest_x if nope(1)\n"})
	if code, _, stderr := runPolicyCmd(t, "test", broken); code != 1 || !strings.Contains(stderr, "authz_test.rego:3") {
		t.Fatalf("broken: %d %q", code, stderr)
	}

	// A path that does not exist.
	if code, _, stderr := runPolicyCmd(t, "test", filepath.Join(t.TempDir(), "nope")); code != 1 || stderr == "" {
		t.Fatalf("missing path: %d %q", code, stderr)
	}
}

// TestPolicyTestExamples runs exactly what the README tells operators to
// run on the shipped examples.
func TestPolicyTestExamples(t *testing.T) {
	code, stdout, stderr := runPolicyCmd(t, "test", "../../deploy/policies/...")
	if code != 0 || !strings.Contains(stdout, "0 failed, 0 errors") {
		t.Fatalf("code %d\n%s\n%s", code, stdout, stderr)
	}
	lib := filepath.Join("../../deploy/policies", "lib")
	if !strings.Contains(stdout, "=== "+lib+"\n") {
		t.Errorf("the library not tested on its own:\n%s", stdout)
	}
	for _, d := range []string{"grants", "table-scope", "catalog-token", "combined", "dev", "vending"} {
		if !strings.Contains(stdout, "=== "+filepath.Join("../../deploy/policies", d)+" (with "+lib+")\n") {
			t.Errorf("%s not tested with the library:\n%s", d, stdout)
		}
	}
	// A directory pattern with no tests below it fails.
	if code, _, stderr := runPolicyCmd(t, "test", t.TempDir()+"/..."); code != 1 || !strings.Contains(stderr, "no *_test.rego files") {
		t.Fatalf("empty pattern: %d %q", code, stderr)
	}
}

func writeInput(t *testing.T, in string) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), "input.json")
	if err := os.WriteFile(p, []byte(in), 0o600); err != nil {
		t.Fatal(err)
	}
	return p
}

func TestPolicyEval(t *testing.T) {
	dir := policyDir(t, map[string]string{"authz.rego": testAuthz, "authz_test.rego": "this is skipped, as by serve"})
	eng, err := policy.Load(context.Background(), policy.Options{Paths: []string{dir}})
	if err != nil {
		t.Fatal(err)
	}
	allowIn := writeInput(t, `{"version": 1, "principal": null, "operation": "GetObject", "action": "s3:GetObject", "access": "read",
		"resource": {"bucket": "lake", "key": "k", "prefix": null, "arn": "arn:aws:s3:::lake/k"}}`)

	code, stdout, stderr := runPolicyCmd(t, "eval", "-policy", dir, "-input", allowIn)
	if code != 0 || stderr != "" {
		t.Fatalf("%d %s %s", code, stdout, stderr)
	}
	var got map[string]any
	if err := json.Unmarshal([]byte(stdout), &got); err != nil {
		t.Fatalf("output is not JSON: %q", stdout)
	}
	want := map[string]any{"allow": true, "reason": "", "revision": eng.Revision()}
	if len(got) != 3 || got["allow"] != want["allow"] || got["reason"] != want["reason"] || got["revision"] != want["revision"] {
		t.Fatalf("got %v, want %v", got, want)
	}

	// Standard input, policy as a positional path, a denial with its reason.
	var out bytes.Buffer
	code = policyEval(context.Background(), []string{"-input", "-", dir}, strings.NewReader(`{"version": 1, "resource": {"bucket": "other", "key": "k"}}`), &out, io.Discard)
	stdout = out.String()
	if code != 0 || stdout != `{"allow":false,"reason":"not the lake","revision":"`+eng.Revision()+"\"}\n" {
		t.Fatalf("deny: %d %q", code, stdout)
	}

	// A typo in the input is an error, not a silently absent field.
	bad := writeInput(t, `{"version": 1, "principle": {"id": "ann"}}`)
	if code, _, stderr := runPolicyCmd(t, "eval", "-policy", dir, "-input", bad); code != 1 || !strings.Contains(stderr, `unknown field "principle"`) {
		t.Fatalf("typo: %d %q", code, stderr)
	}
	two := writeInput(t, `{"version": 1} {"version": 1}`)
	if code, _, _ := runPolicyCmd(t, "eval", "-policy", dir, "-input", two); code != 1 {
		t.Fatalf("two documents: %d", code)
	}
	if code, _, _ := runPolicyCmd(t, "eval", "-policy", dir, "-input", filepath.Join(t.TempDir(), "nope.json")); code != 1 {
		t.Fatalf("missing input: %d", code)
	}

	// A policy that does not compile: exit 1 with file and line.
	broken := policyDir(t, map[string]string{"authz.rego": "package countersign.authz\n\nallow if nope(input)\n"})
	if code, _, stderr := runPolicyCmd(t, "eval", "-policy", broken, "-input", allowIn); code != 1 || !strings.Contains(stderr, "authz.rego:3") {
		t.Fatalf("broken policy: %d %q", code, stderr)
	}
}

// TestPolicyEvalExample debugs a denial against a shipped example, as an
// operator would: the reason says why.
func TestPolicyEvalExample(t *testing.T) {
	in := writeInput(t, `{"version": 1,
		"principal": {"id": "ann", "issuer": "https://idp.example/", "groups": ["analysts"], "claims": {}},
		"operation": "GetObject", "action": "s3:GetObject", "access": "read",
		"resource": {"bucket": "lake", "key": "wh/db/t2/data/f.parquet", "prefix": null, "arn": "arn:aws:s3:::lake/wh/db/t2/data/f.parquet"},
		"copy_source": null, "table": null,
		"request": {"method": "GET", "region": "us-east-1", "host": "lake.s3.us-east-1.amazonaws.com", "headers": {}},
		"source": {"ip": "10.0.0.7"}}`)
	code, stdout, stderr := runPolicyCmd(t, "eval", "-policy", "../../deploy/policies/lib", "-policy", "../../deploy/policies/grants", "-input", in)
	if code != 0 || !strings.Contains(stdout, `"allow":false`) ||
		!strings.Contains(stdout, "no group of ann grants read on arn:aws:s3:::lake/wh/db/t2/data/f.parquet") {
		t.Fatalf("%d %s %s", code, stdout, stderr)
	}
}
