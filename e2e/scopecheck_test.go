package e2e

import (
	"context"
	"encoding/json"
	"encoding/xml"
	"net/http"
	"net/url"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"

	"github.com/countersign/countersign/testsupport"
)

// The scope compiler's property test (sessionpolicy's
// TestPolicyAllowImpliesSessionPolicyAllow) evaluates the session policies
// it compiles with a small matcher of its own. This is the cross-check
// with a real enforcement: a sample of the same documents, from
// `countersign policy scope` on the example policies, minted with
// SeaweedFS's own STS and enforced by its S3.

// scopeOutput is what `countersign policy scope` prints.
type scopeOutput struct {
	Scope struct {
		Grants []struct {
			Bucket, Prefix string
			Actions        []string
		}
		Exact bool
	}
	SessionPolicy string `json:"session_policy"`
}

func policyScope(t *testing.T, policyDir, principal, table string) scopeOutput {
	t.Helper()
	lib, _ := filepath.Abs("../deploy/policies/lib")
	dir, _ := filepath.Abs(filepath.Join("../deploy/policies", policyDir))
	args := []string{"policy", "scope", "-policy", lib, "-policy", dir, "-principal", principal, "-bucket", "lake"}
	if table != "" {
		args = append(args, "-table", table)
	}
	out, err := exec.Command(servers.CountersignBin, args...).Output()
	if err != nil {
		t.Fatalf("policy scope %v: %v", args, err)
	}
	var s scopeOutput
	if err := json.Unmarshal(out, &s); err != nil {
		t.Fatalf("%v: %s", err, out)
	}
	return s
}

// granted is the matcher's reading of the documents Compile writes: a
// grant with the action whose prefix starts the key (or list prefix).
func (s scopeOutput) granted(action, key string) bool {
	for _, g := range s.Scope.Grants {
		if g.Bucket == "lake" && strings.HasPrefix(key, g.Prefix) {
			for _, a := range g.Actions {
				if a == action {
					return true
				}
			}
		}
	}
	return false
}

// policyAllows asks `countersign policy eval` for one decision.
func policyAllows(t *testing.T, policyDir string, input map[string]any) bool {
	t.Helper()
	lib, _ := filepath.Abs("../deploy/policies/lib")
	dir, _ := filepath.Abs(filepath.Join("../deploy/policies", policyDir))
	raw, _ := json.Marshal(input)
	cmd := exec.Command(servers.CountersignBin, "policy", "eval", "-policy", lib, "-policy", dir)
	cmd.Stdin = strings.NewReader(string(raw))
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("policy eval: %v", err)
	}
	var d struct{ Allow bool }
	if err := json.Unmarshal(out, &d); err != nil {
		t.Fatalf("%v: %s", err, out)
	}
	return d.Allow
}

// seaweedAssumeRole mints SeaweedFS session credentials with the session
// policy doc (STS is POST / on the S3 port, signed with the root keys).
func seaweedAssumeRole(t *testing.T, weed *testsupport.S3Server, doc string) aws.Credentials {
	t.Helper()
	form := url.Values{
		"Action": {"AssumeRole"}, "Version": {"2011-06-15"}, "RoleArn": {testsupport.SeaweedFSRoleARN},
		"RoleSessionName": {"scope-check"}, "DurationSeconds": {"900"}, "Policy": {doc},
	}.Encode()
	status, body := weed.RootCall(t, "POST", "/", "application/x-www-form-urlencoded", form, "sts")
	var out struct {
		Result struct {
			Credentials struct{ AccessKeyId, SecretAccessKey, SessionToken string }
		} `xml:"AssumeRoleResult"`
	}
	if err := xml.Unmarshal(body, &out); status != http.StatusOK || err != nil || out.Result.Credentials.AccessKeyId == "" {
		t.Fatalf("AssumeRole: %d %v %s", status, err, body)
	}
	c := out.Result.Credentials
	return aws.Credentials{AccessKeyID: c.AccessKeyId, SecretAccessKey: c.SecretAccessKey, SessionToken: c.SessionToken}
}

func deleteKey(c *s3.Client, key string) func(context.Context) error {
	return func(ctx context.Context) error {
		_, err := c.DeleteObject(ctx, &s3.DeleteObjectInput{Bucket: aws.String("lake"), Key: aws.String(key)})
		return err
	}
}

func listPrefix(c *s3.Client, prefix string) func(context.Context) error {
	return func(ctx context.Context) error {
		_, err := c.ListObjectsV2(ctx, &s3.ListObjectsV2Input{Bucket: aws.String("lake"), Prefix: aws.String(prefix)})
		return err
	}
}

// TestSessionPoliciesEnforcedBySeaweedFS: for example policies, principals
// and tables, the session policy `countersign policy scope` compiles,
// minted with SeaweedFS's STS, lets SeaweedFS allow a GetObject, PutObject,
// DeleteObject or ListObjectsV2 exactly when the matcher of the property
// test says the document allows it (a grant of the action whose prefix
// starts the key), in both directions; and every one of those requests
// the policy allows (`countersign policy eval`) SeaweedFS allows: policy
// allow implies store allow, with the store's own enforcement.
func TestSessionPoliciesEnforcedBySeaweedFS(t *testing.T) {
	weed := startVendSeaweedFS(t)
	admin := weed.AdminClient()
	anchors := []string{"wh/db/t/", "wh/db/t2/", "wh/db/t_old/", "wh/db/", "wh/sales/", "wh/db/sub/events/", "wh/other/", "wh/db/t"}
	for _, a := range anchors {
		if got := storeSays(t, put(admin, a+"seed.parquet")); got != "ok" {
			t.Fatalf("seeding %s: %s", a, got)
		}
	}
	listPrefixes := []string{"wh/db/t/", "wh/db/", "wh/", "wh/db/t", "wh/sales/", "", "wh/db/sub/events/"}
	ann := `{"id":"ann","issuer":"https://idp.example/","groups":["analysts"],"claims":{}}`
	eve := `{"id":"eve","issuer":"https://idp.example/","groups":["etl"],"claims":{}}`
	job := `{"id":"job","issuer":"https://catalog.example/","groups":["etl"],"claims":{"location":"s3://lake/wh/db/t/","access":["read","list"]}}`
	tableT := `{"prefix":"prod","namespace":["db"],"name":"t"}`
	tableT2 := `{"prefix":"prod","namespace":["db"],"name":"t2"}`
	cases := []struct{ policy, principal, table string }{
		{"vending", eve, tableT},
		{"vending", ann, ""},
		{"grants", ann, ""},
		{"grants", eve, ""},
		{"combined", eve, tableT},
		{"table-scope", ann, tableT2},
		{"catalog-token", job, ""},
	}
	var checked, allowed int
	for _, c := range cases {
		s := policyScope(t, c.policy, c.principal, c.table)
		// The session policy is an over-approximation of the policy's
		// allows for every example; only the vending example's is exact
		// (the others screen headers, which no session policy can carry).
		if s.SessionPolicy == "" || s.Scope.Exact != (c.policy == "vending") {
			t.Fatalf("%s %s: scope %+v", c.policy, c.principal, s)
		}
		cl := (&vendHarness{weed: weed}).s3As(seaweedAssumeRole(t, weed, s.SessionPolicy))
		var principal, table map[string]any
		_ = json.Unmarshal([]byte(c.principal), &principal)
		if c.table != "" {
			_ = json.Unmarshal([]byte(c.table), &table)
		}
		in := func(op, action, access, method string, res map[string]any) map[string]any {
			return map[string]any{"version": 1, "principal": principal, "operation": op, "action": action, "access": access,
				"resource": res, "copy_source": nil, "table": table,
				"request": map[string]any{"method": method, "region": testRegion, "host": "127.0.0.1", "headers": map[string]any{}},
				"source":  map[string]any{"ip": "127.0.0.1"}}
		}
		obj := func(key string) map[string]any {
			return map[string]any{"bucket": "lake", "key": key, "prefix": nil, "arn": "arn:aws:s3:::lake/" + key, "version_id": ""}
		}
		check := func(what, action, key string, op func(context.Context) error, input map[string]any) {
			t.Helper()
			store := storeSays(t, op)
			if store != "ok" && store != "AccessDenied" {
				t.Fatalf("%s %s %q: SeaweedFS says %s", c.policy, what, key, store)
			}
			if want := s.granted(action, key); (store == "ok") != want {
				t.Errorf("%s (%s, table %s): %s %q: SeaweedFS says %s, the matcher %v, for\n%s", c.policy, c.principal, c.table, what, key, store, want, s.SessionPolicy)
			}
			if policyAllows(t, c.policy, input) {
				allowed++
				if store != "ok" {
					t.Errorf("%s: the policy allows %s %q, SeaweedFS refuses it under the session policy", c.policy, what, key)
				}
			}
			checked++
		}
		for _, a := range anchors {
			k := a + "seed.parquet"
			check("GetObject", "s3:GetObject", k, get(cl, k), in("GetObject", "s3:GetObject", "read", "GET", obj(k)))
			n := a + "new.parquet"
			check("PutObject", "s3:PutObject", n, put(cl, n), in("PutObject", "s3:PutObject", "write", "PUT", obj(n)))
			check("DeleteObject", "s3:DeleteObject", n, deleteKey(cl, n), in("DeleteObject", "s3:DeleteObject", "delete", "DELETE", obj(n)))
		}
		for _, p := range listPrefixes {
			check("ListObjectsV2", "s3:ListBucket", p, listPrefix(cl, p),
				in("ListObjectsV2", "s3:ListBucket", "list", "GET", map[string]any{"bucket": "lake", "key": "", "prefix": p, "arn": "arn:aws:s3:::lake", "version_id": ""}))
		}
	}
	t.Logf("%d requests checked against SeaweedFS, %d of them allowed by the policy", checked, allowed)
	if allowed < 20 {
		t.Fatalf("only %d allowed requests: the sample does not exercise the grants", allowed)
	}
}
