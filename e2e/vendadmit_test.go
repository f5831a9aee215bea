package e2e

import (
	"fmt"
	"strconv"
	"strings"
	"sync"
	"testing"

	"github.com/countersign/countersign/testsupport"
)

// TestCatalogFrontVendingAdmission: vending through loadTable is admitted
// as on the credentials route. With limits.rate_limit at one request per
// principal (burst 1), five concurrent loadTables of one principal that
// ask for vended credentials from SeaweedFS's STS mint once; the other
// four are refused 429 by the principal's limit, and recorded. Every
// record carries the caller's source address and request id.
func TestCatalogFrontVendingAdmission(t *testing.T) {
	cat := servers.StartCatalog(t, testsupport.CatalogOptions{Issuer: catalogIssuer, STS: true})
	weed := cat.Weed
	ad := newAuditDir(t)
	cfg, env := cat.Config(t, testsupport.CountersignConfig{
		Audit: ad, NodeID: "e2e", Policy: vendableCatalogPolicy, PolicyData: testsupport.CatalogTableRoots, PolicyLib: true, PathOnly: true,
		Upstream: weed.IcebergURL,
		Extra: vendingConfig(weed) + `limits:
  rate_limit:
    per_second: 0.001
    burst: 1
`,
	})
	cs := startCountersign(t, cfg, env...)
	etl := cat.Token("etl-bot", testAccessKey, "etl")
	if st, b := call(t, cs.url, etl, "POST", "/v1/lake/namespaces", `{"namespace":["db"]}`); st != 200 {
		t.Fatalf("create namespace: %d %s", st, b)
	}
	if st, b := call(t, cs.url, etl, "POST", "/v1/lake/namespaces/db/tables", `{"name":"events","schema":`+eventsSchema+`}`); st != 200 {
		t.Fatalf("create table: %d %s", st, b)
	}

	var wg sync.WaitGroup
	var mu sync.Mutex
	vended := 0
	for i := range 5 {
		wg.Go(func() {
			st, b := call(t, cs.url, etl, "GET", "/v1/lake/namespaces/db/tables/events", "",
				"X-Iceberg-Access-Delegation", "vended-credentials", "X-Request-Id", "e2e-load-"+strconv.Itoa(i))
			if st != 200 {
				t.Errorf("loadTable %d: %d %s", i, st, b)
				return
			}
			if sc, _ := jsonMap(t, b)["storage-credentials"].([]any); len(sc) > 0 {
				mu.Lock()
				vended++
				mu.Unlock()
			}
		})
	}
	wg.Wait()

	allowed, limited := 0, 0
	for _, r := range (&vendHarness{audit: ad}).auditLines(t, "etl-bot") {
		if r["operation"] != "MintCredentials" {
			continue
		}
		if r["source_ip"] != "127.0.0.1" || !strings.HasPrefix(fmt.Sprint(r["request_id"]), "e2e-load-") {
			t.Errorf("mint record (%v, status %v) with source_ip %q and request_id %q; want the caller's 127.0.0.1 and e2e-load-N", r["decision"], r["status"], r["source_ip"], r["request_id"])
		}
		switch {
		case r["decision"] == "allow":
			allowed++
		case r["status"] == float64(429):
			limited++
		}
	}
	if vended != 1 || allowed != 1 || limited != 4 {
		t.Fatalf("five concurrent loadTables under a rate limit of one: %d answers with credentials, %d mints recorded, %d refusals (429) recorded; want 1, 1, 4", vended, allowed, limited)
	}
}
