package server

import (
	"context"
	"fmt"
	"os"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/credentials"
	"github.com/valyala/fasthttp"

	"github.com/countersign/countersign/audit"
	"github.com/countersign/countersign/session"
	"github.com/countersign/countersign/signer"
)

// testMinter is this test's session.Minter: STS itself (SeaweedFS's) is
// exercised by the e2e suite; here what matters is what the server does
// with a session, or without one.
type testMinter struct {
	n    atomic.Int64
	down atomic.Bool
}

func (m *testMinter) Mint(_ context.Context, r session.Request) (session.Credentials, error) {
	if m.down.Load() {
		return session.Credentials{}, fmt.Errorf("%w: STS AssumeRole: connection refused", session.ErrUnavailable)
	}
	n := m.n.Add(1)
	return session.Credentials{AccessKeyID: fmt.Sprintf("ASIATEST%d", n), SecretAccessKey: "session-secret", SessionToken: "session-token",
		Expires: time.Now().Add(time.Hour), SourceIdentity: session.SourceIdentity(&r.Principal), SessionName: session.SessionName(&r.Principal)}, nil
}

func newSessionTestServer(t testing.TB, auditDir string, m session.Minter) *Server {
	t.Helper()
	engine := testEngine(t, testPolicy)
	c := testClassifier(t, false)
	authn := testAuthenticator(t)
	cache, err := session.NewCache(session.CacheOptions{Minter: m, Policies: session.BucketWidePolicies{}})
	if err != nil {
		t.Fatal(err)
	}
	base := credentials.NewStaticCredentialsProvider("AKIABASE", "base-secret", "")
	h, err := NewHandler(Stages{Authenticator: authn, Classifier: c, Authorizer: engine,
		Signer: signer.New(base, signer.Options{Sessions: cache}), Audit: openTestAuditIn(t, auditDir)}, Options{}, nil)
	if err != nil {
		t.Fatal(err)
	}
	return New(h, Config{})
}

func readAudit(t testing.TB, dir string) []*audit.Record {
	t.Helper()
	var recs []*audit.Record
	if err := audit.Query(context.Background(), os.DirFS(dir), audit.Filter{}, func(r *audit.Record, _ []byte) error {
		recs = append(recs, r)
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	return recs
}

func TestPerPrincipalSessionsSign(t *testing.T) {
	dir := t.TempDir()
	m := &testMinter{}
	s := newSessionTestServer(t, dir, m)
	bob := "Bearer " + mintToken("bob", time.Now().Add(time.Hour), "analysts")
	keyOf := func(r response) string {
		t.Helper()
		if r.status != 200 {
			t.Fatalf("sign: %d %s", r.status, r.raw)
		}
		h := r.body["headers"].(map[string]any)
		auth := h["Authorization"].([]any)[0].(string)
		if tok := h["X-Amz-Security-Token"].([]any)[0].(string); tok != "session-token" {
			t.Fatalf("security token %q", tok)
		}
		return strings.TrimPrefix(strings.SplitN(auth, "/", 2)[0], "AWS4-HMAC-SHA256 Credential=")
	}
	a1 := keyOf(do(t, s, "POST", "/v1/aws/s3/sign", signBody("GET", "http://localhost:7070/lake/wh/a.parquet")))
	a2 := keyOf(do(t, s, "POST", "/v1/aws/s3/sign", signBody("GET", "http://localhost:7070/lake/wh/b.parquet")))
	b1 := keyOf(doAs(t, s, bob, "POST", "/v1/aws/s3/sign", signBody("GET", "http://localhost:7070/lake/wh/a.parquet")))
	w1 := keyOf(do(t, s, "POST", "/v1/aws/s3/sign", signBody("PUT", "http://localhost:7070/lake/wh/c.parquet")))
	if a1 != a2 || a1 == b1 || a1 == w1 || a1 == "AKIABASE" || m.n.Load() != 3 {
		t.Fatalf("alice read %s, %s; bob read %s; alice write %s; %d mints: want one session per principal and need, never the base key", a1, a2, b1, w1, m.n.Load())
	}
	var signed, rotations int
	for _, r := range readAudit(t, dir) {
		if r.Event == audit.EventKeyRotation {
			rotations++
		}
		if r.Signing == nil {
			continue
		}
		signed++
		if r.Signing.SourceIdentity != r.Principal.ID || r.Signing.SessionName != r.Principal.ID || !strings.HasPrefix(r.Signing.AccessKeyID, "ASIATEST") {
			t.Fatalf("record %+v signing %+v: want the session's key and the principal as its source identity", r, r.Signing)
		}
	}
	if signed != 4 || rotations != 0 {
		t.Fatalf("%d signed records, %d key rotations; want 4 and none (sessions are not rotations)", signed, rotations)
	}
}

// TestPerPrincipalSessionsFailClosed: STS down means 503 with Retry-After,
// no signature in the answer and none in the audit record.
func TestPerPrincipalSessionsFailClosed(t *testing.T) {
	dir := t.TempDir()
	m := &testMinter{}
	m.down.Store(true)
	s := newSessionTestServer(t, dir, m)
	r := do(t, s, "POST", "/v1/aws/s3/sign", signBody("GET", "http://localhost:7070/lake/wh/a.parquet"))
	if r.status != 503 || r.header["Retry-After"] != "1" || strings.Contains(r.raw, "Authorization") || strings.Contains(r.raw, "AWS4-HMAC") {
		t.Fatalf("STS down: %d %v %s", r.status, r.header, r.raw)
	}
	recs := readAudit(t, dir)
	last := recs[len(recs)-1]
	if last.Kind != audit.KindAccess || last.Status != 503 || last.Signing != nil {
		t.Fatalf("record %+v", last)
	}
	m.down.Store(false)
	if r := do(t, s, "POST", "/v1/aws/s3/sign", signBody("GET", "http://localhost:7070/lake/wh/a.parquet")); r.status != 200 {
		t.Fatalf("STS back: %d %s", r.status, r.raw)
	}
}

// BenchmarkServeSignSessions is BenchmarkServeSign with per-principal
// sessions: the session cache's hit is on the path, and must add no
// allocation (compare allocs/op).
func BenchmarkServeSignSessions(b *testing.B) {
	s := newSessionTestServer(b, b.TempDir(), &testMinter{})
	benchServe(b, s)
}

// TestSkipDecisionHookOff: in a build without the test hook's tag (this
// one, and production's) the hook's header changes nothing: a request the
// policy denies stays denied.
func TestSkipDecisionHookOff(t *testing.T) {
	s := newTestServer(t, testPolicy, nil, Options{})
	var ctx fasthttp.RequestCtx
	ctx.Request.Header.Set("Authorization", "Bearer "+aliceToken())
	ctx.Request.Header.Set("X-Countersign-Test-Skip-Decision", "skip-the-policy")
	ctx.Request.Header.SetMethod("POST")
	ctx.Request.SetRequestURI("/v1/aws/s3/sign")
	ctx.Request.SetBodyString(signBody("GET", "http://localhost:7070/lake/denied/x.parquet"))
	s.Handler()(&ctx)
	if ctx.Response.StatusCode() != 403 {
		t.Fatalf("status %d: %s", ctx.Response.StatusCode(), ctx.Response.Body())
	}
}
