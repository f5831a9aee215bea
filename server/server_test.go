package server

import (
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/credentials"
	"github.com/valyala/fasthttp"

	"github.com/countersign/countersign/audit"
	"github.com/countersign/countersign/auth"
	"github.com/countersign/countersign/metrics"
	"github.com/countersign/countersign/policy"
	"github.com/countersign/countersign/s3req"
	"github.com/countersign/countersign/signer"
)

const testPolicy = `package countersign.authz

default allow := false

allow if {
	input.resource.bucket == "lake"
	input.access != "admin"
	not startswith(input.resource.key, "denied/")
}
`

// newTestServer wires the real stages: classifier, OPA engine, SDK signer.
func newTestServer(t testing.TB, rego string, creds aws.CredentialsProvider, opts Options) *Server {
	t.Helper()
	engine := testEngine(t, rego)
	c := testClassifier(t, true)
	if creds == nil {
		creds = credentials.NewStaticCredentialsProvider("AKTEST", "secret", "")
	}
	authn := testAuthenticator(t)
	h, err := NewHandler(Stages{Authenticator: authn, Classifier: c, Authorizer: engine, Signer: signer.New(creds, signer.Options{}), Audit: openTestAudit(t)}, opts, nil)
	if err != nil {
		t.Fatal(err)
	}
	return New(h, Config{})
}

// testEngine loads rego as the only policy file.
func testEngine(t testing.TB, rego string) *policy.Engine {
	t.Helper()
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "authz.rego"), []byte(rego), 0o600); err != nil {
		t.Fatal(err)
	}
	engine, err := policy.Load(context.Background(), policy.Options{Paths: []string{dir}})
	if err != nil {
		t.Fatal(err)
	}
	return engine
}

// testClassifier classifies for one endpoint, localhost:7070, in
// path-style addressing and, if vhost, virtual-hosted under localhost.
func testClassifier(t testing.TB, vhost bool) *s3req.Classifier {
	t.Helper()
	ep := s3req.Endpoint{Name: "local", Scheme: "http", Host: "localhost", Port: 7070, Regions: []string{"us-east-1"}}
	if vhost {
		ep.VirtualHostDomain = "localhost"
	}
	c, err := s3req.New(s3req.Options{Endpoints: []s3req.Endpoint{ep}})
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// testAuthenticator accepts HS256 tokens of testIssuer (testSecret) for
// audience countersign.
func testAuthenticator(t testing.TB) *auth.Authenticator {
	t.Helper()
	authn, err := auth.New(context.Background(), auth.Config{Issuer: testIssuer, Audience: []string{"countersign"}, HS256Secret: testSecret}, auth.Options{})
	if err != nil {
		t.Fatal(err)
	}
	return authn
}

// openTestAudit opens a real audit log (real files, real fdatasync) in a
// temporary directory.
func openTestAudit(t testing.TB) *audit.Log {
	return openTestAuditIn(t, t.TempDir())
}

func openTestAuditIn(t testing.TB, dir string) *audit.Log {
	t.Helper()
	signerKey, verifierKey, hmacKey, err := audit.GenerateKeys("server-test")
	os.WriteFile(filepath.Join(dir, "..", filepath.Base(dir)+".vkey"), []byte(verifierKey), 0o600)
	if err != nil {
		t.Fatal(err)
	}
	log, err := audit.Open(audit.Config{Dir: dir, NodeID: "test"}, audit.Options{CheckpointKey: signerKey, HMACKey: []byte(hmacKey)})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { log.Close() })
	return log
}

const (
	testIssuer = "https://idp.test"
	testSecret = "server-test-secret-0123456789abcdef"
)

// mintToken makes an HS256 JWT by hand (independently of the verifying
// library) for subject sub with groups.
func mintToken(sub string, exp time.Time, groups ...string) string {
	enc := base64.RawURLEncoding
	claims, _ := json.Marshal(map[string]any{"iss": testIssuer, "aud": "countersign", "sub": sub, "exp": exp.Unix(), "groups": groups})
	signing := enc.EncodeToString([]byte(`{"alg":"HS256","typ":"JWT"}`)) + "." + enc.EncodeToString(claims)
	mac := hmac.New(sha256.New, []byte(testSecret))
	mac.Write([]byte(signing))
	return signing + "." + enc.EncodeToString(mac.Sum(nil))
}

type response struct {
	status int
	header map[string]string
	body   map[string]any
	raw    string
}

var aliceToken = sync.OnceValue(func() string { return mintToken("alice", time.Now().Add(time.Hour), "analysts") })

func do(t testing.TB, s *Server, method, path, body string) response {
	return doAs(t, s, "Bearer "+aliceToken(), method, path, body)
}

func doAs(t testing.TB, s *Server, authorization, method, path, body string) response {
	t.Helper()
	var ctx fasthttp.RequestCtx
	if authorization != "" {
		ctx.Request.Header.Set("Authorization", authorization)
	}
	ctx.Request.Header.SetMethod(method)
	ctx.Request.SetRequestURI(path)
	ctx.Request.SetBodyString(body)
	s.Handler()(&ctx)
	r := response{status: ctx.Response.StatusCode(), header: map[string]string{}, raw: string(ctx.Response.Body())}
	for _, k := range []string{"Cache-Control", "Retry-After", "Content-Type", "Allow", "WWW-Authenticate"} {
		r.header[k] = string(ctx.Response.Header.Peek(k))
	}
	if strings.HasPrefix(r.header["Content-Type"], "application/json") {
		if err := json.Unmarshal(ctx.Response.Body(), &r.body); err != nil {
			t.Fatalf("response is not JSON: %v: %s", err, ctx.Response.Body())
		}
	}
	return r
}

func signBody(method, uri string) string {
	return `{"region":"us-east-1","uri":"` + uri + `","method":"` + method + `","headers":{"amz-sdk-request":["attempt=1; max=4"]}}`
}

func TestSignRoutes(t *testing.T) {
	s := newTestServer(t, testPolicy, nil, Options{BasePaths: []string{"/catalog/"}})
	body := signBody("GET", "http://localhost:7070/lake/wh/f.parquet")
	for _, path := range []string{
		"/v1/aws/s3/sign",
		"/catalog/v1/aws/s3/sign",
		"/v1/namespaces/db/tables/t/sign",
		"/v1/prod/namespaces/db%1Fsub/tables/t/sign",
		"/catalog/v1/prod/namespaces/db/tables/t/sign",
	} {
		r := do(t, s, "POST", path, body)
		if r.status != 200 || r.header["Cache-Control"] != "no-cache" {
			t.Fatalf("%s: %d %s", path, r.status, r.raw)
		}
		if r.body["uri"] != "http://localhost:7070/lake/wh/f.parquet" {
			t.Fatalf("%s: uri %v", path, r.body["uri"])
		}
		hdrs := r.body["headers"].(map[string]any)
		if _, ok := hdrs["Authorization"]; !ok {
			t.Fatalf("%s: no Authorization in %v", path, hdrs)
		}
	}
	for _, path := range []string{"/v2/aws/s3/sign", "/catalogx/v1/aws/s3/sign", "/v1/namespaces/db/tables/sign", "/v1/namespaces/%ZZ/tables/t/sign",
		"/v1/namespaces/db/tables/t%1Fx/sign", "/v1/p%1Fq/namespaces/db/tables/t/sign", "/v1/namespaces/db/tables/t%09/sign"} {
		if r := do(t, s, "POST", path, body); r.status != 404 || r.body["error"] == nil {
			t.Fatalf("%s: %d %s", path, r.status, r.raw)
		}
	}
	if r := do(t, s, "GET", "/v1/aws/s3/sign", ""); r.status != 405 || r.header["Allow"] != "POST" {
		t.Fatalf("GET: %d %v", r.status, r.header)
	}
	if r := do(t, s, "GET", "/healthz", ""); r.status != 200 {
		t.Fatalf("healthz: %d", r.status)
	}
	if r := do(t, s, "GET", "/readyz", ""); r.status != 200 {
		t.Fatalf("readyz: %d", r.status)
	}
}

func TestTableRouteReachesPolicy(t *testing.T) {
	// The table from the path is policy input: this policy allows only
	// table db.sub/t under prefix prod.
	rego := `package countersign.authz

default allow := false

allow if {
	input.table.prefix == "prod"
	input.table.namespace == ["db", "sub"]
	input.table.name == "t"
}
`
	s := newTestServer(t, rego, nil, Options{})
	body := signBody("GET", "http://localhost:7070/lake/wh/f.parquet")
	if r := do(t, s, "POST", "/v1/prod/namespaces/db%1Fsub/tables/t/sign", body); r.status != 200 {
		t.Fatalf("allowed table: %d %s", r.status, r.raw)
	}
	for _, path := range []string{"/v1/prod/namespaces/db/tables/t/sign", "/v1/namespaces/db%1Fsub/tables/t/sign", "/v1/aws/s3/sign"} {
		if r := do(t, s, "POST", path, body); r.status != 403 {
			t.Fatalf("%s: %d %s", path, r.status, r.raw)
		}
	}
}

func TestErrorsUseIcebergModel(t *testing.T) {
	s := newTestServer(t, testPolicy, nil, Options{})
	cases := []struct {
		body   string
		status int
		typ    string
		msg    string
	}{
		{`{`, 400, "BadRequestException", "invalid sign request"},
		{signBody("GET", "http://evil:7070/lake/k"), 403, "ForbiddenException", "not a configured S3 endpoint"},
		{signBody("GET", "http://localhost:7070/lake/denied/k"), 403, "ForbiddenException", "access denied: GetObject on arn:aws:s3:::lake/denied/k"},
		{signBody("GET", "http://localhost:7070/lake/denied/k?versionId=v9"), 403, "ForbiddenException", `access denied: GetObject on arn:aws:s3:::lake/denied/k (version "v9")`},
		{signBody("PUT", "http://localhost:7070/lake/k?acl"), 403, "ForbiddenException", "PutObjectAcl"},
		{signBody("GET", "http://localhost:7070/lake/a%2Fb"), 400, "BadRequestException", "canonical"},
	}
	for _, tc := range cases {
		r := do(t, s, "POST", "/v1/aws/s3/sign", tc.body)
		e, _ := r.body["error"].(map[string]any)
		if r.status != tc.status || e == nil || e["type"] != tc.typ || int(e["code"].(float64)) != tc.status ||
			!strings.Contains(e["message"].(string), tc.msg) {
			t.Errorf("%s: got %d %s", tc.body, r.status, r.raw)
		}
		if _, signed := r.body["headers"]; signed {
			t.Errorf("%s: error response carries headers", tc.body)
		}
	}
}

// TestPolicyErrorFailsClosed: a policy that cannot be evaluated (here a
// real OPA conflict error at evaluation time) refuses with 503 and
// Retry-After; nothing is signed.
func TestPolicyErrorFailsClosed(t *testing.T) {
	rego := `package countersign.authz

allow := true if input.resource.bucket == "lake"

allow := false if input.resource.key != ""
`
	s := newTestServer(t, rego, nil, Options{})
	r := do(t, s, "POST", "/v1/aws/s3/sign", signBody("GET", "http://localhost:7070/lake/k"))
	if r.status != http.StatusServiceUnavailable || r.header["Retry-After"] == "" {
		t.Fatalf("got %d %v %s", r.status, r.header, r.raw)
	}
	if strings.Contains(r.raw, "Authorization") || strings.Contains(r.raw, "conflict") {
		t.Fatalf("response leaks a signature or policy internals: %s", r.raw)
	}
}

// TestCredentialErrorFailsClosed: no credentials, no signature: 503.
func TestCredentialErrorFailsClosed(t *testing.T) {
	creds := aws.NewCredentialsCache(aws.CredentialsProviderFunc(func(context.Context) (aws.Credentials, error) {
		return aws.Credentials{}, context.DeadlineExceeded
	}))
	s := newTestServer(t, testPolicy, creds, Options{})
	r := do(t, s, "POST", "/v1/aws/s3/sign", signBody("GET", "http://localhost:7070/lake/k"))
	if r.status != http.StatusServiceUnavailable || r.header["Retry-After"] == "" || strings.Contains(r.raw, "Authorization") {
		t.Fatalf("got %d %v %s", r.status, r.header, r.raw)
	}
}

func TestNewHandlerRequiresEveryStage(t *testing.T) {
	if _, err := NewHandler(Stages{}, Options{}, nil); err == nil {
		t.Fatal("a handler without an authorizer was built")
	}
}

func TestCacheableReads(t *testing.T) {
	s := newTestServer(t, testPolicy, nil, Options{CacheableReads: true})
	if r := do(t, s, "POST", "/v1/aws/s3/sign", signBody("GET", "http://localhost:7070/lake/k")); r.header["Cache-Control"] != "private" {
		t.Fatalf("GET: %v", r.header)
	}
	if r := do(t, s, "POST", "/v1/aws/s3/sign", signBody("DELETE", "http://localhost:7070/lake/k")); r.header["Cache-Control"] != "no-cache" {
		t.Fatalf("DELETE: %v", r.header)
	}
}

// FuzzServeSign pushes arbitrary bodies through the whole pipeline (decode,
// classify, OPA, sign). No input may panic; every answer is either a signed
// 200 with an Authorization header or an Iceberg error without one.
func FuzzServeSign(f *testing.F) {
	f.Add(signBody("GET", "http://localhost:7070/lake/k"))
	f.Add(signBody("POST", "http://localhost:7070/lake?delete"))
	f.Add(`{"region":"us-east-1","uri":"http://localhost:7070/lake?delete","method":"POST","headers":{},"body":"<Delete><Object><Key>a</Key></Object></Delete>"}`)
	f.Add(`{"region":"us-east-1","uri":"http://lake.localhost:7070/k","method":"PUT","headers":{"x-amz-copy-source":["lake/x"]},"provider":null}`)
	f.Add(`{"region":null}`)
	s := newTestServer(f, testPolicy, nil, Options{})
	f.Fuzz(func(t *testing.T, body string) {
		r := do(t, s, "POST", "/v1/aws/s3/sign", body)
		switch {
		case r.status == 200:
			h, _ := r.body["headers"].(map[string]any)
			if h["Authorization"] == nil {
				t.Fatalf("200 without Authorization: %s", r.raw)
			}
		case r.status >= 400 && r.status < 600:
			if r.body["error"] == nil || strings.Contains(r.raw, "AWS4-HMAC-SHA256 Credential") {
				t.Fatalf("bad error response %d: %s", r.status, r.raw)
			}
		default:
			t.Fatalf("status %d", r.status)
		}
	})
}

// TestAuthentication: no token, a bad token or an expired one gets 401 with
// the reason class and nothing signed; the principal reaches the policy.
func TestAuthentication(t *testing.T) {
	rego := `package countersign.authz

default allow := false

allow if {
	input.principal.id == "alice"
	"analysts" in input.principal.groups
	input.principal.issuer == "https://idp.test"
}
`
	s := newTestServer(t, rego, nil, Options{})
	body := signBody("GET", "http://localhost:7070/lake/k")
	cases := []struct {
		authorization string
		status        int
		msg           string
	}{
		{"Bearer " + aliceToken(), 200, ""},
		{"", 401, "(missing_token)"},
		{"Basic YWxpY2U6cHc=", 401, "(missing_token)"},
		{"Bearer not.a.jwt", 401, "(malformed_token)"},
		{"Bearer " + mintToken("alice", time.Now().Add(-time.Hour), "analysts"), 401, "(expired)"},
		{"Bearer " + mintToken("bob", time.Now().Add(time.Hour), "analysts"), 403, "access denied"},
		{"Bearer " + mintToken("alice", time.Now().Add(time.Hour), "others"), 403, "access denied"},
		{"Bearer " + aliceToken()[:len(aliceToken())-2] + "AA", 401, "(bad_signature)"},
	}
	for i, tc := range cases {
		r := doAs(t, s, tc.authorization, "POST", "/v1/aws/s3/sign", body)
		if r.status != tc.status {
			t.Fatalf("case %d: %d %s", i, r.status, r.raw)
		}
		if tc.status == 200 {
			continue
		}
		e := r.body["error"].(map[string]any)
		if !strings.Contains(e["message"].(string), tc.msg) || strings.Contains(r.raw, "AWS4-HMAC") {
			t.Fatalf("case %d: %s", i, r.raw)
		}
		if tc.status == 401 && (e["type"] != "NotAuthorizedException" || r.header["WWW-Authenticate"] == "") {
			t.Fatalf("case %d: %s %v", i, r.raw, r.header)
		}
		// RFC 6750 §3: an error code when a token was refused, none when
		// the request carried none.
		if tc.status == 401 && strings.Contains(r.header["WWW-Authenticate"], `error="invalid_token"`) == (tc.msg == "(missing_token)") {
			t.Fatalf("case %d: WWW-Authenticate %q", i, r.header["WWW-Authenticate"])
		}
		if tok := strings.TrimPrefix(tc.authorization, "Bearer "); len(tok) > 20 && strings.Contains(r.raw, tok) {
			t.Fatalf("case %d: the token is echoed", i)
		}
	}
}

func TestMetricsEndpoint(t *testing.T) {
	m := metrics.New()
	s := newTestServer(t, testPolicy, nil, Options{Metrics: m})
	do(t, s, "POST", "/v1/aws/s3/sign", signBody("GET", "http://localhost:7070/lake/k"))
	do(t, s, "POST", "/v1/aws/s3/sign", signBody("GET", "http://localhost:7070/lake/denied/k"))
	doAs(t, s, "", "POST", "/v1/aws/s3/sign", signBody("GET", "http://localhost:7070/lake/k"))
	r := do(t, s, "GET", "/metrics", "")
	for _, want := range []string{
		`countersign_requests_total{route="legacy",status="200"} 1`,
		`countersign_requests_total{route="legacy",status="403"} 1`,
		`countersign_requests_total{route="legacy",status="401"} 1`,
		`countersign_decisions_total{action="s3:GetObject",result="allow"} 1`,
		`countersign_decisions_total{action="s3:GetObject",result="deny"} 1`,
		`countersign_auth_failures_total{reason="missing_token"} 1`,
	} {
		if !strings.Contains(r.raw, want) {
			t.Errorf("/metrics lacks %s", want)
		}
	}
}

// TestNoPolicyLoadedFailsClosed: an authorizer with no policy loaded (the
// zero policy.Manager) refuses to sign with 503, never allows.
func TestNoPolicyLoadedFailsClosed(t *testing.T) {
	s := newTestServer(t, testPolicy, nil, Options{})
	s.handler.stages.Authorizer = &policy.Manager{}
	r := do(t, s, "POST", "/v1/aws/s3/sign", signBody("GET", "http://localhost:7070/lake/k"))
	if r.status != http.StatusServiceUnavailable || r.header["Retry-After"] == "" || strings.Contains(r.raw, "AWS4-HMAC") {
		t.Fatalf("got %d %v %s", r.status, r.header, r.raw)
	}
}

func TestRateLimitPerPrincipal(t *testing.T) {
	s := newTestServer(t, testPolicy, nil, Options{RateLimit: RateLimit{PerSecond: 0.5, Burst: 2}})
	body := signBody("GET", "http://localhost:7070/lake/k")
	for i := range 2 {
		if r := do(t, s, "POST", "/v1/aws/s3/sign", body); r.status != 200 {
			t.Fatalf("request %d within burst: %d", i, r.status)
		}
	}
	r := do(t, s, "POST", "/v1/aws/s3/sign", body)
	if r.status != http.StatusTooManyRequests || r.header["Retry-After"] == "" || strings.Contains(r.raw, "AWS4-HMAC") {
		t.Fatalf("over the limit: %d %v %s", r.status, r.header, r.raw)
	}
	// Another principal has its own budget.
	other := mintToken("bob", time.Now().Add(time.Hour), "analysts")
	if r := doAs(t, s, "Bearer "+other, "POST", "/v1/aws/s3/sign", body); r.status != 200 {
		t.Fatalf("other principal: %d %s", r.status, r.raw)
	}
}

func TestRequestID(t *testing.T) {
	s := newTestServer(t, testPolicy, nil, Options{})
	var ctx fasthttp.RequestCtx
	ctx.Request.Header.SetMethod("POST")
	ctx.Request.SetRequestURI("/v1/aws/s3/sign")
	ctx.Request.Header.Set("Authorization", "Bearer "+aliceToken())
	ctx.Request.Header.Set("X-Request-Id", "trace-123")
	ctx.Request.SetBodyString(signBody("GET", "http://localhost:7070/lake/k"))
	s.Handler()(&ctx)
	if got := string(ctx.Response.Header.Peek("X-Request-Id")); got != "trace-123" {
		t.Fatalf("X-Request-Id = %q", got)
	}
	ctx.Request.Header.Set("X-Request-Id", "bad id\x01")
	s.Handler()(&ctx)
	if got := string(ctx.Response.Header.Peek("X-Request-Id")); got == "" || strings.Contains(got, " ") {
		t.Fatalf("generated X-Request-Id = %q", got)
	}
}

func TestAdminHandler(t *testing.T) {
	m := metrics.New()
	s := newTestServer(t, testPolicy, nil, Options{Metrics: m})
	do(t, s, "POST", "/v1/aws/s3/sign", signBody("GET", "http://localhost:7070/lake/k"))
	admin := s.AdminHandler()
	for path, want := range map[string]string{
		"/metrics":      `countersign_stage_seconds_count{stage="sign"} 1`,
		"/readyz":       "ready",
		"/healthz":      "ok",
		"/debug/pprof/": "goroutine",
	} {
		rec := httptest.NewRecorder()
		admin.ServeHTTP(rec, httptest.NewRequest("GET", path, nil))
		if rec.Code != 200 || !strings.Contains(rec.Body.String(), want) {
			t.Errorf("%s: %d, body lacks %q", path, rec.Code, want)
		}
	}
	s.DisableMetricsOnSignListener()
	if r := do(t, s, "GET", "/metrics", ""); r.status != 404 {
		t.Fatalf("/metrics still on the sign listener: %d", r.status)
	}
}

// TestAuditRecordsPerObject: every object gets its own record with its own
// decision, and every kind of refusal is recorded, before the answer.
func TestAuditRecordsPerObject(t *testing.T) {
	dir := t.TempDir()
	s := newTestServer(t, testPolicy, nil, Options{})
	s.handler.stages.Audit = openTestAuditIn(t, dir)

	del := `<Delete><Object><Key>wh/a</Key></Object><Object><Key>denied/b</Key></Object><Object><Key>wh/c</Key></Object></Delete>`
	body, _ := json.Marshal(map[string]any{"region": "us-east-1", "uri": "http://localhost:7070/lake?delete", "method": "POST",
		"headers": map[string][]string{}, "body": del})
	if r := do(t, s, "POST", "/v1/aws/s3/sign", string(body)); r.status != 403 {
		t.Fatalf("DeleteObjects: %d %s", r.status, r.raw)
	}
	if r := do(t, s, "POST", "/v1/aws/s3/sign", signBody("GET", "http://localhost:7070/lake/wh/ok")); r.status != 200 {
		t.Fatalf("GET: %d", r.status)
	}
	doAs(t, s, "", "POST", "/v1/aws/s3/sign", signBody("GET", "http://localhost:7070/lake/wh/ok"))
	do(t, s, "POST", "/v1/aws/s3/sign", "{not json")

	fsys, err := audit.DirFS(dir)
	if err != nil {
		t.Fatal(err)
	}
	type row struct {
		key, decision string
		status        int
		signed        bool
	}
	var got []row
	err = audit.Query(context.Background(), fsys, audit.Filter{Kind: audit.KindAccess}, func(rec *audit.Record, _ []byte) error {
		got = append(got, row{rec.Key, string(rec.Decision), rec.Status, rec.Signing != nil})
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	want := []row{
		{"wh/a", "allow", 403, false}, {"denied/b", "deny", 403, false}, {"wh/c", "allow", 403, false},
		{"wh/ok", "allow", 200, true},
		{"", "unauthenticated", 401, false},
		{"", "malformed", 400, false},
	}
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Fatalf("records\n got %v\nwant %v", got, want)
	}
	rotations := 0
	audit.Query(context.Background(), fsys, audit.Filter{Kind: audit.KindLifecycle}, func(rec *audit.Record, _ []byte) error {
		if rec.Event == audit.EventKeyRotation && rec.Detail["access_key_id"] == "AKTEST" {
			rotations++
		}
		return nil
	})
	if rotations != 1 {
		t.Fatalf("key_rotation records for the first signing key: %d, want 1", rotations)
	}
	vkey, _ := os.ReadFile(dir + ".vkey")
	verifiers, err := audit.ParseVerifiers(string(vkey))
	if err != nil {
		t.Fatal(err)
	}
	if res, err := audit.Verify(fsys, audit.VerifyOptions{Verifiers: verifiers}); err != nil {
		t.Fatalf("verify: %v %+v", err, res)
	}
}
