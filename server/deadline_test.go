package server

import (
	"context"
	"crypto/ed25519"
	"crypto/rand"
	"encoding/base64"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/credentials"

	"github.com/countersign/countersign/audit"
	"github.com/countersign/countersign/auth"
	"github.com/countersign/countersign/signer"
)

// testDeadline is the request deadline of these tests: long enough that a
// loaded machine does not cut a healthy stage, short enough to wait for.
const testDeadline = 500 * time.Millisecond

// hungServer is a stand-in for a dependency that accepts a request and
// never answers it (a real server does not hang on purpose; a stuck
// identity provider or STS endpoint looks like this from countersign).
// Until hang is set it answers with ok; afterwards every request blocks
// until the test ends.
type hungServer struct {
	*httptest.Server
	hang atomic.Bool
}

func newHungServer(t *testing.T, ok http.HandlerFunc) *hungServer {
	t.Helper()
	h := &hungServer{}
	stop := make(chan struct{})
	h.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if h.hang.Load() {
			<-stop
			return
		}
		ok(w, r)
	}))
	t.Cleanup(h.Close)
	t.Cleanup(func() { close(stop) }) // runs first: Close waits for handlers
	return h
}

// deadlineServer wires the real stages with authn and creds, and the
// deadline under test; it returns the server and its audit directory.
func deadlineServer(t *testing.T, authn *auth.Authenticator, creds aws.CredentialsProvider) (*Server, string) {
	t.Helper()
	engine := testEngine(t, testPolicy)
	c := testClassifier(t, false)
	auditDir := t.TempDir()
	h, err := NewHandler(Stages{
		Authenticator: authn, Classifier: c, Authorizer: engine,
		Signer: signer.New(creds, signer.Options{}), Audit: openTestAuditIn(t, auditDir),
	}, Options{RequestTimeout: testDeadline}, nil)
	if err != nil {
		t.Fatal(err)
	}
	return New(h, Config{}), auditDir
}

// signCut sends one sign request and checks that it was cut by the
// deadline: answered 503 with Retry-After and an error naming the limit
// and the stage, after about the deadline (never before it, well within
// five times it), and recorded.
func signCut(t *testing.T, s *Server, auditDir, authorization, stage string, decision audit.Decision) {
	t.Helper()
	type result struct {
		r       response
		elapsed time.Duration
	}
	done := make(chan result, 1)
	start := time.Now()
	go func() {
		r := doAs(t, s, authorization, "POST", "/v1/aws/s3/sign", signBody("GET", "http://localhost:7070/lake/wh/f.parquet"))
		done <- result{r, time.Since(start)}
	}()
	var res result
	select {
	case res = <-done:
	case <-time.After(5 * testDeadline):
		t.Fatalf("no answer within 5x the request deadline (%s): the stage is not bounded", testDeadline)
	}
	r := res.r
	if r.status != http.StatusServiceUnavailable || r.header["Retry-After"] == "" {
		t.Fatalf("got %d (Retry-After %q) %s, want 503 with Retry-After", r.status, r.header["Retry-After"], r.raw)
	}
	msg, _ := r.body["error"].(map[string]any)["message"].(string)
	if !strings.Contains(msg, "limits.request_timeout") || !strings.Contains(msg, stage) {
		t.Fatalf("error %q does not name the deadline and %q", msg, stage)
	}
	if res.elapsed < testDeadline {
		t.Fatalf("answered after %s, before the deadline of %s", res.elapsed, testDeadline)
	}
	// Cut before the policy, the record is an error; cut after it, the
	// record keeps the policy's decision, as any refused signature does.
	recs := accessRecords(t, auditDir, audit.KindAccess)
	if len(recs) != 1 || recs[0].Status != http.StatusServiceUnavailable || recs[0].Decision != decision || recs[0].Reason != msg || recs[0].Signing != nil {
		t.Fatalf("audit records %+v, want one unsigned 503 %s record with the answer's reason", recs, decision)
	}
}

// A token naming a key id the JWKS lacks makes countersign refetch the
// JWKS; when the identity provider hangs on that fetch, the request is
// answered 503 at its deadline rather than waiting for the fetch.
func TestHungJWKSIsCutByTheRequestDeadline(t *testing.T) {
	pub, priv, err := ed25519.GenerateKey(rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	enc := base64.RawURLEncoding
	jwks, _ := json.Marshal(map[string]any{"keys": []any{map[string]any{
		"kty": "OKP", "crv": "Ed25519", "kid": "old", "use": "sig", "x": enc.EncodeToString(pub),
	}}})
	idp := newHungServer(t, func(w http.ResponseWriter, _ *http.Request) { w.Write(jwks) })
	authn, err := auth.New(context.Background(), auth.Config{
		Issuer: testIssuer, Audience: []string{"countersign"},
		JWKSURL: idp.URL, JWKSMinRefresh: time.Nanosecond, // every unknown kid refetches
	}, auth.Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(authn.Close)
	s, auditDir := deadlineServer(t, authn, credentials.NewStaticCredentialsProvider("AKTEST", "secret", ""))

	idp.hang.Store(true)
	claims, _ := json.Marshal(map[string]any{"iss": testIssuer, "aud": "countersign", "sub": "alice", "exp": time.Now().Add(time.Hour).Unix()})
	signing := enc.EncodeToString([]byte(`{"alg":"EdDSA","kid":"rotated"}`)) + "." + enc.EncodeToString(claims)
	token := signing + "." + enc.EncodeToString(ed25519.Sign(priv, []byte(signing)))
	signCut(t, s, auditDir, "Bearer "+token, "waiting for the identity provider's token signing keys", audit.DecisionError)
}

// With credentials.source assume-role, the first signature needs an STS
// AssumeRole call; when STS hangs, the request is answered 503 at its
// deadline rather than waiting for STS.
func TestHungSTSIsCutByTheRequestDeadline(t *testing.T) {
	sts := newHungServer(t, func(http.ResponseWriter, *http.Request) {})
	sts.hang.Store(true)
	// The AWS environment of the test, and nothing from the machine's.
	for k, v := range map[string]string{
		"AWS_ENDPOINT_URL_STS":        sts.URL,
		"AWS_ACCESS_KEY_ID":           "AKBASE",
		"AWS_SECRET_ACCESS_KEY":       "base-secret",
		"AWS_SESSION_TOKEN":           "",
		"AWS_PROFILE":                 "",
		"AWS_CONFIG_FILE":             filepath.Join(t.TempDir(), "none"),
		"AWS_SHARED_CREDENTIALS_FILE": filepath.Join(t.TempDir(), "none"),
		"AWS_EC2_METADATA_DISABLED":   "true",
	} {
		t.Setenv(k, v)
	}
	creds, err := signer.NewCredentials(context.Background(), signer.CredentialsConfig{
		Source: signer.SourceAssumeRole, RoleARN: "arn:aws:iam::123456789012:role/countersign", Region: "us-east-1",
	})
	if err != nil {
		t.Fatal(err)
	}
	authn := testAuthenticator(t)
	s, auditDir := deadlineServer(t, authn, creds)
	signCut(t, s, auditDir, "Bearer "+aliceToken(), "obtaining the signing credentials", audit.DecisionAllow)
}
