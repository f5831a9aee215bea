package policy_test

import (
	"bytes"
	"context"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/countersign/countersign/deploy/policies"
	"github.com/countersign/countersign/policy"
)

const examplesDir = "../deploy/policies"

// libDir is the example policies' library, loaded with each of them.
var libDir = filepath.Join(examplesDir, "lib")

// TestExamplePolicies loads every complete example policy with the library
// the way serve does (Load of two paths, _test.rego skipped) and runs
// every example directory's Rego tests with the library, so an example that
// breaks fails go test.
func TestExamplePolicies(t *testing.T) {
	entries, err := os.ReadDir(examplesDir)
	if err != nil {
		t.Fatal(err)
	}
	tested := 0
	for _, e := range entries {
		if !e.IsDir() {
			continue
		}
		dir := filepath.Join(examplesDir, e.Name())
		paths := []string{libDir, dir}
		if dir == libDir {
			paths = []string{dir}
		}
		t.Run(e.Name(), func(t *testing.T) {
			ctx := context.Background()
			if _, err := os.Stat(filepath.Join(dir, "authz.rego")); err == nil {
				eng, err := policy.Load(ctx, policy.Options{Paths: paths})
				if err != nil {
					t.Fatalf("Load: %v", err)
				}
				if eng.Revision() == "" {
					t.Fatal("no revision")
				}
			}
			tests, _ := filepath.Glob(filepath.Join(dir, "*_test.rego"))
			if len(tests) == 0 {
				t.Fatal("no Rego tests: every example policy ships its own")
			}
			var out bytes.Buffer
			sum, err := policy.RunTests(ctx, paths, policy.TestOptions{Output: &out, Timeout: time.Minute})
			if err != nil {
				t.Fatalf("RunTests: %v\n%s", err, out.String())
			}
			if !sum.OK() {
				t.Fatalf("Rego tests failed: %+v\n%s", sum, out.String())
			}
			t.Logf("%s: %d Rego tests passed", e.Name(), sum.Pass)
			tested++
		})
	}
	if tested < 5 {
		t.Errorf("only %d example directories have passing tests", tested)
	}
}

// TestExamplePatternRunsEveryDirectory: the "dir/..." form tests the
// library on its own, and each example directory with the library (without
// the library's tests), and finds them all.
func TestExamplePatternRunsEveryDirectory(t *testing.T) {
	var out bytes.Buffer
	sum, err := policy.RunTests(context.Background(), []string{examplesDir + "/..."}, policy.TestOptions{Output: &out, Timeout: time.Minute})
	if err != nil {
		t.Fatalf("%v\n%s", err, out.String())
	}
	if !sum.OK() {
		t.Fatalf("%+v\n%s", sum, out.String())
	}
	if !strings.Contains(out.String(), "=== "+libDir+"\n") {
		t.Errorf("the library is not tested on its own:\n%s", out.String())
	}
	for _, d := range []string{"grants", "table-scope", "catalog-token", "combined", "dev", "vending"} {
		if !strings.Contains(out.String(), "=== "+filepath.Join(examplesDir, d)+" (with "+libDir+")\n") {
			t.Errorf("directory %s not tested with the library:\n%s", d, out.String())
		}
	}
	if n := strings.Count(out.String(), "=== "); n != 7 {
		t.Errorf("%d units, want the library and six examples:\n%s", n, out.String())
	}
	var libOnly bytes.Buffer
	libSum, err := policy.RunTests(context.Background(), []string{libDir}, policy.TestOptions{Output: &libOnly, Timeout: time.Minute})
	if err != nil || !libSum.OK() {
		t.Fatalf("%+v %v\n%s", libSum, err, libOnly.String())
	}
	var each int
	for _, d := range []string{"grants", "table-scope", "catalog-token", "combined", "dev", "vending"} {
		s, err := policy.RunTests(context.Background(), []string{filepath.Join(examplesDir, d) + "/..."}, policy.TestOptions{Timeout: time.Minute})
		if err != nil {
			t.Fatal(err)
		}
		each += s.Total()
	}
	if sum.Total() != libSum.Total()+each {
		t.Errorf("%d tests in all, want the library's %d once plus the examples' %d", sum.Total(), libSum.Total(), each)
	}
}

// TestLibraryNotCopied: the library files live once, in lib/; an example
// directory holds its authz.rego, its data and its tests only, so a fix
// to a library lands once.
func TestLibraryNotCopied(t *testing.T) {
	lib, err := filepath.Glob(filepath.Join(libDir, "*.rego"))
	if err != nil || len(lib) < 5 {
		t.Fatalf("library files %v, %v", lib, err)
	}
	err = filepath.WalkDir(examplesDir, func(path string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() || filepath.Dir(path) == libDir {
			return err
		}
		name := d.Name()
		if strings.HasSuffix(name, ".rego") && !strings.HasSuffix(name, "_test.rego") && name != "authz.rego" {
			t.Errorf("%s: library code belongs in %s, loaded with every example", path, libDir)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
}

// TestDevPolicyEmbedded: serve -dev's embedded policy loads, and allows a
// null principal on the warehouse bucket only.
func TestDevPolicyEmbedded(t *testing.T) {
	ctx := context.Background()
	fsys, paths := policies.Dev()
	eng, err := policy.Load(ctx, policy.Options{FS: fsys, Paths: paths})
	if err != nil {
		t.Fatal(err)
	}
	in := &policy.Input{
		Version: 1, Operation: "GetObject", Action: "s3:GetObject", Access: "read",
		Resource: policy.Resource{Bucket: "warehouse", Key: "db/t/f.parquet", ARN: "arn:aws:s3:::warehouse/db/t/f.parquet"},
	}
	if d, err := eng.Authorize(ctx, in); err != nil || !d.Allow {
		t.Fatalf("warehouse read with null principal: %+v %v", d, err)
	}
	in.Resource.Bucket = "prod"
	if d, err := eng.Authorize(ctx, in); err != nil || d.Allow || !strings.Contains(d.Reason, "not a development bucket") {
		t.Fatalf("other bucket: %+v %v", d, err)
	}
	in.Resource.Bucket = "warehouse"
	in.Access, in.Operation = "admin", "PutObjectAcl"
	if d, err := eng.Authorize(ctx, in); err != nil || d.Allow || !strings.Contains(d.Reason, "admin") {
		t.Fatalf("admin: %+v %v", d, err)
	}
}

// TestVendingPolicyEmbedded: the embedded vending example loads, and its
// scope for etl on table t is exact for reads and for every class (what a
// read-write mint asks), naming the table's location only; the combined
// example, with the same grants and the header guardrail, vends nothing.
func TestVendingPolicyEmbedded(t *testing.T) {
	ctx := context.Background()
	fsys, paths := policies.Vending()
	eng, err := policy.Load(ctx, policy.Options{FS: fsys, Paths: paths})
	if err != nil {
		t.Fatal(err)
	}
	eve := policy.Principal{ID: "eve", Issuer: "https://idp.example/", Groups: []string{"etl"}, Claims: map[string]any{}}
	table := &policy.Table{Prefix: "prod", Namespace: []string{"db"}, Name: "t"}
	combined, err := policy.Load(ctx, policy.Options{Paths: []string{libDir, filepath.Join(examplesDir, "combined")}})
	if err != nil {
		t.Fatal(err)
	}
	for _, access := range []string{"read", ""} {
		q := policy.ScopeQuery{Principal: eve, Access: access, Bucket: "lake", Prefix: "wh/db/t/", Table: table, Exact: true}
		s, err := eng.Scope(ctx, q)
		if err != nil {
			t.Fatal(err)
		}
		want := map[string]bool{"s3:GetObject": true, "s3:PutObject": access == ""}
		got := map[string]bool{}
		for _, g := range s.Grants {
			if g.Bucket != "lake" || g.Prefix != "wh/db/t/" {
				t.Errorf("access %q: grant %+v outside the table's location", access, g)
			}
			for _, a := range g.Actions {
				got[a] = true
			}
		}
		if !s.Exact || got["s3:GetObject"] != want["s3:GetObject"] || got["s3:PutObject"] != want["s3:PutObject"] {
			t.Errorf("access %q: exact %v, why %q, actions %v", access, s.Exact, s.Why, got)
		}
		c, err := combined.Scope(ctx, q)
		if err != nil {
			t.Fatal(err)
		}
		if c.Exact || len(c.Grants) != 0 {
			t.Errorf("combined, access %q: exact %v, grants %+v: want nothing vended", access, c.Exact, c.Grants)
		}
	}
}
