package e2e

import (
	"bufio"
	"bytes"
	"crypto"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/hmac"
	"crypto/rand"
	"crypto/rsa"
	"crypto/sha256"
	"crypto/sha512"
	"crypto/x509"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"encoding/pem"
	"fmt"
	"io"
	"net"
	"net/http"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
	"testing"
	"time"
)

// The adversarial suite attacks countersign through its HTTP endpoint, the
// way a hostile engine, a caller without a token or a confused client
// would. Every case asserts the refusal (status and a fragment of the
// message naming the rule) and that nothing was signed: the response
// carries no Authorization header and no SigV4 material at all. Positive
// controls first prove that the same harness signs the honest variant of
// each request, and that versitygw accepts it, so a refusal below is the
// check it targets and not a broken setup.
//
// One countersign and one versitygw serve the whole table. The policy is
// testdata/adversarial/authz.rego composed with the shipped guardrails
// (deploy/policies/lib, loaded beside it): group "engineers" may use bucket "lake"
// except "denied/"; admin operations and dangerous headers are refused.

// advReadTimeout is countersign's limits.read_timeout for this suite, short
// so that the slow-client cases finish quickly.
const advReadTimeout = 2 * time.Second

// signedRE matches SigV4 material in an answer.
var signedRE = regexp.MustCompile(`"Authorization"\s*:|Credential=[A-Z0-9]+/|Signature=[0-9a-f]{64}`)

// policyPathsRE finds baseConfig's policy section.
var policyPathsRE = regexp.MustCompile(`policy:\n  paths: \[[^\]\n]*\]\n`)

// noAuth, as advCase.auth, sends no Authorization header at all.
const noAuth = "-"

// advCase is one attack.
type advCase struct {
	cat, name string

	// The sign request, JSON-encoded: method, uri, region ("" means
	// us-east-1), headers (nil means the Java client's usual ones), body.
	method, uri, region string
	headers             map[string][]string
	body                *string
	// raw, when set, is sent verbatim as the HTTP body instead.
	raw []byte
	// auth is the Authorization header ("" means a valid engineers'
	// bearer token, noAuth means none). route "" is the legacy route.
	auth, route string
	// custom runs a transport-level attack itself.
	custom func(t *testing.T) advResult

	status int
	msg    string // fragment of the error message
	// orClosed also accepts a connection closed without an answer: a
	// server that refuses a slow or oversized request early may reset the
	// connection before the client has read the error.
	orClosed bool
}

// advResult is what came back: status 0 means the server closed the
// connection without an answer.
type advResult struct {
	status int
	header http.Header
	body   []byte
}

type advHarness struct {
	s3    *s3Server
	cs    *signerProc
	token string
}

func newAdversarialHarness(t *testing.T) *advHarness {
	t.Helper()
	srv := startS3(t)
	srv.CreateBucket(t, "lake")
	srv.CreateBucket(t, "private")
	own, err := filepath.Abs("testdata/adversarial")
	if err != nil {
		t.Fatal(err)
	}
	guard, err := filepath.Abs("../deploy/policies/lib")
	if err != nil {
		t.Fatal(err)
	}
	cfg := policyPathsRE.ReplaceAllLiteralString(baseConfig(t, srv.Port),
		"policy:\n  paths: ["+quote(own)+", "+quote(guard)+"]\n")
	if !strings.Contains(cfg, guard) {
		t.Fatalf("baseConfig has no policy.paths line to replace:\n%s", cfg)
	}
	cfg += "limits:\n  read_timeout: " + advReadTimeout.String() + "\n"
	cs := startCountersign(t, cfg, secretEnv()...)
	return &advHarness{s3: srv, cs: cs, token: testIdP.Mint("mallory", []string{"engineers"}, nil)}
}

// post sends one sign request with exactly the given Authorization header.
func (h *advHarness) post(t *testing.T, route, authorization string, body []byte) advResult {
	t.Helper()
	if route == "" {
		route = "/v1/aws/s3/sign"
	}
	req, err := http.NewRequest("POST", h.cs.url+route, bytes.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/json")
	if authorization != "" {
		req.Header.Set("Authorization", authorization)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	data, _ := io.ReadAll(resp.Body)
	return advResult{status: resp.StatusCode, header: resp.Header, body: data}
}

func (h *advHarness) run(t *testing.T, tc advCase) advResult {
	t.Helper()
	if tc.custom != nil {
		return tc.custom(t)
	}
	body := tc.raw
	if body == nil {
		sr := signRequest{Region: tc.region, URI: tc.uri, Method: tc.method, Headers: tc.headers, Body: tc.body}
		if sr.Region == "" {
			sr.Region = testRegion
		}
		if sr.Headers == nil {
			sr.Headers = javaHeaders()
		}
		var err error
		if body, err = json.Marshal(sr); err != nil {
			t.Fatal(err)
		}
	}
	authorization := "Bearer " + h.token
	switch tc.auth {
	case "":
	case noAuth:
		authorization = ""
	default:
		authorization = tc.auth
	}
	return h.post(t, tc.route, authorization, body)
}

// assertNotSigned fails if anything in the answer looks like a signature.
func assertNotSigned(t *testing.T, r advResult) {
	t.Helper()
	// Error messages may name a header the client sent, never a value
	// countersign computed: a SigV4 Authorization value, or a result's
	// header map, means something was signed.
	if signedRE.Match(r.body) {
		t.Fatalf("refused request carries a signature:\n%s", r.body)
	}
	if r.header.Get("Authorization") != "" || r.header.Get("X-Amz-Security-Token") != "" {
		t.Fatalf("response has an Authorization or X-Amz-Security-Token header")
	}
	var res signResult
	if json.Unmarshal(r.body, &res) == nil && (res.Headers != nil || res.URI != "") {
		t.Fatalf("refused request returned a sign result: %s", r.body)
	}
}

func TestAdversarial(t *testing.T) {
	h := newAdversarialHarness(t)
	port := h.s3.Port
	P := fmt.Sprintf("http://localhost:%d", port)  // path-style, host name
	IP := fmt.Sprintf("http://127.0.0.1:%d", port) // path-style only, IP literal
	V := func(bucket string) string { return fmt.Sprintf("http://%s.localhost:%d", bucket, port) }
	hp := fmt.Sprintf("localhost:%d", port)

	t.Run("controls", func(t *testing.T) { h.controls(t, P, V, IP) })

	cases := slicesConcat(
		uriCases(P, IP, V),
		hostCases(P, V, port),
		endpointCases(P, port),
		subresourceCases(P, V),
		methodCases(P),
		headerCases(P, hp),
		deleteCases(P),
		copyCases(P),
		jsonCases(P),
		transportCases(h),
		jwtCases(P),
	)

	perCat := map[string]int{}
	for _, tc := range cases {
		perCat[tc.cat]++
		t.Run(tc.cat+"/"+tc.name, func(t *testing.T) {
			r := h.run(t, tc)
			assertNotSigned(t, r)
			if r.status == 0 && tc.orClosed {
				t.Logf("connection closed without an answer")
				return
			}
			if r.status != tc.status {
				t.Fatalf("status %d, want %d\n%s", r.status, tc.status, r.body)
			}
			var ie icebergError
			if err := json.Unmarshal(r.body, &ie); err != nil || ie.Error.Code != r.status || ie.Error.Type == "" {
				t.Fatalf("answer is not Iceberg's error model: %v\n%s", err, r.body)
			}
			if !strings.Contains(ie.Error.Message, tc.msg) {
				t.Fatalf("message %q does not contain %q", ie.Error.Message, tc.msg)
			}
			if r.status == http.StatusUnauthorized && r.header.Get("WWW-Authenticate") == "" {
				t.Fatalf("401 without WWW-Authenticate")
			}
		})
	}

	// After every attack the server still serves: ready, and signing the
	// honest request.
	resp, err := http.Get(h.cs.url + "/readyz")
	if err != nil || resp.StatusCode != http.StatusOK {
		t.Fatalf("readyz after the attacks: %v %v", err, resp)
	}
	resp.Body.Close()
	if r := h.run(t, advCase{method: "GET", uri: P + "/lake/wh/ok.parquet"}); r.status != http.StatusOK {
		t.Fatalf("honest request after the attacks: %d %s", r.status, r.body)
	}

	names := make([]string, 0, len(perCat))
	for c := range perCat {
		names = append(names, c)
	}
	sort.Strings(names)
	var summary []string
	for _, c := range names {
		summary = append(summary, fmt.Sprintf("%s=%d", c, perCat[c]))
	}
	t.Logf("%d adversarial cases: %s", len(cases), strings.Join(summary, " "))
	if len(cases) < 80 {
		t.Fatalf("only %d adversarial cases", len(cases))
	}
}

func slicesConcat(parts ...[]advCase) []advCase {
	var out []advCase
	for _, p := range parts {
		out = append(out, p...)
	}
	return out
}

func sp(s string) *string { return &s }

// controls: the honest variants of the attacks are signed, and the S3
// server accepts them. Without these a refusal could be a broken setup.
func (h *advHarness) controls(t *testing.T, P string, V func(string) string, IP string) {
	obj := "wh/t/data/ok.parquet"
	put := func(name, uri string, headers map[string][]string, body []byte) {
		t.Helper()
		r := h.run(t, advCase{method: "PUT", uri: uri, headers: headers})
		if r.status != http.StatusOK {
			t.Fatalf("%s: sign %d %s", name, r.status, r.body)
		}
		var res signResult
		json.Unmarshal(r.body, &res)
		if st, body := h.s3.send(t, "PUT", res.URI, res.Headers, body); st != http.StatusOK {
			t.Fatalf("%s: S3 answered %d %s", name, st, body)
		}
	}
	par := []byte("PAR1")
	put("path-style PUT", P+"/lake/"+obj, nil, par)
	put("virtual-hosted PUT", V("lake")+"/"+obj+".v", nil, par)
	put("IP path-style PUT", IP+"/lake/"+obj+".ip", nil, par)
	put("copy inside the grant", P+"/lake/"+obj+".copy", javaHeaders("x-amz-copy-source", "lake/"+obj), nil)

	get := advCase{method: "GET", uri: P + "/lake/" + obj}
	for _, auth := range []string{"Bearer " + h.token, "bearer " + h.token, "BEARER " + h.token} {
		get.auth = auth
		r := h.run(t, get)
		if r.status != http.StatusOK {
			t.Fatalf("GET with %q scheme: %d %s", strings.Fields(auth)[0], r.status, r.body)
		}
		var res signResult
		json.Unmarshal(r.body, &res)
		if st, body := h.s3.send(t, "GET", res.URI, res.Headers, nil); st != http.StatusOK || string(body) != "PAR1" {
			t.Fatalf("GET: S3 answered %d %s", st, body)
		}
	}

	del := deleteXML("wh/t/a.parquet", "wh/t/b.parquet")
	ds := string(del)
	for name, hdr := range map[string]map[string][]string{
		"Content-MD5":           javaHeaders("Content-MD5", md5Base64(del)),
		"x-amz-checksum-sha256": javaHeaders("x-amz-checksum-sha256", sha256Base64(del)),
		"payload hash":          javaHeaders(),
	} {
		r := h.run(t, advCase{method: "POST", uri: P + "/lake?delete", headers: hdr, body: &ds})
		if r.status != http.StatusOK {
			t.Fatalf("DeleteObjects bound by %s: %d %s", name, r.status, r.body)
		}
		if name == "payload hash" {
			continue // S3 also wants Content-MD5 or a checksum; signing it is the point here
		}
		var res signResult
		json.Unmarshal(r.body, &res)
		if st, body := h.s3.send(t, "POST", res.URI, res.Headers, del); st != http.StatusOK {
			t.Fatalf("DeleteObjects bound by %s: S3 answered %d %s", name, st, body)
		}
	}
	r := h.run(t, advCase{method: "GET", uri: P + "/lake?list-type=2&prefix=wh%2Ft%2F"})
	if r.status != http.StatusOK {
		t.Fatalf("ListObjectsV2: %d %s", r.status, r.body)
	}
}

func uriCases(P, IP string, V func(string) string) []advCase {
	c := func(name, uri string, status int, msg string) advCase {
		return advCase{cat: "uri-encoding", name: name, method: "GET", uri: uri, status: status, msg: msg}
	}
	const canon = "canonical S3 encoding"
	return []advCase{
		c("encoded slash in key", P+"/lake/wh%2Fdenied%2Fx", 400, canon),
		c("lower-case encoded slash", P+"/lake/wh/a%2fb", 400, canon),
		c("encoded slash splits bucket", P+"/lake%2Fdenied/x", 400, "invalid character"),
		c("percent-encoded bucket", P+"/%6Cake/wh/x", 400, "invalid character"),
		c("double encoding, nested escape", P+"/lake/wh/%%32%46denied", 400, "invalid percent escape"),
		c("double encoding, escape inside escape", P+"/lake/wh/%2%46denied", 400, "invalid percent escape"),
		c("over-encoded unreserved", P+"/lake/%64enied/x", 400, canon),
		c("truncated escape", P+"/lake/wh/x%4", 400, "truncated percent escape"),
		c("NUL byte", P+"/lake/wh/a%00.parquet", 400, "control character"),
		c("encoded newline", P+"/lake/wh/a%0A.parquet", 400, "control character"),
		c("dot-dot segment", P+"/lake/wh/../denied/x", 400, `".." path segment`),
		c("dot segment", P+"/lake/./denied/x", 400, `"." path segment`),
		c("encoded dot-dot", P+"/lake/wh/%2E%2E/denied/x", 400, canon),
		c("lower-case encoded dot-dot", P+"/lake/wh/%2e%2e/denied/x", 400, canon),
		c("double slash in key", P+"/lake//denied/x", 400, "empty path segment"),
		c("double slash before bucket", P+"//lake/wh/x", 400, "empty bucket segment"),
		c("trailing slash", P+"/lake/wh/", 400, "empty path segment"),
		c("overlong dot %C0%AE", P+"/lake/wh/%C0%AE%C0%AE/denied/x", 400, "not valid UTF-8"),
		c("overlong slash %C0%AF", P+"/lake/wh%C0%AFdenied", 400, "not valid UTF-8"),
		c("three-byte overlong dot", P+"/lake/wh/%E0%80%AE%E0%80%AE/x", 400, "not valid UTF-8"),
		c("lone continuation byte", P+"/lake/wh/%80x", 400, "not valid UTF-8"),
		c("fullwidth solidus look-alike", P+"/lake/wh\uff0fdenied", 400, canon),
		c("cyrillic look-alike in key", P+"/lake/d\u0435nied/x", 400, canon),
		c("backslash", P+`/lake/wh\..\denied\x`, 400, canon),
		c("space", P+"/lake/wh/a b", 400, canon),
		c("raw plus", P+"/lake/wh/a+b", 400, "raw '+'"),
		c("semicolon path parameter", P+"/lake/wh/x;type=a", 400, canon),
		c("fragment", P+"/lake/wh/x#frag", 400, "fragment"),
		c("key longer than 1024 bytes", P+"/lake/wh/"+strings.Repeat("a", 1030), 400, "longer than 1024"),
		c("tab in uri", P+"/lake/wh/a\tb", 400, "control characters"),
		c("encoded slash on the IP endpoint", IP+"/lake/wh%2Fdenied%2Fx", 400, canon),
		c("dot-dot on the IP endpoint", IP+"/lake/wh/../denied/x", 400, `".." path segment`),
		c("dot-dot, virtual-hosted", V("lake")+"/wh/../denied/x", 400, `".." path segment`),
		c("encoded slash, virtual-hosted", V("lake")+"/wh%2F..%2Fdenied", 400, canon),
		c("relative uri", "/lake/wh/x", 400, "absolute"),
		c("upper-case scheme", strings.Replace(P, "http", "HTTP", 1)+"/lake/wh/x", 400, "lower-case scheme"),
	}
}

func hostCases(P string, V func(string) string, port int) []advCase {
	c := func(name, uri string, status int, msg string) advCase {
		return advCase{cat: "host", name: name, method: "GET", uri: uri, status: status, msg: msg}
	}
	p := fmt.Sprint(port)
	return []advCase{
		c("mixed-case host", "http://LocalHost:"+p+"/lake/wh/x", 400, "lower-case"),
		c("mixed-case virtual host", "http://Lake.localhost:"+p+"/wh/x", 400, "lower-case"),
		c("trailing dot", "http://localhost.:"+p+"/lake/wh/x", 400, "must not end with a dot"),
		c("trailing dot, virtual", "http://lake.localhost.:"+p+"/wh/x", 400, "must not end with a dot"),
		c("empty label", "http://.localhost:"+p+"/wh/x", 400, "empty label"),
		c("port with leading zero", "http://localhost:0"+p+"/lake/wh/x", 400, "port"),
		c("empty port", "http://localhost:/lake/wh/x", 400, "port is empty"),
		c("port out of range", "http://localhost:99999/lake/wh/x", 400, "port"),
		c("explicit default port", "http://localhost:80/lake/wh/x", 403, "not a configured S3 endpoint"),
		c("IPv6 loopback", "http://[::1]:"+p+"/lake/wh/x", 403, "not a configured S3 endpoint"),
		c("IPv6 non-canonical", "http://[0:0:0:0:0:0:0:1]:"+p+"/lake/wh/x", 400, "canonical form"),
		c("IPv4-mapped IPv6", "http://[::ffff:127.0.0.1]:"+p+"/lake/wh/x", 403, "not a configured S3 endpoint"),
		c("IPv6 zone", "http://[fe80::1%25lo]:"+p+"/lake/wh/x", 400, "IPv6"),
		c("decimal IPv4", "http://2130706433:"+p+"/lake/wh/x", 403, "not a configured S3 endpoint"),
		c("short IPv4", "http://127.1:"+p+"/lake/wh/x", 403, "not a configured S3 endpoint"),
		c("userinfo", "http://user:pw@localhost:"+p+"/lake/wh/x", 400, "user information"),
		c("userinfo hiding another host", "http://localhost:"+p+"@evil.example/lake/wh/x", 400, "user information"),
		c("percent-encoded host", "http://lo%63alhost:"+p+"/lake/wh/x", 400, "invalid character"),
		c("cyrillic look-alike host", "http://l\u043ecalhost:"+p+"/lake/wh/x", 400, "invalid character"),
		c("backslash in host", "http://evil.example\\.localhost:"+p+"/lake/wh/x", 400, "invalid character"),
		c("space in host", "http://local host:"+p+"/lake/wh/x", 400, "invalid character"),
		// Virtual-hosted versus path-style: the bucket in the host wins,
		// and the path is all key.
		c("bucket in host, other bucket in path", V("private")+"/lake/wh/x", 403, "arn:aws:s3:::private/lake/wh/x"),
		c("nested bucket label", "http://lake.private.localhost:"+p+"/wh/x", 403, "arn:aws:s3:::lake.private/wh/x"),
		c("virtual-hosted on the path-only IP endpoint", "http://lake.127.0.0.1:"+p+"/wh/x", 403, "not a configured S3 endpoint"),
		c("virtual host, denied key", V("lake")+"/denied/x", 403, "arn:aws:s3:::lake/denied/x"),
		c("bucket too short in host", V("ab")+"/wh/x", 400, "3 to 63"),
		c("upper-case bucket in path", P+"/Lake/wh/x", 400, "invalid character"),
		c("IP address as bucket", P+"/192.168.1.1/wh/x", 400, "IP address"),
		{cat: "host", name: "Host header names another bucket", method: "GET", uri: P + "/lake/wh/x",
			headers: javaHeaders("Host", "private.localhost:"+p), status: 400, msg: "Host must equal"},
		{cat: "host", name: "Host header drops the bucket label", method: "GET", uri: V("lake") + "/wh/x",
			headers: javaHeaders("Host", "localhost:"+p), status: 400, msg: "Host must equal"},
		{cat: "host", name: "Host header twice", method: "GET", uri: P + "/lake/wh/x",
			headers: javaHeaders("Host", "localhost:"+p, "Host", "private.localhost:"+p), status: 400, msg: "Host must equal"},
	}
}

func endpointCases(P string, port int) []advCase {
	c := func(name, uri, region string, status int, msg string) advCase {
		return advCase{cat: "endpoint-region", name: name, method: "GET", uri: uri, region: region, status: status, msg: msg}
	}
	p := fmt.Sprint(port)
	return []advCase{
		c("unknown host", "http://evil.example:"+p+"/lake/wh/x", "", 403, "not a configured S3 endpoint"),
		c("suffix of a configured host", "http://evillocalhost:"+p+"/lake/wh/x", "", 403, "not a configured S3 endpoint"),
		c("configured host as prefix", "http://localhost.evil.example:"+p+"/lake/wh/x", "", 403, "not a configured S3 endpoint"),
		c("other port", "http://localhost:"+fmt.Sprint(port^1)+"/lake/wh/x", "", 403, "not a configured S3 endpoint"),
		c("https to an http endpoint", "https://localhost:"+p+"/lake/wh/x", "", 403, "not a configured S3 endpoint"),
		c("Amazon S3 not configured", "https://lake.s3.amazonaws.com/wh/x", "", 403, "not a configured S3 endpoint"),
		c("region not allowed", P+"/lake/wh/x", "eu-west-1", 403, `region "eu-west-1" is not allowed`),
		c("upper-case region", P+"/lake/wh/x", "US-EAST-1", 403, "is not allowed"),
		c("region with a slash", P+"/lake/wh/x", "us-east-1/s3/aws4_request", 403, "is not allowed"),
		{cat: "endpoint-region", name: "empty region", raw: []byte(`{"region":"","uri":"` + P + `/lake/wh/x","method":"GET","headers":{}}`),
			status: 400, msg: `"region"`},
	}
}

func subresourceCases(P string, V func(string) string) []advCase {
	c := func(name, method, uri string, status int, msg string) advCase {
		return advCase{cat: "subresource", name: name, method: method, uri: uri, status: status, msg: msg}
	}
	obj := P + "/lake/wh/x"
	return []advCase{
		c("duplicate query key", "GET", obj+"?x-id=GetObject&x-id=PutObject", 400, "appears more than once"),
		c("duplicate uploadId", "PUT", obj+"?partNumber=1&uploadId=a&uploadId=b", 400, "appears more than once"),
		c("case-varied marker", "PUT", obj+"?partNumber=1&UploadId=a", 403, "Unknown"),
		c("object acl", "GET", obj+"?acl", 403, "GetObjectAcl"),
		c("put object acl", "PUT", obj+"?acl", 403, "PutObjectAcl"),
		c("encoded acl marker", "PUT", obj+"?%61cl", 403, "PutObjectAcl"),
		c("bucket policy", "PUT", P+"/lake?policy", 403, "PutBucketPolicy"),
		c("object retention", "PUT", obj+"?retention", 403, "PutObjectRetention"),
		c("legal hold", "PUT", obj+"?legal-hold", 403, "PutObjectLegalHold"),
		c("bucket versioning", "PUT", V("lake")+"/?versioning", 403, "PutBucketVersioning"),
		c("bucket lifecycle", "PUT", P+"/lake?lifecycle", 403, "PutBucketLifecycleConfiguration"),
		c("two markers", "GET", obj+"?tagging&acl", 403, "Unknown"),
		c("marker with a value", "POST", obj+"?uploads=x", 403, "Unknown"),
		c("unknown parameter", "GET", obj+"?foo=bar", 403, "Unknown"),
		c("list-type 1", "GET", P+"/lake?list-type=1", 403, "Unknown"),
		c("presigned SigV4 signature", "GET", obj+"?X-Amz-Signature=00", 400, "presigned-URL parameter"),
		c("presigned credential, lower-case", "GET", obj+"?x-amz-credential=AK%2F20260101", 400, "presigned-URL parameter"),
		c("presigned security token", "GET", obj+"?X-Amz-Security-Token=tok", 400, "presigned-URL parameter"),
		c("presigned SigV2", "GET", obj+"?AWSAccessKeyId=AK&Expires=1&Signature=x", 400, "presigned-URL parameter"),
		c("semicolon separator", "GET", obj+"?x-id=GetObject;acl", 400, "query"),
		c("semicolon in marker", "GET", obj+"?acl;x=1", 400, "must not contain ';'"),
		c("raw plus in prefix", "GET", P+"/lake?list-type=2&prefix=a+b", 400, "raw '+'"),
		c("empty key", "GET", obj+"?=x", 400, "without a name"),
		c("empty parameter", "GET", obj+"?&acl", 400, "empty parameter"),
		c("list prefix with dot-dot", "GET", P+"/lake?list-type=2&prefix=wh%2F..%2Fdenied%2F", 400, `".."`),
		c("list prefix outside grant", "GET", P+"/private?list-type=2&prefix=", 403, "ListObjectsV2 on arn:aws:s3:::private"),
	}
}

func methodCases(P string) []advCase {
	c := func(name, method, uri string, status int, msg string) advCase {
		return advCase{cat: "method", name: name, method: method, uri: uri, status: status, msg: msg}
	}
	obj := P + "/lake/wh/x"
	return []advCase{
		c("POST object without uploads", "POST", obj, 403, "Unknown"),
		c("PATCH object", "PATCH", obj, 403, "Unknown"),
		c("OPTIONS object", "OPTIONS", obj, 403, "Unknown"),
		c("GET ?delete", "GET", P+"/lake?delete", 403, "Unknown"),
		c("POST ?uploads on the bucket", "POST", P+"/lake?uploads", 403, "Unknown"),
		c("HEAD ?uploadId", "HEAD", obj+"?uploadId=a", 403, "Unknown"),
		c("PUT bucket", "PUT", P+"/lake", 403, "CreateBucket"),
		c("DELETE bucket", "DELETE", P+"/lake", 403, "DeleteBucket"),
		c("list buckets", "GET", P+"/", 403, "ListBuckets"),
		c("lower-case method", "get", obj, 400, `"method"`),
		c("TRACE", "TRACE", obj, 400, `"method"`),
		{cat: "method", name: "copy source on GET", method: "GET", uri: obj,
			headers: javaHeaders("x-amz-copy-source", "lake/wh/y"), status: 400, msg: "only valid on CopyObject"},
		{cat: "method", name: "copy range without copy source", method: "PUT", uri: obj + "?partNumber=1&uploadId=a",
			headers: javaHeaders("x-amz-copy-source-range", "bytes=0-1"), status: 400, msg: "requires x-amz-copy-source"},
	}
}

func headerCases(P, hp string) []advCase {
	obj := P + "/lake/wh/x"
	denied := "access denied: PutObject on arn:aws:s3:::lake/wh/x"
	dangerous := func(name, value string) advCase {
		return advCase{cat: "headers", name: name, method: "PUT", uri: obj, headers: javaHeaders(name, value), status: 403, msg: denied}
	}
	c := func(name, method string, h map[string][]string, status int, msg string) advCase {
		return advCase{cat: "headers", name: name, method: method, uri: obj, headers: h, status: status, msg: msg}
	}
	return []advCase{
		dangerous("x-amz-acl", "public-read"),
		dangerous("X-AMZ-ACL", "public-read-write"),
		dangerous("x-amz-grant-full-control", `id="attacker"`),
		dangerous("x-amz-grant-read", `uri="http://acs.amazonaws.com/groups/global/AllUsers"`),
		dangerous("x-amz-object-lock-mode", "COMPLIANCE"),
		dangerous("x-amz-object-lock-legal-hold", "ON"),
		dangerous("x-amz-website-redirect-location", "https://evil.example/"),
		{cat: "headers", name: "x-amz-bypass-governance-retention", method: "DELETE", uri: obj,
			headers: javaHeaders("x-amz-bypass-governance-retention", "true"), status: 403, msg: "access denied: DeleteObject"},
		{cat: "headers", name: "x-http-method-override", method: "GET", uri: obj,
			headers: javaHeaders("X-HTTP-Method-Override", "DELETE"), status: 403, msg: "access denied: GetObject"},
		{cat: "headers", name: "x-http-method", method: "GET", uri: obj,
			headers: javaHeaders("X-HTTP-Method", "PUT"), status: 403, msg: "access denied: GetObject"},
		{cat: "headers", name: "x-method-override", method: "GET", uri: obj,
			headers: javaHeaders("X-Method-Override", "DELETE"), status: 403, msg: "access denied: GetObject"},
		c("pre-sent Authorization", "GET", javaHeaders("Authorization", "AWS4-HMAC-SHA256 Credential=x"), 400, "already has header"),
		c("pre-sent lower-case authorization", "GET", javaHeaders("authorization", "Bearer x"), 400, "already has header"),
		c("pre-sent X-Amz-Security-Token", "GET", javaHeaders("X-Amz-Security-Token", "FwoGZXIvYXdzE"), 400, "already has header"),
		c("signed streaming payload", "PUT", javaHeaders("x-amz-content-sha256", "STREAMING-AWS4-HMAC-SHA256-PAYLOAD"), 400, "is not supported"),
		c("signed streaming payload with trailer", "PUT", javaHeaders("x-amz-content-sha256", "STREAMING-AWS4-HMAC-SHA256-PAYLOAD-TRAILER"), 400, "is not supported"),
		c("ECDSA streaming payload", "PUT", javaHeaders("x-amz-content-sha256", "STREAMING-AWS4-ECDSA-P256-SHA256-PAYLOAD"), 400, "is not supported"),
		c("upper-case payload hash", "PUT", javaHeaders("x-amz-content-sha256", strings.Repeat("AB", 32)), 400, "is not supported"),
		c("two payload hashes", "PUT", javaHeaders("x-amz-content-sha256", "UNSIGNED-PAYLOAD", "x-amz-content-sha256", strings.Repeat("ab", 32)), 400, "exactly one value"),
		c("stale x-amz-date", "GET", javaHeaders("X-Amz-Date", "20200101T000000Z"), 400, "x-amz-date"),
		c("future x-amz-date", "GET", javaHeaders("X-Amz-Date", time.Now().Add(24*time.Hour).UTC().Format("20060102T150405Z")), 400, "x-amz-date"),
		c("same header twice in different case", "PUT", map[string][]string{"x-amz-acl": {"private"}, "X-Amz-Acl": {"public-read"}}, 400, "duplicate header"),
		c("header name with a space", "GET", map[string][]string{"X Amz": {"a"}}, 400, "not a valid HTTP token"),
		c("CRLF in a header value", "GET", map[string][]string{"X-A": {"a\r\nHost: " + hp}}, 400, "control character"),
	}
}

func deleteCases(P string) []advCase {
	uri := P + "/lake?delete"
	good := deleteXML("wh/t/a.parquet")
	evil := deleteXML("wh/t/b.parquet")
	c := func(name string, body []byte, h map[string][]string, status int, msg string) advCase {
		var b *string
		if body != nil {
			b = sp(string(body))
		}
		return advCase{cat: "delete-objects", name: name, method: "POST", uri: uri, headers: h, body: b, status: status, msg: msg}
	}
	md5 := func(body []byte) map[string][]string { return javaHeaders("Content-MD5", md5Base64(body)) }
	keys := make([]string, 1001)
	for i := range keys {
		keys[i] = fmt.Sprintf("wh/t/k%04d", i)
	}
	many := deleteXML(keys...)
	doctype := []byte(`<?xml version="1.0"?><!DOCTYPE Delete [<!ENTITY k "denied/x">]><Delete><Object><Key>&k;</Key></Object></Delete>`)
	xxe := []byte(`<?xml version="1.0"?><!DOCTYPE Delete [<!ENTITY k SYSTEM "file:///etc/passwd">]><Delete><Object><Key>&k;</Key></Object></Delete>`)
	nested := []byte(`<Delete><Object><Key><Key>denied/x</Key></Key></Object></Delete>`)
	twoKeys := []byte(`<Delete><Object><Key>wh/a</Key><Key>denied/x</Key></Object></Delete>`)
	foreignNS := []byte(`<Delete xmlns="http://evil.example/"><Object><Key>wh/a</Key></Object></Delete>`)
	stray := []byte(`<Delete>denied/x<Object><Key>wh/a</Key></Object></Delete>`)
	unknownElem := []byte(`<Delete><Bucket>private</Bucket><Object><Key>wh/a</Key></Object></Delete>`)
	empty := []byte(`<Delete><Quiet>true</Quiet></Delete>`)
	cdata := []byte(`<Delete><Object><Key><![CDATA[denied/x]]></Key></Object></Delete>`)
	charRef := []byte(`<Delete><Object><Key>&#100;enied/x</Key></Object></Delete>`)
	dots := deleteXML("wh/../denied/x")
	// 1000 keys of 1024 bytes: within S3's key limits, over the 1 MiB body cap.
	bigKeys := make([]string, 1000)
	for i := range bigKeys {
		bigKeys[i] = fmt.Sprintf("wh/%04d", i) + strings.Repeat("a", 1024-7)
	}
	big := deleteXML(bigKeys...)
	return []advCase{
		c("Content-MD5 of another body", good, md5(evil), 400, "Content-MD5 does not match"),
		c("crc32 of another body", good, javaHeaders("x-amz-checksum-crc32", crc32Base64(evil)), 400, "x-amz-checksum-crc32 does not match"),
		c("sha256 checksum of another body", good, javaHeaders("x-amz-checksum-sha256", sha256Base64(evil)), 400, "x-amz-checksum-sha256 does not match"),
		c("payload hash of another body", good, javaHeaders("x-amz-content-sha256", sha256Hex(evil)), 400, "x-amz-content-sha256 does not match"),
		c("MD5 right, crc32 wrong", good, javaHeaders("Content-MD5", md5Base64(good), "x-amz-checksum-crc32", crc32Base64(evil)), 400, "x-amz-checksum-crc32 does not match"),
		c("two Content-MD5 values", good, javaHeaders("Content-MD5", md5Base64(good), "Content-MD5", md5Base64(evil)), 400, "exactly one value"),
		c("unbound body", good, javaHeaders("x-amz-content-sha256", "UNSIGNED-PAYLOAD"), 400, "not bound to the signature"),
		c("no body", nil, nil, 400, `"body"`),
		c("1001 keys", many, md5(many), 400, "more than 1000 keys"),
		c("DOCTYPE with an entity", doctype, md5(doctype), 400, "directives"),
		c("external entity", xxe, md5(xxe), 400, "directives"),
		c("nested Key", nested, md5(nested), 400, "unexpected element"),
		c("two Keys in one Object", twoKeys, md5(twoKeys), 400, "more than one <Key>"),
		c("foreign namespace", foreignNS, md5(foreignNS), 400, "namespace"),
		c("text outside elements", stray, md5(stray), 400, "unexpected text"),
		c("unknown element", unknownElem, md5(unknownElem), 400, "unexpected element"),
		c("no keys", empty, md5(empty), 400, "names no keys"),
		c("key outside grant", deleteXML("wh/a", "denied/x"), md5(deleteXML("wh/a", "denied/x")), 403, "arn:aws:s3:::lake/denied/x"),
		c("CDATA key outside grant", cdata, md5(cdata), 403, "arn:aws:s3:::lake/denied/x"),
		c("character reference key outside grant", charRef, md5(charRef), 403, "arn:aws:s3:::lake/denied/x"),
		c("dot segments in a key", dots, md5(dots), 400, `".."`),
		c("body over 1 MiB", big, md5(big), 400, "larger than"),
	}
}

func copyCases(P string) []advCase {
	dst := P + "/lake/wh/copy"
	c := func(name, src string, status int, msg string) advCase {
		return advCase{cat: "copy-source", name: name, method: "PUT", uri: dst, headers: javaHeaders("x-amz-copy-source", src), status: status, msg: msg}
	}
	return []advCase{
		c("other bucket", "private/secret", 403, "read of copy source arn:aws:s3:::private/secret"),
		c("other bucket, leading slash", "/private/secret", 403, "read of copy source arn:aws:s3:::private/secret"),
		c("key outside grant", "lake/denied/x", 403, "read of copy source arn:aws:s3:::lake/denied/x"),
		c("dot segments", "lake/wh/../denied/x", 400, `".."`),
		c("encoded dot segments", "lake/wh/%2E%2E/denied/x", 400, `".."`),
		c("overlong dot segments", "lake/wh/%C0%AE%C0%AE/denied/x", 400, "not valid UTF-8"),
		c("access point ARN", "arn:aws:s3:us-east-1:123456789012:accesspoint/ap/object/x", 400, "ARN"),
		c("extra query parameter", "lake/wh/x?versionId=1&acl", 400, "only carry ?versionId="),
		c("encoded slash splits the bucket", "lake%2Fdenied/x", 400, "invalid character"),
		c("upper-case bucket", "Private/x", 400, "invalid character"),
		c("raw plus", "lake/wh/a+b", 400, "raw '+'"),
		c("bucket only", "private", 400, "bucket/key"),
		{cat: "copy-source", name: "two values", method: "PUT", uri: dst,
			headers: javaHeaders("x-amz-copy-source", "lake/wh/x", "x-amz-copy-source", "private/x"), status: 400, msg: "exactly one value"},
		{cat: "copy-source", name: "UploadPartCopy from another bucket", method: "PUT", uri: dst + "?partNumber=1&uploadId=u",
			headers: javaHeaders("x-amz-copy-source", "private/secret"), status: 403, msg: "read of copy source arn:aws:s3:::private/secret"},
	}
}

func jsonCases(P string) []advCase {
	obj := P + "/lake/wh/x"
	c := func(name string, raw []byte, status int, msg string) advCase {
		return advCase{cat: "json", name: name, raw: raw, status: status, msg: msg}
	}
	deep := []byte(`{"region":"us-east-1","uri":"` + obj + `","method":"GET","headers":{},"x":` +
		strings.Repeat("[", 100000) + strings.Repeat("]", 100000) + `}`)
	wide := []byte(`{"region":"us-east-1","uri":"` + obj + `","method":"GET","headers":{},"x":[` +
		strings.TrimSuffix(strings.Repeat("0,", 200000), ",") + `]}`)
	manyHeaders := map[string][]string{}
	for i := range 65 {
		manyHeaders[fmt.Sprintf("X-H%d", i)] = []string{"v"}
	}
	manyValues := make([]string, 17)
	for i := range manyValues {
		manyValues[i] = "v"
	}
	return []advCase{
		c("deeply nested JSON", deep, 400, "invalid sign request"),
		c("giant array of ignored values", wide, 400, "invalid sign request"),
		c("duplicate uri", []byte(`{"region":"us-east-1","uri":"`+obj+`","uri":"`+P+`/private/x","method":"GET","headers":{}}`), 400, "duplicate member"),
		c("duplicate method", []byte(`{"region":"us-east-1","uri":"`+obj+`","method":"GET","method":"DELETE","headers":{}}`), 400, "duplicate member"),
		c("duplicate header member", []byte(`{"region":"us-east-1","uri":"`+obj+`","method":"PUT","headers":{"x-amz-acl":["private"],"x-amz-acl":["public-read"]}}`), 400, "duplicate"),
		c("invalid UTF-8 in uri", append(append([]byte(`{"region":"us-east-1","uri":"`+obj), 0xff, 0xfe), `","method":"GET","headers":{}}`...), 400, "invalid sign request"),
		c("overlong UTF-8 in uri", append(append([]byte(`{"region":"us-east-1","uri":"`+P+`/lake/wh/`), 0xc0, 0xae), `","method":"GET","headers":{}}`...), 400, "invalid sign request"),
		c("lone surrogate escape", []byte(`{"region":"us-east-1","uri":"`+obj+`\udc00","method":"GET","headers":{}}`), 400, "invalid sign request"),
		c("escaped NUL in uri", []byte(`{"region":"us-east-1","uri":"`+obj+`\u0000.parquet","method":"GET","headers":{}}`), 400, "control characters"),
		c("trailing second object", []byte(`{"region":"us-east-1","uri":"`+obj+`","method":"GET","headers":{}}{"uri":"`+P+`/private/x"}`), 400, "invalid sign request"),
		c("uri is a number", []byte(`{"region":"us-east-1","uri":1,"method":"GET","headers":{}}`), 400, `"uri"`),
		c("NaN", []byte(`{"region":"us-east-1","uri":"`+obj+`","method":"GET","headers":{},"x":NaN}`), 400, "invalid sign request"),
		c("other provider", []byte(`{"region":"us-east-1","uri":"`+obj+`","method":"GET","headers":{},"provider":"gcs"}`), 400, "provider"),
		{cat: "json", name: "65 headers", method: "GET", uri: obj, headers: manyHeaders, status: 400, msg: "more than 64 headers"},
		{cat: "json", name: "17 values of one header", method: "GET", uri: obj, headers: map[string][]string{"X-A": manyValues}, status: 400, msg: "more than 16 values"},
	}
}

// transportCases are attacks below the JSON: slow and oversized requests.
func transportCases(h *advHarness) []advCase {
	addr := strings.TrimPrefix(h.cs.url, "http://")
	// rawExchange writes head (and then stalls, keeping the connection
	// open) and reads whatever the server answers within limit.
	rawExchange := func(t *testing.T, write func(net.Conn) error, limit time.Duration) advResult {
		t.Helper()
		conn, err := net.Dial("tcp", addr)
		if err != nil {
			t.Fatal(err)
		}
		defer conn.Close()
		start := time.Now()
		if err := write(conn); err != nil {
			// The server may close mid-write; what it answered is below.
			t.Logf("write: %v", err)
		}
		conn.SetReadDeadline(start.Add(limit))
		resp, err := http.ReadResponse(bufio.NewReader(conn), nil)
		if err != nil {
			if ne, ok := err.(net.Error); ok && ne.Timeout() {
				t.Fatalf("no answer and connection still open after %s", limit)
			}
			return advResult{status: 0, header: http.Header{}}
		}
		defer resp.Body.Close()
		body, _ := io.ReadAll(resp.Body)
		return advResult{status: resp.StatusCode, header: resp.Header, body: body}
	}
	token := h.token
	sign := `{"region":"us-east-1","uri":"` + fmt.Sprintf("http://localhost:%d/lake/wh/x", h.s3.Port) + `","method":"GET","headers":{}}`
	stalled := func(t *testing.T) advResult {
		start := time.Now()
		r := rawExchange(t, func(c net.Conn) error {
			// Headers complete, body promised, then silence.
			_, err := fmt.Fprintf(c, "POST /v1/aws/s3/sign HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer %s\r\nContent-Type: application/json\r\nContent-Length: %d\r\n\r\n%s",
				token, len(sign), sign[:10])
			return err
		}, advReadTimeout+5*time.Second)
		if d := time.Since(start); d < advReadTimeout-100*time.Millisecond {
			t.Fatalf("answered after %s, before the read timeout: the stall was not what ended it", d)
		}
		return r
	}
	slowloris := func(t *testing.T) advResult {
		start := time.Now()
		r := rawExchange(t, func(c net.Conn) error {
			// Headers trickle in and never finish.
			for _, line := range []string{"POST /v1/aws/s3/sign HTTP/1.1\r\n", "Host: x\r\n", "X-A: 1\r\n", "X-B: 2\r\n"} {
				if _, err := io.WriteString(c, line); err != nil {
					return err
				}
				time.Sleep(advReadTimeout / 4)
			}
			return nil
		}, advReadTimeout+5*time.Second)
		if d := time.Since(start); d < advReadTimeout-100*time.Millisecond {
			t.Fatalf("answered after %s, before the read timeout", d)
		}
		return r
	}
	declaredHuge := func(t *testing.T) advResult {
		return rawExchange(t, func(c net.Conn) error {
			_, err := fmt.Fprintf(c, "POST /v1/aws/s3/sign HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer %s\r\nContent-Type: application/json\r\nContent-Length: %d\r\n\r\n", token, 64<<20)
			return err
		}, 10*time.Second)
	}
	chunkedHuge := func(t *testing.T) advResult {
		return rawExchange(t, func(c net.Conn) error {
			if _, err := fmt.Fprintf(c, "POST /v1/aws/s3/sign HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer %s\r\nContent-Type: application/json\r\nTransfer-Encoding: chunked\r\n\r\n", token); err != nil {
				return err
			}
			chunk := strings.Repeat(" ", 64<<10)
			for range 40 { // 2.5 MiB, over max_body_bytes
				if _, err := fmt.Fprintf(c, "%x\r\n%s\r\n", len(chunk), chunk); err != nil {
					return err
				}
			}
			_, err := io.WriteString(c, "0\r\n\r\n")
			return err
		}, 10*time.Second)
	}
	hugeBody := func(t *testing.T) advResult {
		huge := `{"region":"us-east-1","uri":"http://localhost/lake/x","method":"GET","headers":{},"pad":"` + strings.Repeat("a", 2<<20) + `"}`
		return rawExchange(t, func(c net.Conn) error {
			_, err := fmt.Fprintf(c, "POST /v1/aws/s3/sign HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer %s\r\nContent-Type: application/json\r\nContent-Length: %d\r\n\r\n%s", token, len(huge), huge)
			return err
		}, 10*time.Second)
	}
	return []advCase{
		{cat: "transport", name: "body stalls past the read timeout", custom: stalled, status: http.StatusRequestTimeout, msg: "not received in time", orClosed: true},
		{cat: "transport", name: "headers trickle past the read timeout", custom: slowloris, status: http.StatusRequestTimeout, msg: "not received in time", orClosed: true},
		{cat: "transport", name: "declared 64 MiB body", custom: declaredHuge, status: http.StatusRequestEntityTooLarge, msg: "larger than the configured limit"},
		{cat: "transport", name: "chunked body over the limit", custom: chunkedHuge, status: http.StatusRequestEntityTooLarge, msg: "larger than the configured limit", orClosed: true},
		{cat: "transport", name: "2 MiB JSON body", custom: hugeBody, status: http.StatusRequestEntityTooLarge, msg: "larger than the configured limit", orClosed: true},
	}
}

// forge builds a compact JWS from header and claims with sign over the
// signing input (nil sign leaves the signature empty).
func forge(header, claims map[string]any, sign func([]byte) []byte) string {
	enc := base64.RawURLEncoding
	hb, _ := json.Marshal(header)
	cb, _ := json.Marshal(claims)
	in := enc.EncodeToString(hb) + "." + enc.EncodeToString(cb)
	var sig []byte
	if sign != nil {
		sig = sign([]byte(in))
	}
	return in + "." + enc.EncodeToString(sig)
}

func stdClaims(extra map[string]any) map[string]any {
	c := map[string]any{
		"iss": testIssuer, "aud": testAudience, "sub": "mallory", "groups": []string{"engineers"},
		"iat": time.Now().Unix(), "exp": time.Now().Add(time.Hour).Unix(),
	}
	for k, v := range extra {
		if v == nil {
			delete(c, k)
			continue
		}
		c[k] = v
	}
	return c
}

func rs256(key *rsa.PrivateKey) func([]byte) []byte {
	return func(in []byte) []byte {
		sum := sha256.Sum256(in)
		sig, err := rsa.SignPKCS1v15(rand.Reader, key, crypto.SHA256, sum[:])
		if err != nil {
			panic(err)
		}
		return sig
	}
}

func hs256(secret []byte) func([]byte) []byte {
	return func(in []byte) []byte {
		m := hmac.New(sha256.New, secret)
		m.Write(in)
		return m.Sum(nil)
	}
}

func jwtCases(P string) []advCase {
	obj := P + "/lake/wh/x"
	hdr := func(alg string) map[string]any { return map[string]any{"alg": alg, "typ": "JWT", "kid": testKID} }
	idp := testIdP.Key()
	valid := forge(hdr("RS256"), stdClaims(nil), rs256(idp))
	parts := strings.Split(valid, ".")

	pubDER, err := x509.MarshalPKIXPublicKey(&idp.PublicKey)
	if err != nil {
		panic(err)
	}
	pubPEM := pem.EncodeToMemory(&pem.Block{Type: "PUBLIC KEY", Bytes: pubDER})
	attacker, err := rsa.GenerateKey(rand.Reader, 2048)
	if err != nil {
		panic(err)
	}
	ecKey, _ := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	rs512 := func(in []byte) []byte {
		sum := sha512.Sum512(in)
		sig, _ := rsa.SignPKCS1v15(rand.Reader, idp, crypto.SHA512, sum[:])
		return sig
	}
	es256 := func(in []byte) []byte {
		sum := sha256.Sum256(in)
		r, s, _ := ecdsa.Sign(rand.Reader, ecKey, sum[:])
		return append(r.FillBytes(make([]byte, 32)), s.FillBytes(make([]byte, 32))...)
	}
	other := forge(hdr("RS256"), stdClaims(map[string]any{"sub": "root", "groups": []string{"admins"}}), rs256(idp))
	tamperedClaims, _ := json.Marshal(stdClaims(map[string]any{"sub": "root"}))
	enc := base64.RawURLEncoding

	c := func(name, authorization string, msg string) advCase {
		return advCase{cat: "jwt", name: name, method: "GET", uri: obj, auth: authorization, status: 401, msg: msg}
	}
	b := func(tok string) string { return "Bearer " + tok }
	now := time.Now()
	return []advCase{
		c("no Authorization header", noAuth, "(missing_token)"),
		c("Basic credentials", "Basic bWFsbG9yeTpwdw==", "(missing_token)"),
		c("empty bearer", "Bearer ", "(missing_token)"),
		c("token without scheme", valid, "(missing_token)"),
		{cat: "jwt", name: "token in the query string", method: "GET", uri: obj, auth: noAuth,
			route: "/v1/aws/s3/sign?access_token=" + valid, status: 401, msg: "(missing_token)"},
		c("alg none", b(forge(map[string]any{"alg": "none", "typ": "JWT"}, stdClaims(nil), nil)), "algorithm is not allowed"),
		c("alg None with the real signature", b(forge(map[string]any{"alg": "None", "kid": testKID}, stdClaims(nil), rs256(idp))), "algorithm is not allowed"),
		c("HS256 keyed with the RSA public key (PEM)", b(forge(hdr("HS256"), stdClaims(nil), hs256(pubPEM))), "algorithm is not allowed"),
		c("HS256 keyed with the RSA public key (DER)", b(forge(hdr("HS256"), stdClaims(nil), hs256(pubDER))), "algorithm is not allowed"),
		c("RS512 outside the allow-list", b(forge(hdr("RS512"), stdClaims(nil), rs512)), "algorithm is not allowed"),
		c("ES256 header on the RSA key", b(forge(hdr("ES256"), stdClaims(nil), es256)), "does not match its key"),
		c("expired", b(forge(hdr("RS256"), stdClaims(map[string]any{"exp": now.Add(-time.Hour).Unix(), "iat": now.Add(-2 * time.Hour).Unix()}), rs256(idp))), "(expired)"),
		c("no exp", b(forge(hdr("RS256"), stdClaims(map[string]any{"exp": nil}), rs256(idp))), "exp claim is missing"),
		c("nbf in the future", b(forge(hdr("RS256"), stdClaims(map[string]any{"nbf": now.Add(time.Hour).Unix()}), rs256(idp))), "(not_yet_valid)"),
		c("iat in the future", b(forge(hdr("RS256"), stdClaims(map[string]any{"iat": now.Add(time.Hour).Unix()}), rs256(idp))), "(not_yet_valid)"),
		c("token for another audience", b(forge(hdr("RS256"), stdClaims(map[string]any{"aud": "catalog"}), rs256(idp))), "(wrong_audience)"),
		c("audience list without ours", b(forge(hdr("RS256"), stdClaims(map[string]any{"aud": []string{"catalog", "countersign-staging"}}), rs256(idp))), "(wrong_audience)"),
		c("wrong issuer", b(forge(hdr("RS256"), stdClaims(map[string]any{"iss": "https://evil.example"}), rs256(idp))), "(wrong_issuer)"),
		c("issuer with a trailing slash", b(forge(hdr("RS256"), stdClaims(map[string]any{"iss": testIssuer + "/"}), rs256(idp))), "(wrong_issuer)"),
		c("kid of an unknown key", b(forge(map[string]any{"alg": "RS256", "kid": "attacker-key"}, stdClaims(nil), rs256(attacker))), "(unknown_key)"),
		c("attacker key under the real kid, with embedded jwk", b(forge(map[string]any{"alg": "RS256", "kid": testKID,
			"jwk": map[string]string{"kty": "RSA", "n": enc.EncodeToString(attacker.N.Bytes()), "e": "AQAB"}}, stdClaims(nil), rs256(attacker))), "(bad_signature)"),
		c("signature stripped", b(parts[0]+"."+parts[1]+"."), "(bad_signature)"),
		c("signature of another token", b(parts[0]+"."+parts[1]+"."+strings.Split(other, ".")[2]), "(bad_signature)"),
		c("claims changed after signing", b(parts[0]+"."+enc.EncodeToString(tamperedClaims)+"."+parts[2]), "(bad_signature)"),
		c("JWE-shaped token", b(parts[0]+"."+parts[1]+".AAAA.BBBB."+parts[2]), "JWE"),
		c("enc header", b(forge(map[string]any{"alg": "RS256", "kid": testKID, "enc": "A256GCM"}, stdClaims(nil), rs256(idp))), "JWE"),
		c("crit header", b(forge(map[string]any{"alg": "RS256", "kid": testKID, "crit": []string{"exp"}}, stdClaims(nil), rs256(idp))), "critical"),
		c("padded base64", b(parts[0]+"=."+parts[1]+"."+parts[2]), "(malformed_token)"),
		c("no subject", b(forge(hdr("RS256"), stdClaims(map[string]any{"sub": nil}), rs256(idp))), "(missing_principal)"),
		// The HTTP layer's 8 KiB header buffer refuses it (431) before
		// auth's own 8 KiB token bound is reached; the server drains the
		// rest of the request before closing, so the status is always read.
		{cat: "jwt", name: "token over 8 KiB", method: "GET", uri: obj, status: 431, msg: "request headers are larger than the 8 KiB limit",
			auth: b(forge(hdr("RS256"), stdClaims(map[string]any{"pad": strings.Repeat("a", 9000)}), rs256(idp)))},
		{cat: "jwt", name: "valid token without the grant", method: "GET", uri: obj, auth: b(other), status: 403, msg: "access denied: GetObject on arn:aws:s3:::lake/wh/x"},
	}
}

func sha256Base64(b []byte) string {
	sum := sha256.Sum256(b)
	return base64.StdEncoding.EncodeToString(sum[:])
}

func sha256Hex(b []byte) string {
	sum := sha256.Sum256(b)
	return hex.EncodeToString(sum[:])
}
