package e2e

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/credentials"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	"github.com/aws/smithy-go"

	"github.com/countersign/countersign/testsupport"
)

// vendHarness is countersign with vending on, in front of SeaweedFS with
// its STS, under the shipped example written to vend
// (deploy/policies/vending): group and table grants, and the sign-only
// table prod/db/cards, which etl may read and write by signature.
type vendHarness struct {
	weed  *testsupport.S3Server
	cs    *signerProc
	audit *testsupport.AuditDir
}

func newVendHarness(t *testing.T) *vendHarness {
	t.Helper()
	weed := startVendSeaweedFS(t)
	return startVendWith(t, weed, "", fmt.Sprintf("  region: us-east-1\n  endpoint: http://127.0.0.1:%d\n", weed.Port), vendableDir(t))
}

// vendableDir is the shipped example written to vend: the other examples
// compose lib/guardrails' header denial, a condition no session policy
// carries, so under them nothing is vended (TestVendingIsExact).
func vendableDir(t *testing.T) string {
	t.Helper()
	dir, err := filepath.Abs("../deploy/policies/vending")
	if err != nil {
		t.Fatal(err)
	}
	return dir
}

// startVendSeaweedFS runs SeaweedFS with its STS and the bucket lake.
func startVendSeaweedFS(t *testing.T) *testsupport.S3Server {
	t.Helper()
	weed := servers.StartSeaweedFSWith(t, testsupport.SeaweedFSOptions{STS: true})
	weed.CreateBucket(t, "lake")
	return weed
}

// vended is one answer of a credentials route.
type vended struct {
	status int
	body   []byte
	header http.Header
}

func (h *vendHarness) call(t *testing.T, method, path, token string, body []byte) vended {
	t.Helper()
	req, err := http.NewRequest(method, h.cs.url+path, bytes.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	data, _ := io.ReadAll(resp.Body)
	return vended{resp.StatusCode, data, resp.Header}
}

// iceberg asks the Iceberg REST credentials route for table prod.db.<table>.
func (h *vendHarness) iceberg(t *testing.T, token, table string) vended {
	t.Helper()
	return h.call(t, "GET", "/v1/prod/namespaces/db/tables/"+table+"/credentials", token, nil)
}

// unity asks Unity Catalog's temporary path credentials route.
func (h *vendHarness) unity(t *testing.T, token, url, operation string) vended {
	t.Helper()
	body, _ := json.Marshal(map[string]string{"url": url, "operation": operation})
	return h.call(t, "POST", "/api/2.1/unity-catalog/temporary-path-credentials", token, body)
}

// icebergCreds reads a LoadCredentialsResponse, checking its shape.
func icebergCreds(t *testing.T, v vended, wantPrefix string) (aws.Credentials, time.Time) {
	t.Helper()
	if v.status != http.StatusOK {
		t.Fatalf("credentials route: %d %s", v.status, v.body)
	}
	if cc := v.header.Get("Cache-Control"); cc != "no-store" {
		t.Errorf("Cache-Control %q on vended credentials, want no-store", cc)
	}
	var resp struct {
		StorageCredentials []struct {
			Prefix string            `json:"prefix"`
			Config map[string]string `json:"config"`
		} `json:"storage-credentials"`
	}
	if err := json.Unmarshal(v.body, &resp); err != nil || len(resp.StorageCredentials) != 1 {
		t.Fatalf("not a LoadCredentialsResponse with one credential: %v %s", err, v.body)
	}
	sc := resp.StorageCredentials[0]
	if sc.Prefix != wantPrefix {
		t.Fatalf("storage credential prefix %q, want %q", sc.Prefix, wantPrefix)
	}
	ms, err := strconv.ParseInt(sc.Config["s3.session-token-expires-at-ms"], 10, 64)
	if err != nil {
		t.Fatalf("s3.session-token-expires-at-ms: %v (%s)", err, v.body)
	}
	c := aws.Credentials{AccessKeyID: sc.Config["s3.access-key-id"], SecretAccessKey: sc.Config["s3.secret-access-key"], SessionToken: sc.Config["s3.session-token"]}
	if c.AccessKeyID == "" || c.SecretAccessKey == "" || c.SessionToken == "" || sc.Config["client.region"] != "us-east-1" || sc.Config["s3.endpoint"] == "" {
		t.Fatalf("incomplete config: %s", v.body)
	}
	return c, time.UnixMilli(ms)
}

// unityCreds reads a GenerateTemporaryPathCredentialResponse.
func unityCreds(t *testing.T, v vended) (aws.Credentials, time.Time) {
	t.Helper()
	if v.status != http.StatusOK {
		t.Fatalf("temporary-path-credentials: %d %s", v.status, v.body)
	}
	var resp struct {
		AWS struct {
			AccessKeyID     string `json:"access_key_id"`
			SecretAccessKey string `json:"secret_access_key"`
			SessionToken    string `json:"session_token"`
		} `json:"aws_temp_credentials"`
		Expiration int64 `json:"expiration_time"`
	}
	if err := json.Unmarshal(v.body, &resp); err != nil || resp.AWS.SessionToken == "" || resp.Expiration == 0 {
		t.Fatalf("not a GenerateTemporaryPathCredentialResponse: %v %s", err, v.body)
	}
	return aws.Credentials{AccessKeyID: resp.AWS.AccessKeyID, SecretAccessKey: resp.AWS.SecretAccessKey, SessionToken: resp.AWS.SessionToken}, time.UnixMilli(resp.Expiration)
}

// icebergRefusal checks Iceberg's error model and returns its message.
func icebergRefusal(t *testing.T, v vended, status int, typ string) string {
	t.Helper()
	var e icebergError
	if err := json.Unmarshal(v.body, &e); v.status != status || err != nil || e.Error.Code != status || e.Error.Type != typ {
		t.Fatalf("want %d %s in Iceberg's error model, got %d %s", status, typ, v.status, v.body)
	}
	return e.Error.Message
}

// unityRefusal checks Unity Catalog's error model and returns its message.
func unityRefusal(t *testing.T, v vended, status int, code string) string {
	t.Helper()
	var e struct {
		Code    string `json:"error_code"`
		Message string `json:"message"`
	}
	if err := json.Unmarshal(v.body, &e); v.status != status || err != nil || e.Code != code || e.Message == "" {
		t.Fatalf("want %d %s in Unity Catalog's error model, got %d %s", status, code, v.status, v.body)
	}
	return e.Message
}

// s3As is an S3 client with vended credentials, straight to SeaweedFS.
func (h *vendHarness) s3As(c aws.Credentials) *s3.Client {
	return s3.New(s3.Options{
		Region: testRegion, BaseEndpoint: aws.String(fmt.Sprintf("http://127.0.0.1:%d", h.weed.Port)), UsePathStyle: true,
		Credentials: credentials.NewStaticCredentialsProvider(c.AccessKeyID, c.SecretAccessKey, c.SessionToken),
	})
}

// storeSays performs op and returns "ok" or the store's error code.
func storeSays(t *testing.T, op func(ctx context.Context) error) string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	err := op(ctx)
	if err == nil {
		return "ok"
	}
	var ae smithy.APIError
	if errors.As(err, &ae) {
		return ae.ErrorCode()
	}
	t.Fatalf("not an S3 answer: %v", err)
	return ""
}

func put(c *s3.Client, key string) func(context.Context) error {
	return func(ctx context.Context) error {
		_, err := c.PutObject(ctx, &s3.PutObjectInput{Bucket: aws.String("lake"), Key: aws.String(key), Body: strings.NewReader("PAR1 data PAR1")})
		return err
	}
}

func get(c *s3.Client, key string) func(context.Context) error {
	return func(ctx context.Context) error {
		out, err := c.GetObject(ctx, &s3.GetObjectInput{Bucket: aws.String("lake"), Key: aws.String(key)})
		if err == nil {
			out.Body.Close()
		}
		return err
	}
}

// TestVendedCredentialsAgainstSeaweedFS: credentials minted through
// countersign read and write inside their prefix and get SeaweedFS's own
// 403 outside it, for the Iceberg REST and the Unity Catalog routes; a
// read mint cannot write; the lifetime is bounded.
func TestVendedCredentialsAgainstSeaweedFS(t *testing.T) {
	h := newVendHarness(t)
	admin := h.weed.AdminClient()
	for _, k := range []string{"wh/db/t/data/seed.parquet", "wh/db/t2/seed.parquet", "wh/sales/seed.parquet", "wh/other/seed.parquet"} {
		if got := storeSays(t, put(admin, k)); got != "ok" {
			t.Fatalf("seeding %s: %s", k, got)
		}
	}
	etl := testIdP.Mint("etl-user", []string{"etl"}, nil)
	analyst := testIdP.Mint("ann", []string{"analysts"}, nil)

	t.Run("iceberg read-write", func(t *testing.T) {
		before := time.Now()
		c, expires := icebergCreds(t, h.iceberg(t, etl, "t"), "s3://lake/wh/db/t/")
		if expires.Before(before.Add(14*time.Minute)) || expires.After(time.Now().Add(15*time.Minute+5*time.Second)) {
			t.Errorf("expires at %v: want the configured 15 minutes", expires)
		}
		cl := h.s3As(c)
		for _, want := range []struct {
			what, got, want string
		}{
			{"put inside", storeSays(t, put(cl, "wh/db/t/data/new.parquet")), "ok"},
			{"get inside", storeSays(t, get(cl, "wh/db/t/data/seed.parquet")), "ok"},
			{"get what it wrote", storeSays(t, get(cl, "wh/db/t/data/new.parquet")), "ok"},
			// etl may write all of wh/db/ by policy, but the table's
			// credentials reach only the table.
			{"put in a sibling table", storeSays(t, put(cl, "wh/db/t2/x.parquet")), "AccessDenied"},
			{"get in a sibling table", storeSays(t, get(cl, "wh/db/t2/seed.parquet")), "AccessDenied"},
			{"get outside", storeSays(t, get(cl, "wh/other/seed.parquet")), "AccessDenied"},
			{"put outside", storeSays(t, put(cl, "wh/other/x.parquet")), "AccessDenied"},
		} {
			if want.got != want.want {
				t.Errorf("%s: SeaweedFS says %s, want %s", want.what, want.got, want.want)
			}
		}
	})

	t.Run("iceberg read only", func(t *testing.T) {
		c, _ := icebergCreds(t, h.iceberg(t, analyst, "t"), "s3://lake/wh/db/t/")
		cl := h.s3As(c)
		if got := storeSays(t, get(cl, "wh/db/t/data/seed.parquet")); got != "ok" {
			t.Errorf("analyst get inside: %s", got)
		}
		if got := storeSays(t, put(cl, "wh/db/t/data/analyst.parquet")); got != "AccessDenied" {
			t.Errorf("analyst put inside (read-only credentials): %s, want AccessDenied", got)
		}
		if got := storeSays(t, get(cl, "wh/sales/seed.parquet")); got != "AccessDenied" {
			t.Errorf("analyst get outside the table (granted by policy, not vended): %s, want AccessDenied", got)
		}
	})

	t.Run("unity path read-write", func(t *testing.T) {
		c, expires := unityCreds(t, h.unity(t, etl, "s3://lake/wh/db/t2", "PATH_READ_WRITE"))
		if time.Until(expires) > 15*time.Minute+5*time.Second || time.Until(expires) < 14*time.Minute {
			t.Errorf("expiration_time %v", expires)
		}
		cl := h.s3As(c)
		if got := storeSays(t, put(cl, "wh/db/t2/y.parquet")); got != "ok" {
			t.Errorf("put inside: %s", got)
		}
		if got := storeSays(t, get(cl, "wh/db/t2/seed.parquet")); got != "ok" {
			t.Errorf("get inside: %s", got)
		}
		if got := storeSays(t, put(cl, "wh/db/t2x/y.parquet")); got != "AccessDenied" {
			t.Errorf("put beside the prefix (wh/db/t2x/): %s, want AccessDenied", got)
		}
		if got := storeSays(t, get(cl, "wh/db/t/data/seed.parquet")); got != "AccessDenied" {
			t.Errorf("get outside: %s, want AccessDenied", got)
		}
	})

	t.Run("unity path read", func(t *testing.T) {
		c, _ := unityCreds(t, h.unity(t, analyst, "s3://lake/wh/sales/", "PATH_READ"))
		cl := h.s3As(c)
		if got := storeSays(t, get(cl, "wh/sales/seed.parquet")); got != "ok" {
			t.Errorf("get inside: %s", got)
		}
		if got := storeSays(t, put(cl, "wh/sales/x.parquet")); got != "AccessDenied" {
			t.Errorf("put with read credentials: %s, want AccessDenied", got)
		}
	})
}

// auditLines runs `countersign audit query` for a principal and decodes
// its records.
func (h *vendHarness) auditLines(t *testing.T, principal string) []map[string]any {
	t.Helper()
	out, err := exec.Command(servers.CountersignBin, "audit", "query", "-dir", h.audit.Dir, "-principal", principal).Output()
	if err != nil {
		t.Fatalf("audit query: %v", err)
	}
	var recs []map[string]any
	for _, line := range strings.Split(strings.TrimSpace(string(out)), "\n") {
		if line == "" {
			continue
		}
		var r map[string]any
		if err := json.Unmarshal([]byte(line), &r); err != nil {
			t.Fatalf("%v: %s", err, line)
		}
		recs = append(recs, r)
	}
	return recs
}

// TestVendingRefusedAndRecorded: a mint the policy does not grant is
// refused in each API's error model and recorded; a sign-only table is not
// vended while signing for it still works; `audit query` shows the mints
// beside the signed accesses, the allowed one with the access key id the
// store saw.
func TestVendingRefusedAndRecorded(t *testing.T) {
	h := newVendHarness(t)
	if got := storeSays(t, put(h.weed.AdminClient(), "wh/cards/data/c.parquet")); got != "ok" {
		t.Fatal(got)
	}
	etl := testIdP.Mint("etl-user", []string{"etl"}, nil)
	analyst := testIdP.Mint("ann", []string{"analysts"}, nil)

	// Refused by policy: analysts may read wh/db/t/ only, not all of wh/db/.
	msg := unityRefusal(t, h.unity(t, analyst, "s3://lake/wh/db/", "PATH_READ"), http.StatusForbidden, "PERMISSION_DENIED")
	if !strings.Contains(msg, "s3://lake/wh/db/") {
		t.Errorf("refusal does not name the location: %s", msg)
	}
	// A table analysts have no grant on at all.
	icebergRefusal(t, h.iceberg(t, analyst, "cards"), http.StatusForbidden, "ForbiddenException")
	// Unknown table, malformed request, no token.
	icebergRefusal(t, h.iceberg(t, etl, "nope"), http.StatusNotFound, "NoSuchTableException")
	unityRefusal(t, h.unity(t, etl, "s3://lake/wh/db/", "PATH_DELETE"), http.StatusBadRequest, "INVALID_ARGUMENT")
	unityRefusal(t, h.unity(t, etl, "gs://lake/wh/db/", "PATH_READ"), http.StatusBadRequest, "INVALID_ARGUMENT")
	icebergRefusal(t, h.iceberg(t, "", "t"), http.StatusUnauthorized, "NotAuthorizedException")
	unityRefusal(t, h.call(t, "GET", "/api/2.1/unity-catalog/temporary-path-credentials", etl, nil), http.StatusMethodNotAllowed, "NOT_IMPLEMENTED")

	// Sign-only: etl may read and write the table, by signature only.
	msg = icebergRefusal(t, h.iceberg(t, etl, "cards"), http.StatusForbidden, "ForbiddenException")
	if !strings.Contains(msg, "sign-only") {
		t.Errorf("sign-only refusal does not say so: %s", msg)
	}
	unityRefusal(t, h.unity(t, etl, "s3://lake/wh/", "PATH_READ"), http.StatusForbidden, "PERMISSION_DENIED")
	signer := h.cs.as(etl)
	status, res, _, _ := signer.sign(t, "/v1/prod/namespaces/db/tables/cards/sign", signRequest{Region: testRegion,
		URI: fmt.Sprintf("http://lake.localhost:%d/wh/cards/data/c.parquet", h.weed.Port), Method: "GET", Headers: javaHeaders()})
	if status != http.StatusOK {
		t.Fatalf("signing for the sign-only table: %d", status)
	}
	if code, body := (&s3Server{h.weed}).send(t, "GET", res.URI, res.Headers, nil); code != http.StatusOK || string(body) != "PAR1 data PAR1" {
		t.Fatalf("the signed GET of the sign-only table: %d %s", code, body)
	}

	// One allowed mint, to find in the audit log by its access key id.
	c, _ := icebergCreds(t, h.iceberg(t, etl, "t"), "s3://lake/wh/db/t/")

	type seen struct{ op, decision, access, prefix, reason, key string }
	summarize := func(r map[string]any) seen {
		s := seen{op: fmt.Sprint(r["operation"]), decision: fmt.Sprint(r["decision"]), access: fmt.Sprint(r["access"]), reason: fmt.Sprint(r["reason"])}
		if p, ok := r["prefix"].(string); ok {
			s.prefix = p
		}
		if m, ok := r["mint"].(map[string]any); ok {
			s.key = fmt.Sprint(m["access_key_id"])
		}
		return s
	}
	var etlSeen []seen
	for _, r := range h.auditLines(t, "etl-user") {
		etlSeen = append(etlSeen, summarize(r))
	}
	has := func(list []seen, f func(seen) bool) bool {
		for _, s := range list {
			if f(s) {
				return true
			}
		}
		return false
	}
	if !has(etlSeen, func(s seen) bool {
		return s.op == "MintCredentials" && s.decision == "allow" && s.prefix == "wh/db/t/" && s.access == "read-write" && s.key == c.AccessKeyID
	}) {
		t.Errorf("no allowed mint with access key %s in etl-user's records: %+v", c.AccessKeyID, etlSeen)
	}
	if !has(etlSeen, func(s seen) bool {
		return s.op == "MintCredentials" && s.decision == "deny" && s.prefix == "wh/cards/" && strings.Contains(s.reason, "sign-only") && s.key == ""
	}) {
		t.Errorf("no refused mint of the sign-only table in etl-user's records: %+v", etlSeen)
	}
	if !has(etlSeen, func(s seen) bool { return s.op == "GetObject" && s.decision == "allow" }) {
		t.Errorf("the signed GetObject is not beside the mints: %+v", etlSeen)
	}
	var annSeen []seen
	for _, r := range h.auditLines(t, "ann") {
		annSeen = append(annSeen, summarize(r))
	}
	if !has(annSeen, func(s seen) bool {
		return s.op == "MintCredentials" && s.decision == "deny" && s.prefix == "wh/db/" && s.access == "read"
	}) {
		t.Errorf("the refused mint of wh/db/ is not recorded: %+v", annSeen)
	}
	// The unauthenticated mint is recorded too (no principal to query by).
	out, err := exec.Command(servers.CountersignBin, "audit", "query", "-dir", h.audit.Dir, "-decision", "unauthenticated").Output()
	if err != nil || !strings.Contains(string(out), `"operation":"MintCredentials"`) {
		t.Errorf("unauthenticated mint not recorded: %v\n%s", err, out)
	}
}

// wholePrefixPolicy allows group open reads (and lists) under wh/open/,
// and group rx reads under wh/rx/ of keys without "secret" in them: a mint input (key "",
// prefix wh/rx/) is allowed by it, but not every key under wh/rx/ is, and
// a regex is not a set of prefixes, so the default rule refuses that mint.
// It refuses sign-only data (lib/vending.rego) but not the guardrails'
// headers, which no session policy carries.
const wholePrefixPolicy = `package countersign.authz

import data.countersign.lib.vending

default allow := false

allow if {
	count(vending.deny) == 0
	permit
}

path := input.resource.prefix if is_string(input.resource.prefix)

path := object.get(input.resource, "key", "") if not is_string(input.resource.prefix)

permit if {
	"open" in input.principal.groups
	input.access in {"read", "list"}
	startswith(path, "wh/open/")
}

permit if {
	"rx" in input.principal.groups
	input.access == "read"
	startswith(path, "wh/rx/")
	not regex.match("secret", object.get(input.resource, "key", ""))
}
`

// startVendWith runs countersign with vending against weed (vendConfig).
func startVendWith(t *testing.T, weed *testsupport.S3Server, stsEndpoint, extra string, policyDirs ...string) *vendHarness {
	t.Helper()
	ad := newAuditDir(t)
	return &vendHarness{weed: weed, cs: startCountersign(t, vendConfig(t, weed, ad, stsEndpoint, extra, policyDirs...), secretEnv()...), audit: ad}
}

// vendConfig is a configuration that vends from the STS at stsEndpoint
// ("" for weed's own) under deploy/policies/lib and policyDirs; extra is
// appended after vending.sts_endpoint (more vending settings, or sections
// of their own).
func vendConfig(t *testing.T, weed *testsupport.S3Server, ad *testsupport.AuditDir, stsEndpoint, extra string, policyDirs ...string) string {
	t.Helper()
	lib, err := filepath.Abs("../deploy/policies/lib")
	if err != nil {
		t.Fatal(err)
	}
	if stsEndpoint == "" {
		stsEndpoint = fmt.Sprintf("http://127.0.0.1:%d", weed.Port)
	}
	paths := make([]string, 0, 1+len(policyDirs))
	for _, d := range append([]string{lib}, policyDirs...) {
		paths = append(paths, strconv.Quote(d))
	}
	return fmt.Sprintf(`listen: 127.0.0.1:0
audit:
  dir: %[6]q
  node_id: e2e
  checkpoint_key_file: %[7]q
  hmac_key_file: %[8]q
  checkpoint_interval: 100ms
auth:
  issuer: %[3]s
  audience: [%[4]s]
  jwks_file: %[5]q
endpoints:
  - name: seaweedfs
    scheme: http
    host: localhost
    port: %[1]d
    virtual_host_domain: localhost
    regions: [us-east-1]
credentials:
  source: static
  access_key_id: %[2]s
policy:
  paths: [%[9]s]
vending:
  enabled: true
  role_arn: %[10]s
  sts_endpoint: %[11]s
%[12]s`, weed.Port, testAccessKey, testIssuer, testAudience, testIdP.WriteJWKS(t), ad.Dir, ad.SignerKeyFile, ad.HMACKeyFile,
		strings.Join(paths, ", "), testsupport.SeaweedFSRoleARN, stsEndpoint, extra)
}

// wholePrefixDir is a policy directory holding wholePrefixPolicy.
func wholePrefixDir(t *testing.T) string {
	t.Helper()
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "authz.rego"), []byte(wholePrefixPolicy), 0o644); err != nil {
		t.Fatal(err)
	}
	return dir
}

// TestVendingNeedsTheWholePrefix: only prefixes the policy allows wholly
// are vended: a prefix above the grant is refused by the policy, and one
// the mint input passes but whose keys are decided by a regex (not a set
// of prefixes) is refused by the default rule; STS unavailable is 503 with
// nothing minted, and recorded.
func TestVendingNeedsTheWholePrefix(t *testing.T) {
	weed := startVendSeaweedFS(t)
	dir := wholePrefixDir(t)
	h := startVendWith(t, weed, "", "", dir)
	token := testIdP.Mint("pat", []string{"open"}, nil)

	c, _ := unityCreds(t, h.unity(t, token, "s3://lake/wh/open/", "PATH_READ"))
	if got := storeSays(t, get(h.s3As(c), "wh/open/none.parquet")); got != "NoSuchKey" {
		t.Errorf("get inside the granted prefix: %s, want NoSuchKey (allowed, absent)", got)
	}
	if got := storeSays(t, get(h.s3As(c), "wh/openx/none.parquet")); got != "AccessDenied" {
		t.Errorf("get beside the granted prefix: %s, want AccessDenied", got)
	}
	msg := unityRefusal(t, h.unity(t, token, "s3://lake/wh/", "PATH_READ"), http.StatusForbidden, "PERMISSION_DENIED")
	if !strings.Contains(msg, "s3://lake/wh/") {
		t.Errorf("refusal of a prefix above the grant: %s", msg)
	}
	// The mint input passes the regex rule, but its scope is not prefixes.
	rx := testIdP.Mint("rae", []string{"rx"}, nil)
	msg = unityRefusal(t, h.unity(t, rx, "s3://lake/wh/rx/", "PATH_READ"), http.StatusForbidden, "PERMISSION_DENIED")
	if !strings.Contains(msg, "object by object") {
		t.Errorf("refusal of a prefix whose keys are decided by a regex: %s", msg)
	}
	unityRefusal(t, h.unity(t, token, "s3://lake/wh/open/", "PATH_READ_WRITE"), http.StatusForbidden, "PERMISSION_DENIED")

	// STS down: a countersign whose STS endpoint refuses connections.
	down := startVendWith(t, weed, fmt.Sprintf("http://127.0.0.1:%d", testsupport.FreePort(t)), `limits:
  refusal_limit:
    per_second: 0.001
    burst: 3
`, dir)
	v := down.unity(t, token, "s3://lake/wh/open/", "PATH_READ")
	unityRefusal(t, v, http.StatusServiceUnavailable, "UNAVAILABLE")
	if v.header.Get("Retry-After") == "" {
		t.Error("503 without Retry-After")
	}
	recs := down.auditLines(t, "pat")
	if len(recs) != 1 || recs[0]["decision"] != "error" || recs[0]["status"] != float64(503) {
		t.Fatalf("the failed mint's record: %v", recs)
	}
	if m, _ := recs[0]["mint"].(map[string]any); m == nil || m["access_key_id"] != "" {
		t.Fatalf("the failed mint's record names credentials: %v", recs[0])
	}

	// Unauthenticated mints share the sign routes' per-source refusal
	// limit: within the burst each is recorded, past it 429, not recorded.
	statuses := map[int]int{}
	for range 8 {
		statuses[down.unity(t, "", "s3://lake/wh/open/", "PATH_READ").status]++
	}
	if statuses[401] != 3 || statuses[429] != 5 {
		t.Fatalf("unauthenticated mints: %v, want 3 x 401 then 5 x 429", statuses)
	}
	out, err := exec.Command(servers.CountersignBin, "audit", "query", "-dir", down.audit.Dir, "-decision", "unauthenticated").Output()
	if n := strings.Count(string(out), `"operation":"MintCredentials"`); err != nil || n != 3 {
		t.Fatalf("%d unauthenticated mint records, want 3: %v", n, err)
	}
}

// TestVendingAuditFullFailsClosed: when the audit log cannot record (its
// file system full, for real), a mint is answered 503 and no credentials
// leave, though the policy allows it and the STS works.
func TestVendingAuditFullFailsClosed(t *testing.T) {
	mnt := mountTmpfs(t)
	weed := startVendSeaweedFS(t)
	cfg := tmpfsAuditConfig(t, vendConfig(t, weed, newAuditDir(t), "", "", wholePrefixDir(t)), mnt)
	h := &vendHarness{weed: weed, cs: startCountersign(t, cfg, secretEnv()...)}
	token := testIdP.Mint("pat", []string{"open"}, nil)
	unityCreds(t, h.unity(t, token, "s3://lake/wh/open/", "PATH_READ"))

	fillDisk(mnt)
	deadline := time.Now().Add(15 * time.Second)
	for {
		v := h.unity(t, token, "s3://lake/wh/open/", "PATH_READ")
		if v.status == http.StatusServiceUnavailable {
			if msg := unityRefusal(t, v, http.StatusServiceUnavailable, "UNAVAILABLE"); !strings.Contains(msg, "audit log unavailable") {
				t.Fatalf("503 for another reason: %s", msg)
			}
			break
		}
		unityCreds(t, v)
		if time.Now().After(deadline) {
			t.Fatalf("the audit log never noticed the full disk\n%s", h.cs.log.String())
		}
		time.Sleep(20 * time.Millisecond)
	}
	for range 5 {
		v := h.unity(t, token, "s3://lake/wh/open/", "PATH_READ")
		if v.status != http.StatusServiceUnavailable || bytes.Contains(v.body, []byte("session_token")) {
			t.Fatalf("vended while the audit log is down: %d %s", v.status, v.body)
		}
	}
}
