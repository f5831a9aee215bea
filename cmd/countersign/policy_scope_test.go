package main

import (
	"encoding/json"
	"os"
	"path/filepath"
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
