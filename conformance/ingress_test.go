package conformance

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/countersign/countersign/conformance/remotesigning"
	"github.com/countersign/countersign/testsupport"
)

// signRoute is the ingress rule of docs/compatibility.md, "Without the
// front": POSTs to a table's sign route go to countersign, everything
// else to the catalog.
var signRoute = regexp.MustCompile(`^/v1/(?:[^/]+/)?namespaces/[^/]+/tables/[^/]+/sign$`)

// TestIngressRoutesSignToStandaloneCountersign tests the standalone recipe
// for Iceberg after 1.11, whose signer posts to the catalog uri plus the
// table's sign route: an ingress on the catalog's address sends that
// route to a standalone countersign (no catalog front) and the rest to
// the catalog, SeaweedFS's. The ingress is Go's httputil reverse proxy
// with the documented path rule (any path-routing ingress does the same).
func TestIngressRoutesSignToStandaloneCountersign(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	cat := servers.StartCatalog(t, testsupport.CatalogOptions{Issuer: frontIssuer})
	weed := cat.Weed
	config, env := cat.Config(t, testsupport.CountersignConfig{
		Audit: newAuditDir(t), NodeID: "conformance", PathOnly: true, // no catalog.upstream: no front
		Policy: `package countersign.authz

default allow := false

allow if {
	"etl" in input.principal.groups
	input.access in {"read", "write", "delete", "list"}
	input.resource.bucket == "lake"
	input.table != null
}
`,
	})
	cs := startCountersign(t, config, env...)
	csURL, _ := url.Parse(cs.url)
	catURL, _ := url.Parse(weed.IcebergURL)
	toCS, toCatalog := httputil.NewSingleHostReverseProxy(csURL), httputil.NewSingleHostReverseProxy(catURL)
	var (
		mu     sync.Mutex
		routed []string
	)
	route := func(s string) { mu.Lock(); routed = append(routed, s); mu.Unlock() }
	ingress := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method == http.MethodPost && signRoute.MatchString(r.URL.EscapedPath()) {
			route("countersign " + r.URL.EscapedPath())
			toCS.ServeHTTP(w, r)
			return
		}
		route("catalog " + r.URL.EscapedPath())
		toCatalog.ServeHTTP(w, r)
	}))
	defer ingress.Close()
	token := cat.Token("etl-bot", testAccessKey, "etl")

	post := func(path, body string) map[string]any {
		req, _ := http.NewRequest("POST", ingress.URL+path, strings.NewReader(body))
		req.Header.Set("Authorization", "Bearer "+token)
		req.Header.Set("Content-Type", "application/json")
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		var m map[string]any
		json.NewDecoder(resp.Body).Decode(&m)
		if resp.StatusCode != 200 {
			t.Fatalf("%s: %d %v", path, resp.StatusCode, m)
		}
		return m
	}
	post("/v1/lake/namespaces", `{"namespace":["db"]}`)
	created := post("/v1/lake/namespaces/db/tables", `{"name":"t","schema":{"type":"struct","schema-id":0,"fields":[{"id":1,"name":"id","required":true,"type":"long"}]}}`)
	if cfg, _ := created["config"].(map[string]any); cfg["s3.remote-signing-enabled"] != nil {
		t.Fatalf("the catalog itself turned signing on: %v", cfg)
	}

	// Iceberg main's signer as its REST client sets it up for the table;
	// remote signing is on from the engine's own catalog properties, since
	// this catalog does not turn it on.
	cfg, err := remotesigning.FromPropertiesMain(map[string]string{
		remotesigning.PropRemoteSigningEnabled:  "true",
		remotesigning.PropURI:                   ingress.URL,
		remotesigning.PropToken:                 token,
		remotesigning.PropRemoteSigningEndpoint: "v1/lake/namespaces/db/tables/t/sign",
	})
	if err != nil {
		t.Fatal(err)
	}
	cfg.Region = testRegion
	signer, err := remotesigning.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	st, body, err := (&s3Server{weed}).readSigned(ctx, t, signer, created["metadata-location"].(string))
	if err != nil {
		t.Fatalf("signing through the ingress: %v", err)
	}
	if st != 200 || !bytes.Contains(body, []byte(`"format-version"`)) {
		t.Fatalf("SeaweedFS refused the signature: %d %s", st, body)
	}
	mu.Lock()
	got := strings.Join(routed, "\n")
	mu.Unlock()
	want := []string{"catalog /v1/lake/namespaces", "catalog /v1/lake/namespaces/db/tables", "countersign /v1/lake/namespaces/db/tables/t/sign"}
	if got != strings.Join(want, "\n") {
		t.Fatalf("routed:\n%s\nwant:\n%s", got, strings.Join(want, "\n"))
	}
	// A sign request for an object outside the bucket the policy allows is
	// countersign's 403, through the ingress.
	if _, err := signer.Sign(ctx, remotesigning.Request{Region: testRegion, Method: "GET", Provider: "s3",
		URI: fmt.Sprintf("http://127.0.0.1:%d/other/k", weed.Port), Headers: map[string][]string{}}); err == nil || !strings.Contains(err.Error(), "403") {
		t.Fatalf("outside the policy: %v", err)
	}
}
