package vend_test

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/credentials"
	"github.com/aws/aws-sdk-go-v2/service/sts"

	"github.com/countersign/countersign/audit"
	"github.com/countersign/countersign/auth"
	"github.com/countersign/countersign/internal/policyinput"
	"github.com/countersign/countersign/policy"
	"github.com/countersign/countersign/session"
	"github.com/countersign/countersign/sessionpolicy"
	"github.com/countersign/countersign/vend"
)

// These tests cover the refusals decided before STS is called, with the
// real policy manager, scope compiler, session-policy compiler and audit
// log; the STS minter is the real one, pointed at a port nothing listens
// on, so an allowed mint fails there (e2e/vend_test.go mints for real
// against SeaweedFS's STS).

type scoper struct{ m *policy.Manager }

func (s scoper) Scope(ctx context.Context, q vend.ScopeQuery) (vend.Scope, error) {
	ps, err := s.m.Scope(ctx, policy.ScopeQuery{Principal: q.Principal, Access: q.Access, Bucket: q.Bucket, Prefix: q.Prefix, Table: q.Table})
	out := vend.Scope{Exact: ps.Exact, Why: ps.Why, Revision: ps.Revision}
	for _, g := range ps.Grants {
		out.Grants = append(out.Grants, vend.Grant{Bucket: g.Bucket, Prefix: g.Prefix, Actions: g.Actions})
	}
	return out, err
}

type policies struct{}

func (policies) SessionPolicy(s vend.Scope) (string, error) {
	ps := policy.Scope{Exact: s.Exact}
	for _, g := range s.Grants {
		ps.Grants = append(ps.Grants, policy.ScopeGrant{Bucket: g.Bucket, Prefix: g.Prefix, Actions: g.Actions})
	}
	d, err := sessionpolicy.Compile(ps, sessionpolicy.Options{MaxBytes: session.MaxPolicyBytes})
	return d.JSON(), err
}

type fixture struct {
	svc *vend.Service
	log *audit.Log
	dir string
}

func newFixture(t *testing.T, m *policy.Manager) *fixture {
	t.Helper()
	minter, err := session.NewSTS(session.STSOptions{
		Client: sts.New(sts.Options{Region: "us-east-1", BaseEndpoint: aws.String("http://127.0.0.1:1"),
			Credentials: credentials.NewStaticCredentialsProvider("AK", "SK", "")}),
		RoleARN: "arn:aws:iam::000000000000:role/vend-test",
	})
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	signer, _, hmacKey, err := audit.GenerateKeys("vend-test")
	if err != nil {
		t.Fatal(err)
	}
	log, err := audit.Open(audit.Config{Dir: dir, NodeID: "test"}, audit.Options{CheckpointKey: signer, HMACKey: []byte(hmacKey)})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { log.Close() })
	svc, err := vend.New(vend.Stages{Tables: m, Authorizer: m, Scoper: scoper{m}, SessionPolicies: policies{}, Minter: minter, Audit: log}, vend.Options{})
	if err != nil {
		t.Fatal(err)
	}
	return &fixture{svc: svc, log: log, dir: dir}
}

// records closes the log and returns its access records.
func (f *fixture) records(t *testing.T) []*audit.Record {
	t.Helper()
	if err := f.log.Close(); err != nil {
		t.Fatal(err)
	}
	var out []*audit.Record
	if err := audit.Query(context.Background(), os.DirFS(f.dir), audit.Filter{Kind: audit.KindAccess}, func(r *audit.Record, _ []byte) error {
		out = append(out, r)
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	return out
}

func identity(id string, expires time.Time, groups ...string) *auth.Identity {
	return &auth.Identity{Principal: policyinput.Principal{ID: id, Issuer: "https://idp", Groups: groups}, Method: auth.MethodBearer, ExpiresAt: expires}
}

func refusedWith(t *testing.T, err error, status int, text string) {
	t.Helper()
	var e *vend.Error
	if !errors.As(err, &e) || e.Status != status || !strings.Contains(e.Msg, text) {
		t.Fatalf("refusal %v, want %d with %q", err, status, text)
	}
	if status == http.StatusServiceUnavailable && e.RetryAfter == 0 {
		t.Fatalf("503 without Retry-After: %+v", e)
	}
}

func loadExample(t *testing.T, name string) *policy.Manager {
	t.Helper()
	m, err := policy.NewManager(context.Background(), policy.SourceConfig{Paths: []string{"../deploy/policies/lib", filepath.Join("../deploy/policies", name)}}, policy.ManagerOptions{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { m.Close() })
	return m
}

// TestMintFailsClosed: no policy loaded is 503 with nothing minted;
// nobody, an unknown table, a bad location, a token about to expire and a
// denial are refused before the STS; an allowed mint whose STS is down is
// 503; each refusal is one record naming what was asked.
func TestMintFailsClosed(t *testing.T) {
	ctx := context.Background()
	later := time.Now().Add(time.Hour)

	f := newFixture(t, &policy.Manager{}) // no policy loaded
	_, err := f.svc.Mint(ctx, &vend.Request{Identity: identity("ann", later, "analysts"), Location: "s3://lake/wh/db/t/", Access: vend.Read, SourceIP: "10.0.0.1", RequestID: "r1"})
	refusedWith(t, err, http.StatusServiceUnavailable, "policy evaluation is unavailable")
	_, err = f.svc.Mint(ctx, &vend.Request{Identity: identity("ann", later, "analysts"), Table: &policyinput.Table{Prefix: "prod", Namespace: []string{"db"}, Name: "t"}})
	refusedWith(t, err, http.StatusServiceUnavailable, "table locations are unavailable")
	recs := f.records(t)
	if len(recs) != 2 || recs[0].Decision != audit.DecisionError || recs[0].Status != 503 || recs[0].Mint == nil ||
		recs[0].Mint.AccessKeyID != "" || recs[0].Bucket != "lake" || *recs[0].Prefix != "wh/db/t/" || recs[0].SourceIP != "10.0.0.1" {
		t.Fatalf("records of the failed mints: %+v", recs)
	}

	f = newFixture(t, loadExample(t, "combined"))
	for _, c := range []struct {
		name   string
		req    vend.Request
		status int
		text   string
	}{
		{"nobody", vend.Request{Location: "s3://lake/wh/db/t/"}, 401, "not authenticated"},
		{"unknown table", vend.Request{Identity: identity("ann", later, "analysts"), Table: &policyinput.Table{Prefix: "prod", Namespace: []string{"db"}, Name: "nope"}}, 404, "table db.nope has no known location"},
		{"bad location", vend.Request{Identity: identity("ann", later, "analysts"), Location: "gs://lake/wh/", Access: vend.Read}, 400, "not an s3:// URL"},
		{"token expires too soon", vend.Request{Identity: identity("ann", time.Now().Add(5*time.Minute), "analysts"), Location: "s3://lake/wh/db/t/", Access: vend.Read}, 401, "refresh the token"},
		{"denied by policy", vend.Request{Identity: identity("ann", later, "analysts"), Location: "s3://lake/wh/db/", Access: vend.Read}, 403, "access denied: read credentials for s3://lake/wh/db/"},
		{"write not granted", vend.Request{Identity: identity("ann", later, "analysts"), Location: "s3://lake/wh/db/t/", Access: vend.ReadWrite}, 403, "read-write credentials"},
		{"allowed, STS down", vend.Request{Identity: identity("ann", later, "analysts"), Location: "s3://lake/wh/db/t/", Access: vend.Read}, 503, "the STS is unavailable; nothing was vended"},
	} {
		_, err := f.svc.Mint(ctx, &c.req)
		t.Run(c.name, func(t *testing.T) { refusedWith(t, err, c.status, c.text) })
	}
	if err := f.svc.Refused(ctx, &vend.Request{Location: "s3://lake/wh/", SourceIP: "10.0.0.9"}, 401, "authentication failed (expired)"); err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, r := range f.records(t) {
		if r.Operation != audit.OperationMint || r.Role != audit.RolePrefix || r.Mint == nil || r.Mint.AccessKeyID != "" {
			t.Fatalf("not a refused mint's record: %+v", r)
		}
		who := "-"
		if r.Principal != nil {
			who = r.Principal.ID
		}
		got = append(got, fmt.Sprintf("%s %s %d %s", who, r.Decision, r.Status, r.Access))
	}
	want := []string{"- unauthenticated 401 ", "ann deny 404 ", "ann malformed 400 read", "ann deny 401 read", "ann deny 403 read", "ann deny 403 read-write", "ann error 503 read", "- unauthenticated 401 "}
	if strings.Join(got, "|") != strings.Join(want, "|") {
		t.Fatalf("records\n got %q\nwant %q", got, want)
	}
}

// TestMintOnlyRuleDoesNotWidenTheScope: a policy that allows mints on
// their own (input.operation == "MintCredentials") and S3 reads only under
// wh/db/t/ vends only under wh/db/t/. The scope is what S3 requests may
// reach; were the mint rule counted in it, the scope would be the whole
// bucket and the mint of wh/ would reach the STS (here: 503) instead of
// being refused.
func TestMintOnlyRuleDoesNotWidenTheScope(t *testing.T) {
	dir := t.TempDir()
	rego := "package countersign.authz\n\ndefault allow := false\n\n" +
		"allow if input.operation == \"MintCredentials\"\n\n" +
		"allow if input.action == \"sts:AssumeRole\"\n\n" +
		"allow if startswith(input.resource.key, \"wh/db/t/\")\n"
	if err := os.WriteFile(filepath.Join(dir, "authz.rego"), []byte(rego), 0o644); err != nil {
		t.Fatal(err)
	}
	m, err := policy.NewManager(context.Background(), policy.SourceConfig{Paths: []string{dir}}, policy.ManagerOptions{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { m.Close() })
	f := newFixture(t, m)
	later := time.Now().Add(time.Hour)
	_, err = f.svc.Mint(context.Background(), &vend.Request{Identity: identity("ann", later), Location: "s3://lake/wh/", Access: vend.Read})
	refusedWith(t, err, http.StatusForbidden, "access denied: read credentials for s3://lake/wh/")
	_, err = f.svc.Mint(context.Background(), &vend.Request{Identity: identity("ann", later), Location: "s3://lake/wh/db/t/", Access: vend.Read})
	refusedWith(t, err, http.StatusServiceUnavailable, "the STS is unavailable")
}
