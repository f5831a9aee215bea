package e2e

import (
	"context"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"
)

// actionReadPolicy allows every mint under wh/ and, of S3 requests under
// wh/, only those IAM calls s3:GetObject or s3:ListBucket: read-only,
// written by action rather than by access class.
const actionReadPolicy = `package countersign.authz

default allow := false

path := input.resource.prefix if is_string(input.resource.prefix)

path := object.get(input.resource, "key", "") if not is_string(input.resource.prefix)

allow if {
	input.operation == "MintCredentials"
	startswith(path, "wh/")
}

allow if {
	input.action in {"s3:GetObject", "s3:ListBucket"}
	startswith(path, "wh/")
}
`

func del(c *s3.Client, key string) func(context.Context) error {
	return func(ctx context.Context) error {
		_, err := c.DeleteObject(ctx, &s3.DeleteObjectInput{Bucket: aws.String("lake"), Key: aws.String(key)})
		return err
	}
}

func policyDir(t *testing.T, rego string) string {
	t.Helper()
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "authz.rego"), []byte(rego), 0o644); err != nil {
		t.Fatal(err)
	}
	return dir
}

// TestVendingIsExact: against SeaweedFS's real STS and S3, vended
// credentials carry only what the policy allows, in action and in prefix.
//   - A read-only policy written by IAM action: read-write is refused
//     naming s3:PutObject; the credentials the Iceberg route vends read,
//     and SeaweedFS refuses their PUT and DELETE (they were once minted
//     with s3:PutObject and s3:DeleteObject, the action condition dropped).
//   - The shipped combined example: lib/guardrails denies headers on every
//     request, which no session policy carries, so nothing is vended.
//   - A location holding $ is refused naming it: s3://lake/wh/db/$/ was
//     once decided as wh/db/$/ and minted as lake/wh/db/*, every sibling.
func TestVendingIsExact(t *testing.T) {
	weed := startVendSeaweedFS(t)
	admin := weed.AdminClient()
	for _, k := range []string{"wh/db/t/data/seed.parquet", "wh/db/t2/seed.parquet", "wh/db/$/seed.parquet"} {
		if got := storeSays(t, put(admin, k)); got != "ok" {
			t.Fatalf("seeding %s: %s", k, got)
		}
	}
	endpoint := "  region: us-east-1\n  endpoint: http://127.0.0.1:" + itoa(weed.Port) + "\n"
	token := testIdP.Mint("ann", []string{"analysts"}, nil)

	t.Run("action-restricted read policy", func(t *testing.T) {
		h := startVendWith(t, weed, "", endpoint, policyDir(t, actionReadPolicy))
		msg := unityRefusal(t, h.unity(t, token, "s3://lake/wh/db/t/", "PATH_READ_WRITE"), http.StatusForbidden, "PERMISSION_DENIED")
		if !strings.Contains(msg, "s3:PutObject") {
			t.Errorf("read-write refusal does not name s3:PutObject: %s", msg)
		}
		c, _ := unityCreds(t, h.unity(t, token, "s3://lake/wh/db/t/", "PATH_READ"))
		cl := h.s3As(c)
		for _, want := range []struct{ what, got, want string }{
			{"get inside", storeSays(t, get(cl, "wh/db/t/data/seed.parquet")), "ok"},
			{"put inside", storeSays(t, put(cl, "wh/db/t/data/new.parquet")), "AccessDenied"},
			{"delete inside", storeSays(t, del(cl, "wh/db/t/data/seed.parquet")), "AccessDenied"},
			{"get outside", storeSays(t, get(cl, "wh/db/t2/seed.parquet")), "AccessDenied"},
		} {
			if want.got != want.want {
				t.Errorf("%s: SeaweedFS says %s, want %s", want.what, want.got, want.want)
			}
		}
		if got := storeSays(t, get(admin, "wh/db/t/data/seed.parquet")); got != "ok" {
			t.Errorf("the object the credentials tried to delete: %s", got)
		}
	})

	t.Run("guardrails' header denial", func(t *testing.T) {
		combined, err := filepath.Abs("../deploy/policies/combined")
		if err != nil {
			t.Fatal(err)
		}
		h := startVendWith(t, weed, "", endpoint, combined)
		msg := icebergRefusal(t, h.iceberg(t, testIdP.Mint("etl-user", []string{"etl"}, nil), "t"), http.StatusForbidden, "ForbiddenException")
		if !strings.Contains(msg, "x-amz-acl") || !strings.Contains(msg, "not exact") {
			t.Errorf("refusal does not name the header condition: %s", msg)
		}
	})

	t.Run("$ in the location", func(t *testing.T) {
		h := startVendWith(t, weed, "", endpoint, vendableDir(t))
		etl := testIdP.Mint("etl-user", []string{"etl"}, nil)
		for _, loc := range []string{"s3://lake/wh/db/$/", "s3://lake/wh/db/${$}/", "s3://lake/wh/db/t*/"} {
			v := h.unity(t, etl, loc, "PATH_READ_WRITE")
			msg := unityRefusal(t, v, http.StatusBadRequest, "INVALID_ARGUMENT")
			c := string(loc[strings.IndexAny(loc, "$*")])
			if !strings.Contains(msg, "'"+c+"'") || strings.Contains(string(v.body), "session_token") {
				t.Errorf("%s: %s", loc, v.body)
			}
		}
		// The same principal's exact location still vends, and reaches
		// only itself.
		c, _ := unityCreds(t, h.unity(t, etl, "s3://lake/wh/db/t2/", "PATH_READ_WRITE"))
		if got := storeSays(t, get(h.s3As(c), "wh/db/$/seed.parquet")); got != "AccessDenied" {
			t.Errorf("wh/db/$/ with credentials for wh/db/t2/: %s, want AccessDenied", got)
		}
	})
}
