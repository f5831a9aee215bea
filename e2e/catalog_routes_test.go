package e2e

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/countersign/countersign/testsupport"
)

// rawCall sends one request with its request-target exactly as written
// (no client normalization) and returns the status and body; 0 when the
// server closed the connection without an answer.
func rawCall(t testing.TB, base, method, target, token string, hdr ...string) (int, http.Header, []byte) {
	t.Helper()
	c, err := net.Dial("tcp", strings.TrimPrefix(base, "http://"))
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	c.SetDeadline(time.Now().Add(30 * time.Second))
	var b strings.Builder
	fmt.Fprintf(&b, "%s %s HTTP/1.1\r\nHost: %s\r\nConnection: close\r\n", method, target, strings.TrimPrefix(base, "http://"))
	if method == "POST" || method == "PUT" {
		b.WriteString("Content-Type: application/json\r\nContent-Length: 2\r\n")
	}
	if token != "" {
		b.WriteString("Authorization: Bearer " + token + "\r\n")
	}
	for i := 0; i+1 < len(hdr); i += 2 {
		b.WriteString(hdr[i] + ": " + hdr[i+1] + "\r\n")
	}
	b.WriteString("\r\n")
	if method == "POST" || method == "PUT" {
		b.WriteString("{}")
	}
	if _, err := io.WriteString(c, b.String()); err != nil {
		t.Fatal(err)
	}
	req, _ := http.NewRequest(method, "http://x/", nil) // for HEAD: no body to read
	resp, err := http.ReadResponse(bufio.NewReader(c), req)
	if err != nil {
		return 0, nil, nil
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, resp.Header, body
}

// credentialIn names a credential in an answer a caller received, or "".
func credentialIn(b []byte) string {
	for _, s := range []string{testAccessKey, testSecretKey, "storage-credentials", "s3.secret-access-key", "s3.access-key-id", "s3.session-token", "ECHO-SECRET"} {
		if bytes.Contains(b, []byte(s)) {
			return s
		}
	}
	return ""
}

// echoUpstream is a stand-in catalog that records the method and
// request-target of every request it receives, so that the test can
// compare them with what the caller sent (no real catalog reports what
// it received). Its answers carry a credential.
type echoUpstream struct {
	srv *httptest.Server
	mu  sync.Mutex
	got []string
}

func startEcho(t *testing.T) *echoUpstream {
	e := &echoUpstream{}
	e.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		e.mu.Lock()
		e.got = append(e.got, r.Method+" "+r.RequestURI)
		e.mu.Unlock()
		w.Header().Set("Content-Type", "application/json")
		io.WriteString(w, `{"metadata":{"location":"s3://lake/echo"},"config":{"s3.secret-access-key":"ECHO-SECRET"},"storage-credentials":[{"prefix":"s3://lake/","config":{"s3.secret-access-key":"ECHO-SECRET"}}]}`)
	}))
	t.Cleanup(e.srv.Close)
	return e
}

func (e *echoUpstream) take() []string {
	e.mu.Lock()
	defer e.mu.Unlock()
	g := e.got
	e.got = nil
	return g
}

// routeTargets generates the differential's request-targets: every
// route of the REST spec with and without the prefix, then, for each,
// the spellings different routers read differently: an encoded or
// backslashed '/', dot and empty segments, path parameters, escapes of
// unreserved characters and lowercase escapes, case changes, repeated
// /v1 and prefixes, plus near misses of countersign's sign and
// credentials routes.
func routeTargets() []string {
	tbl := "namespaces/db/tables/t"
	routes := []string{
		"namespaces", "namespaces/db", "namespaces/db/properties", "namespaces/db/tables", tbl, tbl + "/credentials",
		tbl + "/sign", tbl + "/plan", tbl + "/plan/p1", tbl + "/tasks", tbl + "/metrics", tbl + "/unregister",
		"namespaces/db/register", "tables/rename", "transactions/commit", "namespaces/db/views", "namespaces/db/views/v",
		"views/rename", "namespaces/db/register-view", "namespaces/db/functions", "namespaces/db/functions/f",
		"namespaces/db/tables/secret",
	}
	var bases []string
	for _, r := range routes {
		bases = append(bases, "/v1/"+r, "/v1/lake/"+r)
	}
	bases = append(bases, "/v1/config", "/v1/oauth/tokens", "/v1/aws/s3/sign")
	seen := map[string]bool{}
	var out []string
	add := func(s string) {
		if !seen[s] {
			seen[s] = true
			out = append(out, s)
		}
	}
	for _, b := range bases {
		add(b)
		segs := strings.Split(b[1:], "/")
		join := func(ss []string) string { return "/" + strings.Join(ss, "/") }
		for i := range segs {
			// Joins of this segment and the next.
			if i+1 < len(segs) {
				for _, sep := range []string{"%2F", "%2f", "%5C", "\\", "%252F"} {
					add(join(segs[:i]) + "/" + segs[i] + sep + strings.Join(segs[i+1:], "/"))
				}
			}
			// Dot and empty segments, path parameters before segment i.
			for _, ins := range []string{".", "..", "x/..", "", "%2E", "%2E%2E", "x/%2E%2E"} {
				add(join(append(append(append([]string{}, segs[:i]...), ins), segs[i:]...)))
			}
			mod := func(f func(string) string) {
				c := append([]string{}, segs...)
				c[i] = f(c[i])
				add(join(c))
			}
			mod(func(s string) string { return s + ";x=1" })
			mod(func(s string) string { return strings.ToUpper(s) })
			mod(func(s string) string { return strings.ToUpper(s[:1]) + s[1:] })
			mod(func(s string) string { return fmt.Sprintf("%%%02X", s[0]) + s[1:] })
			mod(func(s string) string { return fmt.Sprintf("%%%02x", s[0]) + s[1:] })
			mod(func(s string) string { return s[:len(s)-1] + fmt.Sprintf("%%%02X", s[len(s)-1]) })
		}
		add(b + "/")
		add(b + "//")
		add(b + "/.")
		add(b + "/..")
		add(b + "%2F")
		add(b + ";x=1")
		add(b + "?x=1")
		add("/v1" + b)
		add("/v1/v1" + b)
		add("/v1/lake" + b)
		add(strings.Replace(b, "/v1/", "//v1/", 1))
		add(strings.Replace(b, "/v1/", "/V1/", 1))
	}
	for _, s := range []string{
		"/v1/aws/s3/sign/", "/v1/aws/s3/Sign", "/v1/aws/s3/sig%6E", "/v1/lake/v1/aws/s3/sign", "/v1/lake/namespaces/db/tables/t/sign/",
		"/v1/lake/namespaces/db/tables/t/sign%2F", "/v1/lake/namespaces/db/tables/t/sign;x=1", "/v1/v1/v1/lake/namespaces/db/tables/rename",
		"/v1/lake/namespaces/db/tables/t/../secret", "/v1/lake/namespaces/db%2Ftables%2Fsecret", "/v1/lake/namespaces/db%1Ftables%1Fsecret",
		"/v1/lake/namespaces/db/tables/t%2F..%2Fsecret", "/v1/lake/namespaces/db/tables/t/credentials%3Fx", "/v1/lake/namespaces/db/tables/t%3Fx=/credentials",
	} {
		add(s)
	}
	return out
}

// TestCatalogFrontRouteDifferential sends the generated request-targets
// through the front to an echo upstream (every method), and GET and HEAD
// (with vended credentials asked for) through the front to two real
// catalogs with different routers: SeaweedFS's (gorilla/mux, which decodes
// before it routes) and Iceberg's reference REST catalog server (a
// servlet, RESTCatalogServer). The echo must receive nothing or exactly
// the target the caller sent (the front forwards only canonical
// spellings, and a canonical spelling as it is); a target the front
// forwards must be answered through the front as the catalog answers it
// directly (same status: the catalog executed the same route); and no
// answer through the front ever carries a credential.
func TestCatalogFrontRouteDifferential(t *testing.T) {
	f := startCatalogFront(t)
	echo := startEcho(t)
	echoFront := frontOf(t, f, echo.srv.URL+"/echo", "e2e-echo", "")
	// countersign reads the catalog's /v1/config once at start: let that
	// arrive before the echo's record counts.
	for deadline := time.Now().Add(5 * time.Second); time.Now().Before(deadline); time.Sleep(20 * time.Millisecond) {
		if got := echo.take(); len(got) > 0 {
			if len(got) != 1 || got[0] != "GET /echo/v1/config" {
				t.Fatalf("at start, the echo received %v", got)
			}
			break
		}
	}
	ref := startIcebergREST(t)
	catalogs := []struct{ name, front, direct, token string }{
		{"SeaweedFS", f.cs.url, f.direct, f.token},
		{"Iceberg RESTCatalogServer", frontOf(t, f, ref, "e2e-ref", refRoots), ref, f.token},
	}
	for _, c := range catalogs {
		// SeaweedFS serves the warehouse as the prefix "lake", the
		// reference server no prefix: one of the two is created.
		st1, _ := call(t, c.direct, c.token, "POST", "/v1/lake/namespaces", `{"namespace":["db"]}`)
		st2, _ := call(t, c.direct, c.token, "POST", "/v1/namespaces", `{"namespace":["db"]}`)
		if st1 != 200 && st2 != 200 {
			t.Fatalf("%s: create namespace: %d, %d", c.name, st1, st2)
		}
		for _, name := range []string{"t", "secret"} {
			for _, p := range []string{"/v1/lake/namespaces/db/tables", "/v1/namespaces/db/tables"} {
				call(t, c.direct, c.token, "POST", p, `{"name":"`+name+`","schema":`+eventsSchema+`}`)
			}
		}
	}

	targets := routeTargets()
	methods := []string{"GET", "HEAD", "POST", "DELETE", "PUT"}
	type key struct{ method, target string }
	forwardedTo := map[key]bool{}
	forwarded, refused := 0, 0
	for _, target := range targets {
		for _, m := range methods {
			st, _, b := rawCall(t, echoFront, m, target, f.token)
			got := echo.take()
			switch {
			case len(got) > 1:
				t.Fatalf("%s %s reached the echo %d times: %v", m, target, len(got), got)
			case len(got) == 1:
				forwarded++
				forwardedTo[key{m, target}] = true
				if want := m + " /echo" + target; got[0] != want {
					t.Errorf("%s %s: the echo received %q", m, target, got[0])
				}
				if namesOwnRoute(target) {
					t.Errorf("%s %s: a spelling of countersign's sign or credentials route was forwarded", m, target)
				}
			default:
				refused++
				if st != 400 && st != 404 && st != 405 && st != 0 {
					t.Errorf("%s %s: refused with %d %s", m, target, st, b)
				}
			}
			// The echo's answers all carry a credential. The routes whose
			// answer schema cannot carry one (lists of identifiers, answers
			// without content, the caller's own token) are streamed unread
			// by design; every other GET answer is read and cleaned.
			if c := credentialIn(b); c != "" && m == "GET" && !listRoute(target) {
				t.Errorf("%s %s: %q reached the caller through the echo: %s", m, target, c, b)
			}
		}
	}
	t.Logf("route differential: %d request-targets x %d methods = %d requests through the front to the echo; %d forwarded exactly, %d refused by the front",
		len(targets), len(methods), len(targets)*len(methods), forwarded, refused)
	if forwarded == 0 || refused == 0 {
		t.Fatal("the differential exercised only one side")
	}
	for _, c := range catalogs {
		wouldRun, compared := 0, 0
		for _, target := range targets {
			for _, m := range []string{"GET", "HEAD"} {
				fst, _, fb := rawCall(t, c.front, m, target, c.token, "X-Iceberg-Access-Delegation", "vended-credentials")
				if cr := credentialIn(fb); cr != "" {
					t.Errorf("%s: %s %s: %q reached the caller: %s", c.name, m, target, cr, fb)
				}
				dst, _, db := rawCall(t, c.direct, m, target, c.token, "X-Iceberg-Access-Delegation", "vended-credentials")
				switch {
				case forwardedTo[key{m, target}]:
					compared++
					if fst != dst {
						t.Errorf("%s: %s %s: through the front %d, directly %d (%.200s)", c.name, m, target, fst, dst, db)
					}
				case dst >= 200 && dst < 300:
					wouldRun++ // a spelling the catalog executes and the front refuses
				}
			}
		}
		t.Logf("%s: %d GET/HEAD requests compared with the catalog's direct answer; %d refused spellings it executes directly", c.name, compared, wouldRun)
	}
}

// refRoots is the operator's root for the reference server's tables,
// which have no prefix (warehouse).
const refRoots = `{"countersign": {"table_roots": {"": "s3://lake/"}}}`

// frontOf starts another countersign like f's, fronting upstream, with
// policyData (JSON) for the policy.
func frontOf(t *testing.T, f *catalogFront, upstream, node, policyData string) string {
	t.Helper()
	cfg, env := f.cat.Config(t, testsupport.CountersignConfig{
		Audit: newAuditDir(t), NodeID: node, Policy: testsupport.CatalogTablePolicy, PolicyLib: true,
		PolicyData: policyData, Upstream: upstream,
	})
	return startCountersign(t, cfg, env...).url
}

// namesOwnRoute reports whether any reading of target (decoded, any
// case) mentions countersign's sign or credentials routes; none of the
// generated tables is named so.
func namesOwnRoute(target string) bool {
	p := strings.ToLower(target)
	if d, err := url.PathUnescape(p); err == nil {
		p = d
	}
	return strings.Contains(p, "sign") || strings.Contains(p, "credentials")
}

// listRoute reports whether a GET of target is one of the list
// operations (listNamespaces, listTables, listViews, listFunctions).
func listRoute(target string) bool {
	p, _, _ := strings.Cut(target, "?")
	for _, s := range []string{"/namespaces", "/tables", "/views", "/functions"} {
		if strings.HasSuffix(p, s) {
			return true
		}
	}
	return false
}

// TestCatalogFrontEncodedSlashSeaweedFS: SeaweedFS's catalog decodes %2F
// before it routes, so /v1/lake/namespaces/db%2Ftables%2Fsecret is
// loadTable(db.secret) there (with its vended credentials where it vends);
// the front streamed that answer unread as a namespace's. Now it is
// refused, and no table answer or credential reaches the caller. Read
// answers are not cacheable.
func TestCatalogFrontEncodedSlashSeaweedFS(t *testing.T) {
	f := startCatalogFront(t)
	front, direct, tok := f.cs.url, f.direct, f.token
	if st, b := call(t, direct, tok, "POST", "/v1/lake/namespaces", `{"namespace":["db"]}`); st != 200 {
		t.Fatalf("create namespace: %d %s", st, b)
	}
	if st, b := call(t, direct, tok, "POST", "/v1/lake/namespaces/db/tables", `{"name":"secret","schema":`+eventsSchema+`}`); st != 200 {
		t.Fatalf("create table: %d %s", st, b)
	}
	const target = "/v1/lake/namespaces/db%2Ftables%2Fsecret"
	dst, _, db := rawCall(t, direct, "GET", target, tok, "X-Iceberg-Access-Delegation", "vended-credentials")
	if dst != 200 || !bytes.Contains(db, []byte(`"metadata"`)) {
		t.Fatalf("SeaweedFS no longer answers %s with loadTable(db.secret): %d %s", target, dst, db)
	}
	st, _, b := rawCall(t, front, "GET", target, tok, "X-Iceberg-Access-Delegation", "vended-credentials")
	if st != 400 || credentialIn(b) != "" || bytes.Contains(b, []byte(`"metadata"`)) {
		t.Fatalf("through the front: %d %s", st, b)
	}
	var e icebergError
	if json.Unmarshal(b, &e) != nil || !strings.Contains(e.Error.Message, "%2F") {
		t.Fatalf("the refusal does not say what was wrong: %s", b)
	}
	st, h, b := rawCall(t, front, "GET", "/v1/lake/namespaces/db/tables/secret", tok, "X-Iceberg-Access-Delegation", "vended-credentials")
	if st != 200 || credentialIn(b) != "" || h.Get("Cache-Control") != "no-store" {
		t.Fatalf("loadTable through the front: %d %v %s", st, h, b)
	}
}
