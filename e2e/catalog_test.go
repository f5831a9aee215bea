package e2e

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"os/exec"
	"reflect"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/countersign/countersign/testsupport"
)

// The catalog front against a real Iceberg REST catalog: SeaweedFS's
// (`weed mini` with its Iceberg port on), whose table answers carry no
// signing settings at all. Between countersign and the catalog sits a TCP
// relay the test can cut or stall, so "down" and "slow" are the network's
// behaviour, not a stand-in catalog's.

// relay forwards TCP connections to target until cut: in "refuse" mode
// new connections are closed at once, in "hang" mode they are held open
// and never answered. Switching modes closes the relayed connections.
type relay struct {
	ln     net.Listener
	target string
	mu     sync.Mutex
	mode   string
	conns  []net.Conn
}

func startRelay(t *testing.T, target string) *relay {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	r := &relay{ln: ln, target: target, mode: "pass"}
	t.Cleanup(func() { ln.Close(); r.set("refuse") })
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			r.mu.Lock()
			mode := r.mode
			r.conns = append(r.conns, c)
			r.mu.Unlock()
			switch mode {
			case "refuse":
				c.Close()
			case "hang":
			default:
				go r.pipe(c)
			}
		}
	}()
	return r
}

func (r *relay) pipe(c net.Conn) {
	u, err := net.Dial("tcp", r.target)
	if err != nil {
		c.Close()
		return
	}
	r.mu.Lock()
	r.conns = append(r.conns, u)
	r.mu.Unlock()
	go func() { io.Copy(u, c); u.Close() }()
	io.Copy(c, u)
	c.Close()
}

func (r *relay) set(mode string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.mode = mode
	for _, c := range r.conns {
		c.Close()
	}
	r.conns = nil
}

func (r *relay) url() string { return "http://" + r.ln.Addr().String() }

const catalogIssuer = "https://catalog-idp.test"

type catalogFront struct {
	cs     *signerProc
	cat    *testsupport.Catalog
	weed   *testsupport.S3Server
	relay  *relay
	token  string
	direct string // the catalog's own URI
	audit  *testsupport.AuditDir
}

// startCatalogFront runs countersign as the front of SeaweedFS's catalog
// (testsupport.Servers.StartCatalog), through a relay the test can cut.
func startCatalogFront(t *testing.T) *catalogFront {
	t.Helper()
	cat := servers.StartCatalog(t, testsupport.CatalogOptions{Issuer: catalogIssuer})
	rl := startRelay(t, strings.TrimPrefix(cat.Weed.IcebergURL, "http://"))
	audit := newAuditDir(t)
	cfg, env := cat.Config(t, testsupport.CountersignConfig{
		Audit: audit, NodeID: "e2e", Policy: testsupport.CatalogTablePolicy, PolicyData: testsupport.CatalogTableRoots, PolicyLib: true,
		Upstream: rl.url(), CatalogSettings: []string{"response_timeout: 1s", "location_ttl: 1h"},
	})
	cs := startCountersign(t, cfg, env...)
	tok := cat.Token("etl-bot", testAccessKey, "etl")
	cs.token = tok
	return &catalogFront{cs: cs, cat: cat, weed: cat.Weed, relay: rl, token: tok, direct: cat.Weed.IcebergURL, audit: audit}
}

// call sends one catalog request to base (countersign's front or the
// catalog itself) and returns the status and body.
func call(t testing.TB, base, token, method, path, body string, hdr ...string) (int, []byte) {
	t.Helper()
	var rd io.Reader
	if body != "" {
		rd = strings.NewReader(body)
	}
	req, err := http.NewRequest(method, base+path, rd)
	if err != nil {
		t.Fatal(err)
	}
	if body != "" {
		req.Header.Set("Content-Type", "application/json")
	}
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	for i := 0; i+1 < len(hdr); i += 2 {
		req.Header.Set(hdr[i], hdr[i+1])
	}
	cl := &http.Client{Timeout: 30 * time.Second}
	resp, err := cl.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, b
}

func jsonMap(t testing.TB, b []byte) map[string]any {
	t.Helper()
	var m map[string]any
	if err := json.Unmarshal(b, &m); err != nil {
		t.Fatalf("%v: %s", err, b)
	}
	return m
}

const eventsSchema = `{"type":"struct","schema-id":0,"fields":[{"id":1,"name":"id","required":true,"type":"long"},{"id":2,"name":"region","required":false,"type":"string"}]}`

// signingKeys are the config keys the front adds to a table answer.
var signingKeys = []string{"s3.remote-signing-enabled", "s3.signer.uri", "s3.signer.endpoint"}

func TestCatalogFrontSeaweedFS(t *testing.T) {
	f := startCatalogFront(t)
	front, direct, tok := f.cs.url, f.direct, f.token

	// /v1/config, namespaces: the catalog's answers, unchanged.
	st, viaFront := call(t, front, tok, "GET", "/v1/config?warehouse=s3://lake", "")
	_, fromCatalog := call(t, direct, tok, "GET", "/v1/config?warehouse=s3://lake", "")
	if st != 200 || !bytes.Equal(viaFront, fromCatalog) {
		t.Fatalf("/v1/config changed: %d %s\nvs %s", st, viaFront, fromCatalog)
	}
	if st, b := call(t, front, tok, "POST", "/v1/lake/namespaces", `{"namespace":["db"],"properties":{"owner":"etl"}}`); st != 200 {
		t.Fatalf("create namespace: %d %s", st, b)
	}
	st, viaFront = call(t, front, tok, "GET", "/v1/lake/namespaces", "")
	_, fromCatalog = call(t, direct, tok, "GET", "/v1/lake/namespaces", "")
	if st != 200 || !bytes.Equal(viaFront, fromCatalog) || !bytes.Contains(viaFront, []byte(`"db"`)) {
		t.Fatalf("namespaces changed: %d %s\nvs %s", st, viaFront, fromCatalog)
	}
	// The catalog's refusals reach the client as it gave them.
	st, viaFront = call(t, front, tok, "POST", "/v1/lake/namespaces", `{"namespace":["db"]}`)
	_, fromCatalog = call(t, direct, tok, "POST", "/v1/lake/namespaces", `{"namespace":["db"]}`)
	if st != 409 || !bytes.Equal(viaFront, fromCatalog) {
		t.Fatalf("error body changed: %d %s\nvs %s", st, viaFront, fromCatalog)
	}

	// The OAuth2 token route is forwarded: SeaweedFS's own token comes back
	// and works on the catalog.
	form := url.Values{"grant_type": {"client_credentials"}, "client_id": {testAccessKey}, "client_secret": {testSecretKey}, "scope": {"catalog"}}
	resp, err := http.Post(front+"/v1/oauth/tokens", "application/x-www-form-urlencoded", strings.NewReader(form.Encode()))
	if err != nil {
		t.Fatal(err)
	}
	var tr struct {
		AccessToken string `json:"access_token"`
	}
	json.NewDecoder(resp.Body).Decode(&tr)
	resp.Body.Close()
	if resp.StatusCode != 200 || tr.AccessToken == "" {
		t.Fatalf("token route: %d", resp.StatusCode)
	}
	if st, b := call(t, direct, tr.AccessToken, "GET", "/v1/lake/namespaces", ""); st != 200 {
		t.Fatalf("the forwarded token route's token: %d %s", st, b)
	}
	if st, _ := call(t, front, "", "POST", "/v1/oauth/tokens", ""); st == 200 {
		t.Fatal("an empty token request succeeded")
	}

	// createTable through the front: remote signing on, pointing at
	// countersign's per-table route.
	st, b := call(t, front, tok, "POST", "/v1/lake/namespaces/db/tables", `{"name":"events","schema":`+eventsSchema+`}`)
	if st != 200 {
		t.Fatalf("create table: %d %s", st, b)
	}
	created := jsonMap(t, b)
	cfg := created["config"].(map[string]any)
	if cfg["s3.remote-signing-enabled"] != "true" || cfg["s3.signer.uri"] != front || cfg["s3.signer.endpoint"] != "v1/lake/namespaces/db/tables/events/sign" {
		t.Fatalf("createTable answer has no remote signing: %s", b)
	}
	if _, ok := created["remote-signing-config"]; !ok {
		t.Fatalf("no remote-signing-config: %s", b)
	}
	loc := created["metadata"].(map[string]any)["location"].(string)
	t.Logf("table location %s", loc)

	// loadTable: the catalog's own answer except the signing and
	// credential fields.
	_, fromCatalog = call(t, direct, tok, "GET", "/v1/lake/namespaces/db/tables/events", "", "X-Iceberg-Access-Delegation", "vended-credentials")
	st, viaFront = call(t, front, tok, "GET", "/v1/lake/namespaces/db/tables/events", "", "X-Iceberg-Access-Delegation", "vended-credentials")
	if st != 200 {
		t.Fatalf("load table: %d %s", st, viaFront)
	}
	assertSameExceptSigning(t, fromCatalog, viaFront)

	// Signing on the per-table route, by the catalog's location, with no
	// countersign.tables data anywhere.
	u, _ := url.Parse(loc)
	inside := fmt.Sprintf("http://127.0.0.1:%d/%s/%s/data/00000-0.parquet", f.weed.Port, u.Host, strings.TrimPrefix(u.Path, "/"))
	outside := fmt.Sprintf("http://127.0.0.1:%d/%s/elsewhere/data/00000-0.parquet", f.weed.Port, u.Host)
	route := "/v1/lake/namespaces/db/tables/events/sign"
	if st, _, e, _ := f.cs.sign(t, route, signRequest{Region: testRegion, Method: "GET", URI: inside, Headers: map[string][]string{}}); st != 200 {
		t.Fatalf("inside the catalog's location: %d %+v", st, e)
	}
	st, _, e, _ := f.cs.sign(t, route, signRequest{Region: testRegion, Method: "GET", URI: outside, Headers: map[string][]string{}})
	if st != 403 || !strings.Contains(e.Error.Message, "access denied") {
		t.Fatalf("outside the catalog's location: %d %+v", st, e)
	}
	out, err := exec.Command(servers.CountersignBin, "audit", "query", "-dir", f.audit.Dir, "-key", "elsewhere/data/00000-0.parquet", "-format", "jsonl").Output()
	if err != nil || !strings.Contains(string(out), "is outside table lake/db/events ("+loc+")") {
		t.Fatalf("the denial's record does not name the catalog's location: %v\n%s", err, out)
	}
	// The signature is good at SeaweedFS: the metadata file the catalog wrote.
	ml := created["metadata-location"].(string)
	mu, _ := url.Parse(ml)
	mdURI := fmt.Sprintf("http://127.0.0.1:%d/%s%s", f.weed.Port, mu.Host, mu.Path)
	st, res, e, _ := f.cs.sign(t, route, signRequest{Region: testRegion, Method: "GET", URI: mdURI, Headers: map[string][]string{}})
	if st != 200 {
		t.Fatalf("sign metadata read: %d %+v", st, e)
	}
	s3 := &s3Server{f.weed}
	if st, body := s3.send(t, "GET", res.URI, res.Headers, nil); st != 200 || !bytes.Contains(body, []byte(`"format-version"`)) {
		t.Fatalf("SeaweedFS refused countersign's signature: %d %s", st, body)
	}

	// A table countersign never saw is fetched with the caller's token.
	if st, b := call(t, direct, tok, "POST", "/v1/lake/namespaces/db/tables", `{"name":"direct","schema":`+eventsSchema+`}`); st != 200 {
		t.Fatalf("create table directly: %d %s", st, b)
	}
	_, b = call(t, direct, tok, "GET", "/v1/lake/namespaces/db/tables/direct", "")
	dloc, _ := url.Parse(jsonMap(t, b)["metadata"].(map[string]any)["location"].(string))
	dInside := fmt.Sprintf("http://127.0.0.1:%d/%s%s/data/f.parquet", f.weed.Port, dloc.Host, dloc.Path)
	if st, _, e, _ := f.cs.sign(t, "/v1/lake/namespaces/db/tables/direct/sign", signRequest{Region: testRegion, Method: "GET", URI: dInside, Headers: map[string][]string{}}); st != 200 {
		t.Fatalf("unknown table, fetched: %d %+v", st, e)
	}
	// A caller the catalog refuses gets nothing signed: this token is
	// countersign's (same issuer, audience, key) but names an access key
	// SeaweedFS does not know.
	stranger := f.cs.as(f.cat.Token("stranger", "NOSUCHACCESSKEY", "etl"))
	st, _, e, _ = stranger.sign(t, route, signRequest{Region: testRegion, Method: "GET", URI: inside, Headers: map[string][]string{}})
	if st != 403 || !strings.Contains(e.Error.Message, "the catalog refused this caller table /v1/lake/namespaces/db/tables/events (HTTP 401)") {
		t.Fatalf("refused caller: %d %+v", st, e)
	}

	// The catalog slow, then down: catalog routes answer 504, then 502, in
	// Iceberg's error model and without hanging; known tables keep signing.
	for _, c := range []struct {
		mode   string
		status int
	}{{"hang", 504}, {"refuse", 502}} {
		f.relay.set(c.mode)
		start := time.Now()
		st, b := call(t, front, tok, "GET", "/v1/lake/namespaces", "")
		var ie icebergError
		if json.Unmarshal(b, &ie) != nil || st != c.status || ie.Error.Code != c.status || ie.Error.Type == "" {
			t.Fatalf("%s: %d %s", c.mode, st, b)
		}
		if d := time.Since(start); d > 5*time.Second {
			t.Fatalf("%s: the answer took %s", c.mode, d)
		}
		if st, _, e, _ := f.cs.sign(t, route, signRequest{Region: testRegion, Method: "GET", URI: inside, Headers: map[string][]string{}}); st != 200 {
			t.Fatalf("%s: a known table stopped signing: %d %+v", c.mode, st, e)
		}
		// A table not known yet cannot be confirmed: nothing signed.
		st, _, e, _ := f.cs.sign(t, "/v1/lake/namespaces/db/tables/never/sign", signRequest{Region: testRegion, Method: "GET", URI: inside, Headers: map[string][]string{}})
		if st != 503 {
			t.Fatalf("%s: unknown table: %d %+v", c.mode, st, e)
		}
	}
	f.relay.set("pass")
	if st, b := call(t, front, tok, "GET", "/v1/lake/namespaces", ""); st != 200 {
		t.Fatalf("after the outage: %d %s", st, b)
	}
}

// assertSameExceptSigning compares the catalog's loadTable answer with the
// front's: equal once the catalog's credentials and the front's signing
// settings are set aside, and the front's has no credentials.
func assertSameExceptSigning(t *testing.T, fromCatalog, viaFront []byte) {
	t.Helper()
	c, fr := jsonMap(t, fromCatalog), jsonMap(t, viaFront)
	if _, ok := fr["storage-credentials"]; ok {
		t.Fatalf("the front passed on storage-credentials: %s", viaFront)
	}
	ccfg, _ := c["config"].(map[string]any)
	fcfg, _ := fr["config"].(map[string]any)
	for _, k := range signingKeys {
		if _, ok := ccfg[k]; ok {
			t.Logf("the catalog itself set %s", k)
		}
		delete(fcfg, k)
	}
	for k := range ccfg {
		if strings.Contains(k, "secret") || strings.Contains(k, "access-key") || strings.Contains(k, "session-token") {
			delete(ccfg, k)
		}
	}
	for k := range fcfg {
		if strings.Contains(k, "secret") || strings.Contains(k, "access-key") || strings.Contains(k, "session-token") {
			t.Fatalf("the front passed on %s", k)
		}
	}
	delete(fr, "remote-signing-config")
	delete(c, "storage-credentials")
	c["config"], fr["config"] = ccfg, fcfg
	if !reflect.DeepEqual(c, fr) {
		t.Fatalf("the front changed the catalog's answer:\ncatalog %s\nfront   %s", fromCatalog, viaFront)
	}
}
