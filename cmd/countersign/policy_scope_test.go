package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// TestPolicyScope: `policy scope` prints the scope and the session policy
// compiled from the example policy, not exact (the guardrails deny
// headers, which no session policy carries) and with -vend nothing; the
// principal may come from a file; an empty scope has no session policy;
// bad arguments exit 2.
func TestPolicyScope(t *testing.T) {
	lib, grants := "../../deploy/policies/lib", "../../deploy/policies/grants"
	ann := `{"id":"ann","issuer":"https://idp.example/","groups":["analysts"],"claims":{}}`
	code, stdout, stderr := runPolicyCmd(t, "scope", "-policy", lib, "-policy", grants, "-principal", ann, "-bucket", "lake", "-access", "read")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	var res struct {
		Scope struct {
			Grants []struct {
				Bucket, Prefix string
				Actions        []string
			}
			Exact bool
			Why   string
		}
		SessionPolicy string `json:"session_policy"`
	}
	if err := json.Unmarshal([]byte(stdout), &res); err != nil {
		t.Fatalf("%v: %s", err, stdout)
	}
	if len(res.Scope.Grants) != 2 || res.Scope.Grants[0].Prefix != "wh/db/t/" || res.Scope.Grants[1].Prefix != "wh/sales/" || res.Scope.Exact || !strings.Contains(res.Scope.Why, "x-amz-acl") {
		t.Fatalf("scope %+v", res.Scope)
	}
	if !strings.Contains(res.SessionPolicy, `"arn:aws:s3:::lake/wh/db/t/*","arn:aws:s3:::lake/wh/sales/*"`) {
		t.Fatalf("session policy %s", res.SessionPolicy)
	}

	code, stdout, stderr = runPolicyCmd(t, "scope", "-policy", lib, "-policy", grants, "-principal", ann, "-bucket", "lake", "-access", "read", "-vend")
	if code != 0 || !strings.Contains(stdout, `"grants":null`) || !strings.Contains(stdout, `"exact":false`) || !strings.Contains(stdout, `"session_policy":""`) {
		t.Fatalf("-vend: exit %d %s %s", code, stdout, stderr)
	}

	file := filepath.Join(t.TempDir(), "p.json")
	if err := os.WriteFile(file, []byte(ann), 0o644); err != nil {
		t.Fatal(err)
	}
	code, stdout, stderr = runPolicyCmd(t, "scope", "-policy", lib, "-policy", grants, "-principal", "@"+file, "-bucket", "lake", "-access", "write")
	if code != 0 || !strings.Contains(stdout, `"grants":null`) || !strings.Contains(stdout, `"session_policy":""`) {
		t.Fatalf("nothing granted: exit %d %s %s", code, stdout, stderr)
	}
	for _, args := range [][]string{
		{"scope", "-policy", lib, "-bucket", "lake"},                                                 // no principal
		{"scope", "-policy", lib, "-policy", grants, "-principal", `{"idd":"x"}`, "-bucket", "lake"}, // unknown field
		{"scope", "-policy", lib, "-policy", grants, "-principal", ann, "-bucket", "lake", "-table", "{"},
	} {
		if code, _, _ := runPolicyCmd(t, args...); code != 2 {
			t.Errorf("%q: exit %d, want 2", args, code)
		}
	}
	if code, _, stderr := runPolicyCmd(t, "scope", "-policy", lib, "-policy", grants, "-principal", ann, "-bucket", "lake", "-access", "admin"); code != 1 || !strings.Contains(stderr, "admin") {
		t.Errorf("admin: exit %d %s", code, stderr)
	}
}

// TestPolicyScopeVendingExample: `policy scope -vend` on the example
// written to vend (deploy/policies/vending) gives a principal exact read
// and read-write scopes, their session policies naming exactly the
// table's location; the same principal under an example that keeps the
// header guardrail (combined, same grants) gets nothing, and a grant the
// principal lacks (ann's write) is not vended.
func TestPolicyScopeVendingExample(t *testing.T) {
	lib := "../../deploy/policies/lib"
	eve := `{"id":"eve","issuer":"https://idp.example/","groups":["etl"],"claims":{}}`
	ann := `{"id":"ann","issuer":"https://idp.example/","groups":["analysts"],"claims":{}}`
	table := `{"prefix":"prod","namespace":["db"],"name":"t"}`
	type out struct {
		Scope struct {
			Grants []struct {
				Bucket, Prefix string
				Actions        []string
			}
			Exact bool
			Why   string
		}
		SessionPolicy string `json:"session_policy"`
	}
	scope := func(example, principal string, access ...string) out {
		t.Helper()
		args := []string{"scope", "-policy", lib, "-policy", "../../deploy/policies/" + example, "-principal", principal,
			"-bucket", "lake", "-table", table, "-prefix", "wh/db/t/", "-vend"}
		code, stdout, stderr := runPolicyCmd(t, append(args, access...)...)
		if code != 0 {
			t.Fatalf("%s %v: exit %d: %s", example, access, code, stderr)
		}
		var res out
		if err := json.Unmarshal([]byte(stdout), &res); err != nil {
			t.Fatalf("%v: %s", err, stdout)
		}
		return res
	}
	has := func(res out, actions ...string) bool {
		for _, a := range actions {
			found := false
			for _, g := range res.Scope.Grants {
				if g.Bucket == "lake" && g.Prefix == "wh/db/t/" && slices.Contains(g.Actions, a) {
					found = true
				}
			}
			if !found {
				return false
			}
		}
		return true
	}
	// Read: -access read; read-write: every class, as a read-write mint asks.
	read := scope("vending", eve, "-access", "read")
	if !read.Scope.Exact || !has(read, "s3:GetObject") || has(read, "s3:PutObject") ||
		!strings.Contains(read.SessionPolicy, `"arn:aws:s3:::lake/wh/db/t/*"`) || strings.Contains(read.SessionPolicy, "s3:PutObject") {
		t.Errorf("read: %+v", read)
	}
	rw := scope("vending", eve)
	if !rw.Scope.Exact || !has(rw, "s3:GetObject", "s3:PutObject", "s3:ListBucket") ||
		!strings.Contains(rw.SessionPolicy, `"s3:PutObject"`) || !strings.Contains(rw.SessionPolicy, `"wh/db/t/*"`) {
		t.Errorf("read-write: %+v", rw)
	}
	for _, g := range rw.Scope.Grants {
		if g.Prefix != "wh/db/t/" {
			t.Errorf("read-write grant outside the location: %+v", g)
		}
	}
	if c := scope("combined", eve); c.Scope.Exact || len(c.Scope.Grants) != 0 || c.SessionPolicy != "" || !strings.Contains(c.Scope.Why, "x-amz-acl") {
		t.Errorf("combined vends: %+v", c)
	}
	if w := scope("vending", ann, "-access", "write"); len(w.Scope.Grants) != 0 || w.SessionPolicy != "" {
		t.Errorf("ann's write vended: %+v", w)
	}
}
