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
	ps, err := s.m.Scope(ctx, policy.ScopeQuery{Principal: q.Principal, Access: q.Access, Bucket: q.Bucket, Prefix: q.Prefix, Table: q.Table, Exact: true})
	out := vend.Scope{Exact: ps.Exact, Why: ps.Why, Revision: ps.Revision}
	for _, x := range ps.Inexact {
		if out.Inexact == nil {
			out.Inexact = map[string]string{}
		}
		out.Inexact[x.Action] = x.Why
	}
	for _, g := range ps.Grants {
		out.Grants = append(out.Grants, vend.Grant{Bucket: g.Bucket, Prefix: g.Prefix, Actions: g.Actions})
	}
	return out, err
}

// policies compiles session policies as cmd/countersign does, and keeps
// the last one (the minter here never answers).
type policies struct{ last *string }

func (p policies) SessionPolicy(s vend.Scope) (string, error) {
	ps := policy.Scope{Exact: s.Exact}
	for _, g := range s.Grants {
		ps.Grants = append(ps.Grants, policy.ScopeGrant{Bucket: g.Bucket, Prefix: g.Prefix, Actions: g.Actions})
	}
	d, err := sessionpolicy.Compile(ps, sessionpolicy.Options{MaxBytes: session.MaxPolicyBytes, Exact: true})
	if p.last != nil {
		*p.last = d.JSON()
	}
	return d.JSON(), err
}

type fixture struct {
	svc  *vend.Service
	log  *audit.Log
	dir  string
	docs *string // the last session policy compiled
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
	var last string
	svc, err := vend.New(vend.Stages{Tables: m, Authorizer: m, Scoper: scoper{m}, SessionPolicies: policies{&last}, Minter: minter, Audit: log}, vend.Options{})
	if err != nil {
		t.Fatal(err)
	}
	return &fixture{svc: svc, log: log, dir: dir, docs: &last}
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
		// The example composes lib/guardrails, whose denial of headers
		// on every request no session policy carries.
		{"guardrails' header denial", vend.Request{Identity: identity("ann", later, "analysts"), Location: "s3://lake/wh/db/t/", Access: vend.Read}, 403, "x-amz-acl"},
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
	want := []string{"- unauthenticated 401 ", "ann deny 404 ", "ann malformed 400 read", "ann deny 401 read", "ann deny 403 read", "ann deny 403 read-write", "ann deny 403 read", "- unauthenticated 401 "}
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

// loadRego is a manager with one policy file.
func loadRego(t *testing.T, rego string) *policy.Manager {
	t.Helper()
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "authz.rego"), []byte("package countersign.authz\n\ndefault allow := false\n\n"+rego), 0o644); err != nil {
		t.Fatal(err)
	}
	m, err := policy.NewManager(context.Background(), policy.SourceConfig{Paths: []string{dir}}, policy.ManagerOptions{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { m.Close() })
	return m
}

// vendPath is the key, or for a list or a mint the prefix, a request is
// about.
const vendPath = `path := input.resource.prefix if is_string(input.resource.prefix)

path := object.get(input.resource, "key", "") if not is_string(input.resource.prefix)

`

// mintAllowed: every mint under wh/ is allowed as a decision of its own;
// what the credentials carry is the S3 requests' scope.
const mintAllowed = `allow if {
	input.operation == "MintCredentials"
	startswith(path, "wh/")
}

`

// mintDoc mints r (the STS is down: 503) and returns the session policy
// the credentials would have carried.
func mintDoc(t *testing.T, f *fixture, r vend.Request) string {
	t.Helper()
	*f.docs = ""
	_, err := f.svc.Mint(context.Background(), &r)
	refusedWith(t, err, http.StatusServiceUnavailable, "the STS is unavailable")
	if *f.docs == "" {
		t.Fatal("no session policy compiled")
	}
	return *f.docs
}

// TestMintIsExactInAction: a policy that allows S3 requests only by the
// action s3:GetObject or s3:ListBucket vends exactly those: a read-write
// mint is refused naming s3:PutObject, a mint of either access gets read
// credentials without s3:PutObject, s3:DeleteObject or any version or
// tagging action (the scope compiler once dropped conditions on
// input.action and vended all of them).
func TestMintIsExactInAction(t *testing.T) {
	f := newFixture(t, loadRego(t, vendPath+mintAllowed+`allow if {
	input.action in {"s3:GetObject", "s3:ListBucket"}
	startswith(path, "wh/")
}
`))
	later := time.Now().Add(time.Hour)
	_, err := f.svc.Mint(context.Background(), &vend.Request{Identity: identity("ann", later), Location: "s3://lake/wh/db/t/", Access: vend.ReadWrite})
	refusedWith(t, err, http.StatusForbidden, "does not allow s3:PutObject on every key under it")
	doc := mintDoc(t, f, vend.Request{Identity: identity("ann", later), Location: "s3://lake/wh/db/t/"})
	want := `{"Version":"2012-10-17","Statement":[{"Effect":"Allow","Action":["s3:GetObject"],"Resource":["arn:aws:s3:::lake/wh/db/t/*"]},{"Effect":"Allow","Action":["s3:ListBucket"],"Resource":["arn:aws:s3:::lake"],"Condition":{"StringLike":{"s3:prefix":["wh/db/t/*"]}}}]}`
	if doc != want {
		t.Fatalf("session policy\n got %s\nwant %s", doc, want)
	}
}

// TestMintVersionsOnlyWhereAllowed: s3:GetObjectVersion is vended only
// when the policy allows reading a version: a policy that refuses every
// request naming a version vends no version action; one that does not
// condition on versions vends them (the positive control).
func TestMintVersionsOnlyWhereAllowed(t *testing.T) {
	later := time.Now().Add(time.Hour)
	reads := vendPath + mintAllowed + `allow if {
	input.access in {"read", "list"}
	startswith(path, "wh/")
	not versioned
}

versioned if input.resource.version_id != ""
`
	doc := mintDoc(t, newFixture(t, loadRego(t, reads)), vend.Request{Identity: identity("ann", later), Location: "s3://lake/wh/db/t/", Access: vend.Read})
	if strings.Contains(doc, "VersionTagging") || strings.Contains(doc, "s3:GetObjectVersion") || !strings.Contains(doc, `"s3:GetObject"`) {
		t.Fatalf("policy refusing versions: session policy %s", doc)
	}
	any := strings.Replace(reads, "\tnot versioned\n", "", 1)
	doc = mintDoc(t, newFixture(t, loadRego(t, any)), vend.Request{Identity: identity("ann", later), Location: "s3://lake/wh/db/t/", Access: vend.Read})
	if !strings.Contains(doc, "s3:GetObjectVersion") {
		t.Fatalf("policy allowing versions: session policy %s", doc)
	}
}

// TestMintRefusesHeaderConditions: a policy whose write is allowed only
// with a header (here: SSE-KMS required) is never vended for writing: the
// credentials would write without it. Read-write is refused naming the
// condition, and a mint of either access gets read credentials only.
func TestMintRefusesHeaderConditions(t *testing.T) {
	f := newFixture(t, loadRego(t, vendPath+mintAllowed+`allow if {
	input.access in {"read", "list"}
	startswith(path, "wh/")
}

allow if {
	input.access in {"write", "delete"}
	startswith(path, "wh/")
	input.request.headers["x-amz-server-side-encryption"] == "aws:kms"
}
`))
	later := time.Now().Add(time.Hour)
	_, err := f.svc.Mint(context.Background(), &vend.Request{Identity: identity("ann", later), Location: "s3://lake/wh/db/t/", Access: vend.ReadWrite})
	refusedWith(t, err, http.StatusForbidden, "x-amz-server-side-encryption")
	doc := mintDoc(t, f, vend.Request{Identity: identity("ann", later), Location: "s3://lake/wh/db/t/"})
	for _, a := range []string{"s3:PutObject", "s3:DeleteObject", "s3:AbortMultipartUpload", "s3:PutObjectTagging", "s3:DeleteObjectTagging"} {
		if strings.Contains(doc, a) {
			t.Errorf("session policy carries %s: %s", a, doc)
		}
	}
	if !strings.Contains(doc, `"s3:GetObject"`) {
		t.Errorf("no read in %s", doc)
	}
}

// TestMintRefusesMetacharacters: a location with an IAM metacharacter is
// refused (400) naming it, before any decision: lake/wh/db/$/ was once
// decided as wh/db/$/ and minted as lake/wh/db/*, every sibling of $/.
func TestMintRefusesMetacharacters(t *testing.T) {
	f := newFixture(t, loadRego(t, vendPath+mintAllowed+`allow if startswith(path, "wh/")
`))
	later := time.Now().Add(time.Hour)
	for _, loc := range []string{"s3://lake/wh/db/$/", "s3://lake/wh/db/${*}/", "s3://lake/wh/*/", "s3://lake/wh/a?/"} {
		_, err := f.svc.Mint(context.Background(), &vend.Request{Identity: identity("ann", later), Location: loc, Access: vend.ReadWrite})
		c := loc[strings.IndexAny(loc, "*?$")]
		refusedWith(t, err, http.StatusBadRequest, fmt.Sprintf("contains %q", c))
	}
	// A policy grant holding one under an exact location is left out.
	doc := mintDoc(t, f, vend.Request{Identity: identity("ann", later), Location: "s3://lake/wh/db/", Access: vend.Read})
	if strings.ContainsAny(doc, "$?") || !strings.Contains(doc, `"arn:aws:s3:::lake/wh/db/*"`) {
		t.Fatalf("session policy %s", doc)
	}
}
