package conformance

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os/exec"
	"reflect"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/apache/iceberg-go"
	"github.com/apache/iceberg-go/catalog/rest"
	"github.com/apache/iceberg-go/table"

	"github.com/countersign/countersign/conformance/remotesigning"
	"github.com/countersign/countersign/testsupport"
)

// iceberg-go's REST catalog client, pointed at countersign's catalog
// front, with SeaweedFS's Iceberg REST catalog (and its S3) behind it:
// every catalog call goes through the front to the real catalog, every
// data-path request is signed by countersign on the table's own sign
// route, which the catalog's loadTable answer (rewritten by the front)
// told the client to use.

const frontIssuer = "https://catalog-idp.conformance"

// tableAnswers records the loadTable, createTable and commit answers the
// client receives, as it receives them.
type tableAnswers struct {
	mu   sync.Mutex
	next http.RoundTripper
	got  [][]byte
}

func (a *tableAnswers) RoundTrip(r *http.Request) (*http.Response, error) {
	resp, err := a.next.RoundTrip(r)
	if err != nil || !strings.Contains(r.URL.Path, "/tables") {
		return resp, err
	}
	b, err := io.ReadAll(resp.Body)
	resp.Body.Close()
	if err != nil {
		return nil, err
	}
	resp.Body = io.NopCloser(bytes.NewReader(b))
	if r.Method == "GET" && resp.StatusCode == 200 {
		a.mu.Lock()
		a.got = append(a.got, b)
		a.mu.Unlock()
	}
	return resp, nil
}

func TestIcebergGoThroughCatalogFront(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	seaweed := servers.StartCatalog(t, testsupport.CatalogOptions{Issuer: frontIssuer})
	weed := seaweed.Weed
	srv := &s3Server{weed}
	audit := newAuditDir(t)
	cfg, env := seaweed.Config(t, testsupport.CountersignConfig{
		Audit: audit, NodeID: "conformance", Policy: testsupport.CatalogTablePolicy, PolicyData: testsupport.CatalogTableRoots, PolicyLib: true,
		Upstream: weed.IcebergURL,
	})
	cs := startCountersign(t, cfg, env...)
	token := seaweed.Token("etl-bot", testAccessKey, "etl")

	rec := registerSignedS3(srv)
	answers := &tableAnswers{next: http.DefaultTransport}
	cat, err := rest.NewCatalog(ctx, "front", cs.url,
		rest.WithOAuthToken(token),
		rest.WithWarehouseLocation("s3://lake"),
		rest.WithCustomTransport(answers),
		rest.WithAdditionalProps(iceberg.Properties{"s3.region": testRegion, "s3.endpoint": srv.endpoint()}))
	if err != nil {
		t.Fatalf("REST catalog through the front: %v", err)
	}

	ident := table.Identifier{"analytics", "events"}
	if err := cat.CreateNamespace(ctx, table.Identifier{"analytics"}, iceberg.Properties{"owner": "conformance"}); err != nil {
		t.Fatalf("create namespace: %v", err)
	}
	tbl, err := cat.CreateTable(ctx, ident, eventsSchema())
	if err != nil {
		t.Fatalf("create table: %v", err)
	}
	loc, err := url.Parse(tbl.Location())
	if err != nil || loc.Host != "lake" {
		t.Fatalf("table location %q", tbl.Location())
	}
	prefix := strings.TrimPrefix(loc.Path, "/")
	t.Logf("table location %s", tbl.Location())

	// Append (Parquet data files, manifests, manifest lists, metadata,
	// all written through countersign's signatures into SeaweedFS's S3).
	regions := []string{"eu", "us", "ap"}
	for i, batch := range []int64{0, 300} {
		rows := eventRows(t, batch, 300, regions, 0)
		tbl, err = tbl.AppendTable(ctx, rows, 4096, iceberg.Properties{"batch": fmt.Sprint(i)})
		rows.Release()
		if err != nil {
			t.Fatalf("append %d: %v", i, err)
		}
	}
	ops := opCounts(rec.Exchanges())
	t.Logf("writes signed: %s", opSummary(ops))
	if ops["PutObject"] == 0 {
		t.Fatalf("nothing was written through countersign: %s", opSummary(ops))
	}
	var parquet int
	for _, k := range srv.adminList(t, "lake", prefix+"/data/") {
		if strings.HasSuffix(k, ".parquet") {
			parquet++
		}
	}
	if parquet == 0 {
		t.Fatalf("no Parquet data file under %s/data/ in SeaweedFS", prefix)
	}

	// Load and scan through the front.
	tbl, err = cat.LoadTable(ctx, ident)
	if err != nil {
		t.Fatalf("load: %v", err)
	}
	ids, _ := scanIDs(t, ctx, tbl, nil)
	if !slices.Equal(ids, idRange(0, 600)) {
		t.Fatalf("scan: %d rows", len(ids))
	}
	// Delete files: a row-level delete rewrites, a partition delete drops
	// files; snapshot expiry then deletes the unreferenced files.
	if tbl, err = tbl.Delete(ctx, iceberg.LessThan(iceberg.Reference("id"), int64(60)), nil); err != nil {
		t.Fatalf("delete id < 60: %v", err)
	}
	if tbl, err = tbl.Delete(ctx, iceberg.EqualTo(iceberg.Reference("region"), "ap"), nil); err != nil {
		t.Fatalf("delete region = ap: %v", err)
	}
	txn := tbl.NewTransaction()
	if err := txn.ExpireSnapshots(table.WithOlderThan(0), table.WithRetainLast(1)); err != nil {
		t.Fatal(err)
	}
	if tbl, err = txn.Commit(ctx); err != nil {
		t.Fatalf("expire snapshots: %v", err)
	}
	ids, byRegion := scanIDs(t, ctx, tbl, nil)
	if len(ids) != 360 || byRegion["ap"] != 0 {
		t.Fatalf("after deletes: %d rows %v", len(ids), byRegion)
	}
	ops = opCounts(rec.Exchanges())
	t.Logf("all signed: %s", opSummary(ops))
	if ops["DeleteObject"] == 0 && ops["DeleteObjects"] == 0 {
		t.Fatalf("no delete was signed: %s", opSummary(ops))
	}
	requireCleanExchanges(t, rec.Exchanges())

	// The loadTable answers the client saw: remote signing on, pointing at
	// countersign's per-table route, no credentials.
	answers.mu.Lock()
	seen := slices.Clone(answers.got)
	answers.mu.Unlock()
	if len(seen) == 0 {
		t.Fatal("no loadTable answer recorded")
	}
	for _, b := range seen {
		var a map[string]any
		json.Unmarshal(b, &a)
		cfg, _ := a["config"].(map[string]any)
		if cfg["s3.remote-signing-enabled"] != "true" || cfg["s3.signer.uri"] != cs.url ||
			cfg["s3.signer.endpoint"] != "v1/lake/namespaces/analytics/tables/events/sign" || a["storage-credentials"] != nil {
			t.Fatalf("loadTable answer as the client saw it: %s", b)
		}
		for k := range cfg {
			if strings.Contains(k, "secret") || strings.Contains(k, "access-key") || strings.Contains(k, "session-token") {
				t.Fatalf("credential %s in the client's loadTable answer", k)
			}
		}
	}
	// The catalog's own answer, asked directly, is the same but for the
	// signing and credential fields.
	direct := func(base string) map[string]any {
		req, _ := http.NewRequest("GET", base+"/v1/lake/namespaces/analytics/tables/events", nil)
		req.Header.Set("Authorization", "Bearer "+token)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		var m map[string]any
		if err := json.NewDecoder(resp.Body).Decode(&m); err != nil || resp.StatusCode != 200 {
			t.Fatalf("%s loadTable: %d %v", base, resp.StatusCode, err)
		}
		return m
	}
	fromCatalog, viaFront := direct(weed.IcebergURL), direct(cs.url)
	for _, m := range []map[string]any{fromCatalog, viaFront} {
		delete(m, "storage-credentials")
		delete(m, "remote-signing-config")
		cfg, _ := m["config"].(map[string]any)
		for k := range cfg {
			if strings.HasPrefix(k, "s3.signer.") || k == "s3.remote-signing-enabled" ||
				strings.Contains(k, "secret") || strings.Contains(k, "access-key") || strings.Contains(k, "session-token") {
				delete(cfg, k)
			}
		}
	}
	if !reflect.DeepEqual(fromCatalog, viaFront) {
		t.Fatalf("the front changed the catalog's answer beyond signing and credentials:\ncatalog %v\nfront   %v", fromCatalog, viaFront)
	}

	// Iceberg main's signer, given what its REST client gives a table's
	// FileIO from this answer (the catalog uri: countersign's front; the
	// table's sign route; the remote-signing-config), signs a read of the
	// table's metadata that SeaweedFS serves.
	var last map[string]any
	json.Unmarshal(seen[len(seen)-1], &last)
	props := map[string]string{remotesigning.PropURI: cs.url, remotesigning.PropToken: token,
		remotesigning.PropRemoteSigningEndpoint: "v1/lake/namespaces/analytics/tables/events/sign"}
	for k, v := range last["config"].(map[string]any) {
		props[k] = v.(string)
	}
	rsc, _ := json.Marshal(last["remote-signing-config"])
	props[remotesigning.PropRemoteSigningConfig] = string(rsc)
	mainCfg, err := remotesigning.FromPropertiesMain(props)
	if err != nil {
		t.Fatal(err)
	}
	mainCfg.Region = testRegion
	mainSigner, err := remotesigning.New(mainCfg)
	if err != nil || mainSigner.Endpoint() != cs.url+"/v1/lake/namespaces/analytics/tables/events/sign" {
		t.Fatalf("main's signer endpoint %q %v", mainSigner.Endpoint(), err)
	}
	st, mbody, err := srv.readSigned(ctx, t, mainSigner, last["metadata-location"].(string))
	if err != nil {
		t.Fatalf("main's signer through the front: %v", err)
	}
	if st != 200 || !bytes.Contains(mbody, []byte(`"format-version"`)) {
		t.Fatalf("SeaweedFS refused main's signature through the front: %d %s", st, mbody)
	}

	// Every data-path request is in countersign's audit log, decided on
	// the table's route with the catalog's location.
	cs.stop()
	out, err := exec.Command(servers.CountersignBin, "audit", "query", "-dir", audit.Dir, "-principal", "etl-bot", "-format", "jsonl").Output()
	if err != nil {
		t.Fatalf("audit query: %v", err)
	}
	recorded := map[string]int{}
	for _, line := range strings.Split(strings.TrimSpace(string(out)), "\n") {
		var r struct {
			Operation, Bucket, Key, Decision string
			Status                           int
			Table                            *struct {
				Prefix    string   `json:"prefix"`
				Namespace []string `json:"namespace"`
				Name      string   `json:"name"`
			} `json:"table"`
		}
		if err := json.Unmarshal([]byte(line), &r); err != nil {
			t.Fatalf("%v: %s", err, line)
		}
		if r.Decision != "allow" || r.Status != 200 {
			t.Fatalf("a refused data-path request: %s", line)
		}
		if r.Table == nil || r.Table.Prefix != "lake" || !slices.Equal(r.Table.Namespace, []string{"analytics"}) || r.Table.Name != "events" {
			t.Fatalf("not signed on the table's route: %s", line)
		}
		recorded[r.Bucket+"/"+r.Key]++
	}
	var signed int
	perObject := map[string]int{}
	for _, ex := range rec.Exchanges() {
		if ex.Result == nil || ex.FromCache {
			continue
		}
		signed++
		k := objectOf(ex.Request)
		if perObject[k]++; perObject[k] > recorded[k] {
			t.Fatalf("%s %s was signed %d times, recorded %d times", ex.Request.Method, ex.Request.URI, perObject[k], recorded[k])
		}
	}
	if signed == 0 || len(recorded) == 0 {
		t.Fatalf("%d signed, %d recorded objects", signed, len(recorded))
	}
	t.Logf("%d signed requests, %d objects in the audit log", signed, len(recorded))
}

// objectOf is "bucket/key" of a signed request (path-style or
// virtual-hosted under localhost); a bucket-level request is "bucket/".
func objectOf(r remotesigning.Request) string {
	u, _ := url.Parse(r.URI)
	p := strings.TrimPrefix(u.EscapedPath(), "/")
	if b, ok := strings.CutSuffix(u.Hostname(), ".localhost"); ok {
		k, _ := url.PathUnescape(p)
		return b + "/" + k
	}
	b, k, _ := strings.Cut(p, "/")
	k, _ = url.PathUnescape(k)
	return b + "/" + k
}
