package e2e

import (
	"bytes"
	"fmt"
	"net/url"
	"strings"
	"testing"

	"github.com/countersign/countersign/testsupport"
)

// TestCatalogLocationOnlyNarrowsSeaweedFS: against SeaweedFS's real
// Iceberg catalog, STS and S3, with countersign fronting the catalog and
// the operator giving only the warehouse's root:
//
//   - set-location through the front, and createTable at another table's
//     location, are refused before the catalog sees them;
//   - after set-location at the catalog itself (to the bucket root, then
//     to another table's location), the signatures of t's route reach no
//     other table's objects: refused with 403 and recorded;
//   - a table marked sign_only with no location in the data is vended
//     neither through loadTable nor through the credentials route, nor
//     is another table located only by the catalog (it could sit at the
//     sign-only table's location).
func TestCatalogLocationOnlyNarrowsSeaweedFS(t *testing.T) {
	cat := servers.StartCatalog(t, testsupport.CatalogOptions{Issuer: catalogIssuer, STS: true})
	weed := cat.Weed
	ad := newAuditDir(t)
	cfg, env := cat.Config(t, testsupport.CountersignConfig{
		Audit: ad, NodeID: "e2e", Policy: vendableCatalogPolicy, PolicyLib: true, PathOnly: true,
		PolicyData: `{"countersign": {"table_roots": {"lake": "s3://lake/"}, "tables": {"lake/db/cards": {"sign_only": true}}}}`,
		Upstream:   weed.IcebergURL,
		Extra:      vendingConfig(weed),
	})
	cs := startCountersign(t, cfg, env...)
	etl := cat.Token("etl-bot", testAccessKey, "etl")
	cs.token = etl
	front, direct := cs.url, weed.IcebergURL

	if st, b := call(t, front, etl, "POST", "/v1/lake/namespaces", `{"namespace":["db"]}`); st != 200 {
		t.Fatalf("create namespace: %d %s", st, b)
	}
	locs := map[string]string{}
	metadata := map[string]string{}
	for _, name := range []string{"t", "other", "cards"} {
		st, b := call(t, front, etl, "POST", "/v1/lake/namespaces/db/tables", `{"name":"`+name+`","schema":`+eventsSchema+`}`)
		if st != 200 {
			t.Fatalf("create table %s: %d %s", name, st, b)
		}
		m := jsonMap(t, b)
		locs[name] = m["metadata"].(map[string]any)["location"].(string)
		mu, _ := url.Parse(m["metadata-location"].(string))
		metadata[name] = fmt.Sprintf("http://127.0.0.1:%d/%s%s", weed.Port, mu.Host, mu.Path)
	}
	t.Logf("locations %v", locs)
	route := "/v1/lake/namespaces/db/tables/t/sign"
	signs := func(caller *signerProc, method, uri string) (int, string) {
		t.Helper()
		st, _, e, _ := caller.sign(t, route, signRequest{Region: testRegion, Method: method, URI: uri, Headers: map[string][]string{}})
		msg := ""
		if e != nil {
			msg = e.Error.Message
		}
		return st, msg
	}
	if st, msg := signs(cs, "GET", metadata["t"]); st != 200 {
		t.Fatalf("t's own metadata on t's route: %d %s", st, msg)
	}
	if st, _ := signs(cs, "GET", metadata["other"]); st != 403 {
		t.Fatalf("other's metadata on t's route before any move: %d", st)
	}

	// Sign-only table, no location in the data: not vended on either route.
	st, b := call(t, front, etl, "GET", "/v1/lake/namespaces/db/tables/cards", "", "X-Iceberg-Access-Delegation", "vended-credentials")
	if st != 200 || bytes.Contains(b, []byte("storage-credentials")) || bytes.Contains(b, []byte("s3.session-token")) || !bytes.Contains(b, []byte("s3.remote-signing-enabled")) {
		t.Errorf("loadTable of the sign-only table asking for vended credentials: %d %.300s", st, b)
	}
	vh := &vendHarness{cs: cs, audit: ad}
	if v := vh.call(t, "GET", "/v1/lake/namespaces/db/tables/cards/credentials", etl, nil); v.status != 403 || !bytes.Contains(v.body, []byte("table lake/db/cards is sign-only")) {
		t.Errorf("credentials route for the sign-only table: %d %.300s", v.status, v.body)
	}
	// Another table located only by the catalog might be at the sign-only
	// table's location, which the data does not hold: it is not vended
	// either, naming the sign-only table (a table with its own location in
	// the data is: policy/TestSignOnlyTableVendedByNoLocation), and the
	// sign-only one is signed for.
	if st, b := call(t, front, etl, "GET", "/v1/lake/namespaces/db/tables/other", "", "X-Iceberg-Access-Delegation", "vended-credentials"); st != 200 || bytes.Contains(b, []byte("storage-credentials")) || !bytes.Contains(b, []byte("s3.remote-signing-enabled")) {
		t.Errorf("loadTable of a catalog-located table beside a sign-only table without location: %d %.300s", st, b)
	}
	if v := vh.call(t, "GET", "/v1/lake/namespaces/db/tables/other/credentials", etl, nil); v.status != 403 || !bytes.Contains(v.body, []byte("located only by the catalog")) {
		t.Errorf("credentials route for a catalog-located table beside a sign-only table without location: %d %.300s", v.status, v.body)
	}
	if st, _, e, _ := cs.sign(t, "/v1/lake/namespaces/db/tables/cards/sign", signRequest{Region: testRegion, Method: "GET", URI: metadata["cards"], Headers: map[string][]string{}}); st != 200 {
		t.Fatalf("signing for the sign-only table: %d %+v", st, e)
	}

	// Through the front: set-location refused, the catalog unchanged.
	setLocation := func(loc string) string {
		return `{"requirements":[],"updates":[{"action":"set-location","location":"` + loc + `"}]}`
	}
	st, b = call(t, front, etl, "POST", "/v1/lake/namespaces/db/tables/t", setLocation("s3://lake"))
	if st != 403 || !bytes.Contains(b, []byte("set-location")) {
		t.Errorf("set-location through the front: %d %s", st, b)
	}
	_, b = call(t, direct, etl, "GET", "/v1/lake/namespaces/db/tables/t", "")
	if got := jsonMap(t, b)["metadata"].(map[string]any)["location"]; got != locs["t"] {
		t.Errorf("the catalog moved t to %v though the front refused", got)
	}
	// createTable at another table's location: refused, nothing created.
	st, b = call(t, front, etl, "POST", "/v1/lake/namespaces/db/tables", `{"name":"evil","location":"`+locs["other"]+`","schema":`+eventsSchema+`}`)
	if st != 403 || !bytes.Contains(b, []byte("another table countersign knows")) {
		t.Errorf("createTable at other's location: %d %.300s", st, b)
	}
	if st, _ := call(t, direct, etl, "GET", "/v1/lake/namespaces/db/tables/evil", ""); st != 404 {
		t.Errorf("the catalog has table evil: %d", st)
	}
	// Both refusals are on the audit trail, under the caller's principal,
	// with the route's operation and table.
	refused := map[string]bool{}
	for _, r := range vh.auditLines(t, "etl-bot") {
		tbl, _ := r["table"].(map[string]any)
		if r["decision"] != "deny" || r["status"] != float64(403) || tbl == nil || tbl["prefix"] != "lake" || fmt.Sprint(tbl["namespace"]) != "[db]" {
			continue
		}
		reason := fmt.Sprint(r["reason"])
		switch {
		case r["operation"] == "updateTable" && tbl["name"] == "t" && strings.Contains(reason, "refuses the set-location update"):
			refused["set-location"] = true
		case r["operation"] == "createTable" && tbl["name"] == "evil" && strings.Contains(reason, "another table countersign knows"):
			refused["createTable"] = true
		}
	}
	if !refused["set-location"] || !refused["createTable"] {
		t.Errorf("records of the front's refusals found: %v; want set-location and createTable", refused)
	}

	// At the catalog itself, which countersign cannot stop: t moved to the
	// bucket root, then to other's location. A caller whose location of t
	// is fetched now (a new token) and the one that learned it before
	// both get nothing of other's signed.
	for i, moved := range []string{"s3://lake", locs["other"]} {
		if st, b := call(t, direct, etl, "POST", "/v1/lake/namespaces/db/tables/t", setLocation(moved)); st != 200 {
			t.Fatalf("set-location %s at the catalog: %d %s", moved, st, b)
		}
		_, b := call(t, direct, etl, "GET", "/v1/lake/namespaces/db/tables/t", "")
		if got := jsonMap(t, b)["metadata"].(map[string]any)["location"]; got != moved {
			t.Fatalf("SeaweedFS did not move t to %s: %v", moved, got)
		}
		fresh := cs.as(cat.Token(fmt.Sprintf("etl-fresh-%d", i), testAccessKey, "etl"))
		for _, caller := range []*signerProc{fresh, cs} {
			for _, method := range []string{"GET", "DELETE"} {
				if st, msg := signs(caller, method, metadata["other"]); st != 403 {
					t.Errorf("after set-location %s at the catalog, %s of other's metadata on t's route: %d %s", moved, method, st, msg)
				}
			}
		}
		st, msg := signs(fresh, "GET", metadata["other"])
		want := "not strictly under the operator's root s3://lake/"
		if i == 1 {
			want = "another table countersign knows"
		}
		if st != 403 || !strings.Contains(msg, want) {
			t.Errorf("refusal after set-location %s: %d %q, want one naming %q", moved, st, msg, want)
		}
	}
	// The refusals are recorded, and other's metadata is still there.
	var denied int
	for _, p := range []string{"etl-fresh-0", "etl-fresh-1", "etl-bot"} {
		for _, r := range vh.auditLines(t, p) {
			if r["decision"] == "deny" && r["table"] != nil && r["table"].(map[string]any)["name"] == "t" && strings.HasSuffix(metadata["other"], fmt.Sprint(r["key"])) {
				denied++
			}
		}
	}
	if denied < 6 {
		t.Errorf("%d denials of other's metadata on t's route recorded, want at least 6", denied)
	}
	st, res, e, _ := cs.sign(t, "/v1/lake/namespaces/db/tables/other/sign", signRequest{Region: testRegion, Method: "GET", URI: metadata["other"], Headers: map[string][]string{}})
	if st != 200 {
		t.Fatalf("other's metadata on its own route: %d %+v", st, e)
	}
	if st, body := (&s3Server{weed}).send(t, "GET", res.URI, res.Headers, nil); st != 200 || !bytes.Contains(body, []byte(`"format-version"`)) {
		t.Fatalf("other's metadata after the moves: %d %s", st, body)
	}
}
