package policy_test

import (
	"bytes"
	"context"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/countersign/countersign/deploy/policies"
	"github.com/countersign/countersign/policy"
)

const examplesDir = "../deploy/policies"

// TestExamplePolicies loads every complete example policy the way serve
// does (Load, _test.rego skipped) and runs every example directory's Rego
// tests the way `countersign policy test deploy/policies/...` does, so an
// example that breaks fails go test.
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
		t.Run(e.Name(), func(t *testing.T) {
			ctx := context.Background()
			if _, err := os.Stat(filepath.Join(dir, "authz.rego")); err == nil {
				eng, err := policy.Load(ctx, policy.Options{Paths: []string{dir}})
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
			sum, err := policy.RunTests(ctx, []string{dir}, policy.TestOptions{Output: &out})
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

// TestExamplePatternRunsEveryDirectory: the "dir/..." form tests each
// example directory on its own and finds them all.
func TestExamplePatternRunsEveryDirectory(t *testing.T) {
	var out bytes.Buffer
	sum, err := policy.RunTests(context.Background(), []string{examplesDir + "/..."}, policy.TestOptions{Output: &out})
	if err != nil {
		t.Fatalf("%v\n%s", err, out.String())
	}
	if !sum.OK() {
		t.Fatalf("%+v\n%s", sum, out.String())
	}
	for _, d := range []string{"guardrails", "grants", "table-scope", "catalog-token", "combined", "dev"} {
		if !strings.Contains(out.String(), "=== "+filepath.Join(examplesDir, d)+"\n") {
			t.Errorf("directory %s not tested:\n%s", d, out.String())
		}
	}
}

// TestLibraryCopiesIdentical: the example policies share library files by
// copy (each directory is a complete policy on its own); every copy of a
// library must be byte-identical, so a fix is made everywhere.
func TestLibraryCopiesIdentical(t *testing.T) {
	copies := map[string]map[string][]string{} // file name -> content -> dirs
	err := filepath.WalkDir(examplesDir, func(path string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		name := d.Name()
		if !strings.HasSuffix(name, ".rego") || strings.HasSuffix(name, "_test.rego") || name == "authz.rego" {
			return nil
		}
		b, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		if copies[name] == nil {
			copies[name] = map[string][]string{}
		}
		copies[name][string(b)] = append(copies[name][string(b)], filepath.Dir(path))
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	for name, versions := range copies {
		if len(versions) > 1 {
			var where []string
			for _, dirs := range versions {
				where = append(where, strings.Join(dirs, ","))
			}
			t.Errorf("%s differs between copies: %s", name, strings.Join(where, " vs "))
		}
	}
	if len(copies["guardrails.rego"]) != 1 {
		t.Error("guardrails.rego not found")
	}
}

// TestDevPolicyEmbedded: serve -dev's embedded policy loads, and allows a
// null principal on the warehouse bucket only.
func TestDevPolicyEmbedded(t *testing.T) {
	ctx := context.Background()
	eng, err := policy.Load(ctx, policy.Options{FS: policies.Dev()})
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
