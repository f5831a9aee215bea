package e2e

import (
	"bytes"
	"fmt"
	"net/url"
	"strings"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"

	"github.com/countersign/countersign/testsupport"
)

// vendableCatalogPolicy is testsupport.CatalogTablePolicy written to
// vend: lib/guardrails' denial of headers on every request, which no
// session policy carries, would leave nothing to vend (TestVendingIsExact),
// so it keeps the guardrails' refusals of admin and unrecognized
// operations and of sign-only data only.
const vendableCatalogPolicy = `package countersign.authz

import data.countersign.lib.table_scope
import data.countersign.lib.vending

default allow := false

allow if {
	count(deny) == 0
	count(permit) > 0
}

deny contains "admin operation" if input.access == "admin"

deny contains "unrecognized operation" if input.operation == "Unknown"

deny contains msg if some msg in vending.deny

deny contains msg if some msg in table_scope.deny

permit contains "catalog" if {
	input.table.location != ""
	input.access in {"read", "write", "delete", "list"}
	"etl" in input.principal.groups
}

reason := concat("; ", sort(deny)) if count(deny) > 0
`

// TestCatalogFrontVends: with countersign fronting SeaweedFS's Iceberg
// catalog and vending on, a loadTable that asks for vended credentials
// (X-Iceberg-Access-Delegation) gets storage-credentials for the
// catalog's own table location, minted by SeaweedFS's STS under the
// policy: they read inside the location and get SeaweedFS's 403 outside;
// without the header, or for a caller the policy does not let vend, the
// answer has remote signing and no credentials; each mint is recorded.
func TestCatalogFrontVends(t *testing.T) {
	cat := servers.StartCatalog(t, testsupport.CatalogOptions{Issuer: catalogIssuer, STS: true})
	weed := cat.Weed
	ad := newAuditDir(t)
	cfg, env := cat.Config(t, testsupport.CountersignConfig{
		Audit: ad, NodeID: "e2e", Policy: vendableCatalogPolicy, PolicyData: testsupport.CatalogTableRoots, PolicyLib: true, PathOnly: true,
		Upstream: weed.IcebergURL,
		Extra:    vendingConfig(weed),
	})
	cs := startCountersign(t, cfg, env...)
	etl := cat.Token("etl-bot", testAccessKey, "etl")
	guest := cat.Token("guest", testAccessKey, "guests")

	if st, b := call(t, cs.url, etl, "POST", "/v1/lake/namespaces", `{"namespace":["db"]}`); st != 200 {
		t.Fatalf("create namespace: %d %s", st, b)
	}
	st, b := call(t, cs.url, etl, "POST", "/v1/lake/namespaces/db/tables", `{"name":"events","schema":`+eventsSchema+`}`)
	if st != 200 {
		t.Fatalf("create table: %d %s", st, b)
	}
	created := jsonMap(t, b)
	loc := created["metadata"].(map[string]any)["location"].(string)
	metadata, _ := url.Parse(created["metadata-location"].(string))

	st, b = call(t, cs.url, etl, "GET", "/v1/lake/namespaces/db/tables/events", "", "X-Iceberg-Access-Delegation", "vended-credentials")
	if st != 200 {
		t.Fatalf("load table: %d %s", st, b)
	}
	sc, _ := jsonMap(t, b)["storage-credentials"].([]any)
	if len(sc) != 1 {
		t.Fatalf("loadTable with vending allowed has no storage-credentials: %s", b)
	}
	cred := sc[0].(map[string]any)
	conf := cred["config"].(map[string]any)
	wantPrefix := strings.TrimSuffix(loc, "/") + "/"
	if cred["prefix"] != wantPrefix || conf["s3.session-token"] == "" || conf["s3.session-token-expires-at-ms"] == "" {
		t.Fatalf("storage credential for %s: %v", wantPrefix, cred)
	}
	h := &vendHarness{weed: weed}
	cl := h.s3As(aws.Credentials{AccessKeyID: conf["s3.access-key-id"].(string), SecretAccessKey: conf["s3.secret-access-key"].(string), SessionToken: conf["s3.session-token"].(string)})
	u, _ := url.Parse(loc)
	inside := strings.TrimPrefix(metadata.Path, "/")
	if u.Host != "lake" || !strings.HasPrefix(inside, strings.TrimPrefix(u.Path, "/")) {
		t.Fatalf("metadata %s is not under the table location %s", metadata, loc)
	}
	if got := storeSays(t, get(cl, inside)); got != "ok" {
		t.Errorf("the table's metadata with the vended credentials: %s", got)
	}
	if got := storeSays(t, get(cl, "elsewhere/f.parquet")); got != "AccessDenied" {
		t.Errorf("outside the table with the vended credentials: %s, want AccessDenied", got)
	}

	// Iceberg Java renews from the table's refresh endpoint, relative to
	// the catalog uri: countersign's credentials route, through the front.
	table := jsonMap(t, b)
	ep, _ := table["config"].(map[string]any)["client.refresh-credentials-endpoint"].(string)
	if ep != "v1/lake/namespaces/db/tables/events/credentials" {
		t.Fatalf("refresh endpoint %q in %s", ep, b)
	}
	renewed := (&vendHarness{cs: cs}).call(t, "GET", "/"+ep, etl, nil)
	rc, _ := icebergCreds(t, renewed, wantPrefix)
	if got := storeSays(t, get(h.s3As(rc), inside)); got != "ok" {
		t.Errorf("the table's metadata with the renewed credentials: %s", got)
	}

	// Without the header: remote signing, no credentials.
	_, b = call(t, cs.url, etl, "GET", "/v1/lake/namespaces/db/tables/events", "")
	if bytes.Contains(b, []byte("storage-credentials")) || bytes.Contains(b, []byte("s3.session-token")) {
		t.Fatalf("loadTable without vended-credentials has credentials: %s", b)
	}
	// A caller the policy does not let vend: remote signing, no credentials.
	st, b = call(t, cs.url, guest, "GET", "/v1/lake/namespaces/db/tables/events", "", "X-Iceberg-Access-Delegation", "vended-credentials")
	if st != 200 || bytes.Contains(b, []byte("storage-credentials")) || !bytes.Contains(b, []byte("s3.remote-signing-enabled")) {
		t.Fatalf("loadTable for a caller the policy refuses: %d %s", st, b)
	}

	vh := &vendHarness{audit: ad}
	var allowed, refused int
	for _, r := range vh.auditLines(t, "etl-bot") {
		if r["operation"] == "MintCredentials" && r["decision"] == "allow" && r["prefix"] == strings.TrimPrefix(u.Path, "/")+"/" {
			allowed++
		}
	}
	for _, r := range vh.auditLines(t, "guest") {
		if r["operation"] == "MintCredentials" && r["decision"] == "deny" {
			refused++
		}
	}
	if allowed != 2 || refused != 1 {
		t.Fatalf("mint records: %d allowed for etl-bot, %d refused for guest; want 2 (load, renewal) and 1", allowed, refused)
	}
}

// vendingConfig is the vending section that mints with SeaweedFS's STS
// for its S3.
func vendingConfig(weed *testsupport.S3Server) string {
	return fmt.Sprintf(`vending:
  enabled: true
  role_arn: %s
  sts_endpoint: http://127.0.0.1:%[2]d
  region: us-east-1
  endpoint: http://127.0.0.1:%[2]d
`, testsupport.SeaweedFSRoleARN, weed.Port)
}
