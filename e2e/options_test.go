package e2e

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"

	"github.com/countersign/countersign/testsupport"
)

// TestSessionCredentials: with temporary credentials (a role session held
// and validated by versitygw's IAM service, see sts_test.go) countersign
// adds a signed X-Amz-Security-Token (Iceberg's Java client signs
// anonymously and never sends one), versitygw serves the request as that
// session, and refuses it once the token is changed or removed.
func TestSessionCredentials(t *testing.T) {
	gw := startS3WithIAM(t)
	gw.CreateBucket(t, "lake")
	h := &harness{s3: gw.s3Server, ctx: context.Background()}
	h.adminPut(t, "lake", "wh/f.parquet", []byte("PAR1"))
	role := gw.CreateRole(t, "lake-reader", []string{"s3:GetObject"}, "arn:aws:s3:::lake/*")
	sess, err := gw.MintSession(role, "e2e-static", time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	if got, want := gw.CallerARN(t, sess), testsupport.AssumedRoleARN("lake-reader", "e2e-static"); got != want {
		t.Fatalf("versitygw STS says the session is %s, want %s", got, want)
	}

	// The temporary key (overriding the config's), secret and token come
	// from the environment.
	cs := startCountersign(t, baseConfig(t, gw.Port),
		"COUNTERSIGN_ACCESS_KEY_ID="+sess.AccessKeyID,
		"COUNTERSIGN_SECRET_ACCESS_KEY="+sess.SecretAccessKey,
		"COUNTERSIGN_SESSION_TOKEN="+sess.SessionToken)

	status, res, ierr, _ := cs.sign(t, "", signRequest{Region: testRegion, URI: styles(gw.Port)[0].object("lake", "wh/f.parquet"), Method: "GET", Headers: javaHeaders()})
	if status != http.StatusOK {
		t.Fatalf("sign: %d %+v", status, ierr)
	}
	if got := res.Headers["X-Amz-Security-Token"]; !slices.Equal(got, []string{sess.SessionToken}) {
		t.Fatalf("X-Amz-Security-Token = %v, want the session token", got)
	}
	if !slices.Contains(signedHeaders(t, res.Headers), "x-amz-security-token") {
		t.Fatal("session token is not signed")
	}
	if auth := res.Headers["Authorization"][0]; !strings.Contains(auth, "Credential="+sess.AccessKeyID+"/") {
		t.Fatalf("not signed with the session key: %s", auth)
	}
	if st, body := gw.send(t, "GET", res.URI, res.Headers, nil); st != http.StatusOK || string(body) != "PAR1" {
		t.Fatalf("S3 answered %d %s", st, body)
	}
	// versitygw resolves the key through the token: another token is not
	// this session's.
	bad := cloneHeaders(res.Headers)
	bad["X-Amz-Security-Token"] = []string{flip(sess.SessionToken, len(sess.SessionToken)-1)}
	if st, body := gw.send(t, "GET", res.URI, bad, nil); st != http.StatusBadRequest || !bytes.Contains(body, []byte("<Code>InvalidToken</Code>")) {
		t.Fatalf("tampered token: S3 answered %d, want 400 InvalidToken\n%s", st, body)
	}
	// Without it, the temporary key is unknown.
	bad = cloneHeaders(res.Headers)
	delete(bad, "X-Amz-Security-Token")
	if st, body := gw.send(t, "GET", res.URI, bad, nil); st != http.StatusForbidden || !bytes.Contains(body, []byte("<Code>InvalidAccessKeyId</Code>")) {
		t.Fatalf("token removed: S3 answered %d, want 403 InvalidAccessKeyId\n%s", st, body)
	}
	// versitygw decides as the session, not as a long-term identity.
	requireSignedAs(t, cs, gw.s3Server, "lake", testsupport.AssumedRoleARN("lake-reader", "e2e-static"))
}

// TestAssumeRole: credentials.source assume-role takes base credentials
// from the AWS default chain (here: only the environment), calls
// sts:AssumeRole at the endpoint the SDK is pointed at
// (AWS_ENDPOINT_URL_STS; assumeRoleSTS, since versitygw has no AssumeRole)
// and signs with the role session, which versitygw validates and serves as
// that session. Credentials that cannot be obtained make countersign
// refuse with 503 and sign nothing.
func TestAssumeRole(t *testing.T) {
	const (
		baseAccessKey = "CSE2EBASEACCESSKEY"
		baseSecretKey = "cse2e-base-secret-for-sts-only"
		sessionName   = "countersign-e2e"
		externalID    = "e2e-external-id"
	)
	gw := startS3WithIAM(t)
	gw.CreateBucket(t, "lake")
	role := gw.CreateRole(t, "lake-rw", []string{"s3:GetObject", "s3:PutObject"}, "arn:aws:s3:::lake/*")
	stsFront := startAssumeRoleSTS(t, gw, baseAccessKey, baseSecretKey)
	env := isolatedAWSEnv(t, baseAccessKey, baseSecretKey, stsFront.url)

	assumeRoleConfig := func(roleARN string) string {
		static := "credentials:\n  source: static\n  access_key_id: " + testAccessKey + "\n"
		cfg := baseConfig(t, gw.Port)
		if !strings.Contains(cfg, static) {
			t.Fatalf("baseConfig has no static credentials block to replace:\n%s", cfg)
		}
		return strings.Replace(cfg, static, fmt.Sprintf(`credentials:
  source: assume-role
  role_arn: %s
  role_session_name: %s
  external_id: %s
  duration: 15m
`, roleARN, sessionName, externalID), 1)
	}

	t.Run("role", func(t *testing.T) {
		cs := startCountersign(t, assumeRoleConfig(aws.ToString(role.Arn)), env...)
		h := &harness{s3: gw.s3Server, cs: cs, ctx: context.Background()}
		uri := styles(gw.Port)[1].object("lake", "wh/assumed.parquet")
		data := []byte("written by an assumed role")
		h.signAndSend(t, op{name: "PutObject", method: "PUT", uri: uri, headers: javaHeaders("Content-Length", strconv.Itoa(len(data))), body: data})
		if got := h.signAndSend(t, op{name: "GetObject", method: "GET", uri: uri, headers: javaHeaders()}); !bytes.Equal(got, data) {
			t.Fatalf("GetObject returned %q", got)
		}
		if got := h.adminGet(t, "lake", "wh/assumed.parquet"); !bytes.Equal(got, data) {
			t.Fatalf("stored object is %q", got)
		}
		requireSignedAs(t, cs, gw.s3Server, "lake", testsupport.AssumedRoleARN("lake-rw", sessionName))

		// One AssumeRole, signed with the base credentials, with the
		// configured parameters; its session signed everything above
		// (credentials are cached, not fetched per request).
		calls := stsFront.requests()
		if len(calls) != 1 {
			t.Fatalf("%d AssumeRole calls, want 1: %+v", len(calls), calls)
		}
		c := calls[0]
		want := assumeRoleCall{CallerAccessKey: baseAccessKey, RoleArn: aws.ToString(role.Arn), RoleSessionName: sessionName, DurationSeconds: "900", ExternalID: externalID, Issued: c.Issued}
		if c != want || c.Issued == nil {
			t.Fatalf("AssumeRole call %+v, want %+v", c, want)
		}
		status, res, ierr, _ := cs.sign(t, "", signRequest{Region: testRegion, URI: uri, Method: "HEAD", Headers: javaHeaders()})
		if status != http.StatusOK {
			t.Fatalf("sign: %d %+v", status, ierr)
		}
		if got := res.Headers["X-Amz-Security-Token"]; !slices.Equal(got, []string{c.Issued.SessionToken}) {
			t.Fatalf("X-Amz-Security-Token = %v, want the assumed session's", got)
		}
		if auth := res.Headers["Authorization"][0]; !strings.Contains(auth, "Credential="+c.Issued.AccessKeyID+"/") || !slices.Contains(signedHeaders(t, res.Headers), "x-amz-security-token") {
			t.Fatalf("not signed with the assumed session: %s", auth)
		}
		if log := cs.log.String(); strings.Contains(log, baseSecretKey) || strings.Contains(log, c.Issued.SecretAccessKey) || strings.Contains(log, c.Issued.SessionToken) {
			t.Fatalf("a secret is in countersign's log:\n%s", log)
		}
	})

	t.Run("unknown role", func(t *testing.T) {
		before := len(stsFront.requests())
		missing := "arn:aws:iam::" + testsupport.AccountID + ":role/no-such-role"
		cs := startCountersign(t, assumeRoleConfig(missing), env...)
		for i := 0; i < 2; i++ { // a failure is not cached: every request asks STS again
			status, res, ierr, hdr := cs.sign(t, "", signRequest{Region: testRegion, URI: styles(gw.Port)[0].object("lake", "wh/f.parquet"), Method: "GET", Headers: javaHeaders()})
			if status != http.StatusServiceUnavailable || res != nil {
				t.Fatalf("sign with an unknown role: %d %+v, want 503 and nothing signed", status, res)
			}
			if hdr.Get("Retry-After") == "" {
				t.Fatalf("503 without Retry-After: %+v", ierr)
			}
		}
		calls := stsFront.requests()[before:]
		if len(calls) != 2 {
			t.Fatalf("%d AssumeRole calls for 2 sign requests, want 2: %+v", len(calls), calls)
		}
		for _, c := range calls {
			if c.RoleArn != missing || c.CallerAccessKey != baseAccessKey || c.ErrorCode != "AccessDenied" || c.Issued != nil {
				t.Fatalf("AssumeRole call %+v, want AccessDenied for %s", c, missing)
			}
		}
		if log := cs.log.String(); !strings.Contains(log, "AccessDenied") || strings.Contains(log, baseSecretKey) {
			t.Fatalf("countersign's log should name STS's AccessDenied and no secret:\n%s", log)
		}
	})
}

// TestCacheableReads: Cache-Control is no-cache by default (see
// TestSignedRequestsAgainstS3) and "private" only for reads when enabled.
func TestCacheableReads(t *testing.T) {
	srv := startS3(t)
	cs := startCountersign(t, baseConfig(t, srv.Port)+"cacheable_reads: true\n", secretEnv()...)
	p := styles(srv.Port)[0]
	for _, tc := range []struct{ method, uri, want string }{
		{"GET", p.object("lake", "k"), "private"},
		{"HEAD", p.object("lake", "k"), "private"},
		{"PUT", p.object("lake", "k"), "no-cache"},
		{"GET", p.bucket("lake") + "?list-type=2&prefix=a", "no-cache"},
	} {
		status, _, ierr, hdr := cs.sign(t, "", signRequest{Region: testRegion, URI: tc.uri, Method: tc.method, Headers: javaHeaders()})
		if status != http.StatusOK {
			t.Fatalf("%s %s: %d %+v", tc.method, tc.uri, status, ierr)
		}
		if got := hdr.Get("Cache-Control"); got != tc.want {
			t.Fatalf("%s %s: Cache-Control %q, want %q", tc.method, tc.uri, got, tc.want)
		}
	}
}

// TestClientPayloadHashAndDate: a client's own x-amz-content-sha256 and
// x-amz-date are kept and signed, so the server checks the body against it.
func TestClientPayloadHashAndDate(t *testing.T) {
	h := newHarness(t)
	body := []byte("exact bytes")
	sum := sha256.Sum256(body)
	date := time.Now().UTC().Add(-time.Minute).Format("20060102T150405Z")
	uri := styles(h.s3.Port)[2].object("lake", "wh/hash.bin")
	hdrs := javaHeaders("x-amz-content-sha256", hex.EncodeToString(sum[:]), "X-Amz-Date", date, "Content-Length", "11")
	status, res, ierr, _ := h.cs.sign(t, "", signRequest{Region: testRegion, URI: uri, Method: "PUT", Headers: hdrs})
	if status != http.StatusOK {
		t.Fatalf("sign: %d %+v", status, ierr)
	}
	if got := res.Headers["X-Amz-Date"]; !slices.Equal(got, []string{date}) {
		t.Fatalf("X-Amz-Date = %v, want the client's %s", got, date)
	}
	if len(res.Headers["x-amz-content-sha256"]) != 1 {
		t.Fatalf("x-amz-content-sha256 duplicated: %v", res.Headers)
	}
	if st, b := h.s3.send(t, "PUT", res.URI, res.Headers, []byte("other bytes")); st < 400 {
		t.Fatalf("S3 accepted a body that does not match the signed hash: %d %s", st, b)
	}
	if st, b := h.s3.send(t, "PUT", res.URI, res.Headers, body); st != http.StatusOK {
		t.Fatalf("S3 answered %d %s", st, b)
	}

	// A client date outside the allowed clock skew is refused.
	hdrs["X-Amz-Date"] = []string{time.Now().UTC().Add(-time.Hour).Format("20060102T150405Z")}
	if status, _, ierr, _ := h.cs.sign(t, "", signRequest{Region: testRegion, URI: uri, Method: "PUT", Headers: hdrs}); status != http.StatusBadRequest {
		t.Fatalf("stale x-amz-date: %d %+v", status, ierr)
	}
}
