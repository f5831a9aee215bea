package policy_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/countersign/countersign/policy"
)

var (
	scopeAnn = policy.Principal{ID: "ann", Issuer: "https://idp.example/", Groups: []string{"analysts"}, Claims: map[string]any{}}
	scopeEve = policy.Principal{ID: "eve", Issuer: "https://idp.example/", Groups: []string{"etl"}, Claims: map[string]any{}}
	tableT   = &policy.Table{Prefix: "prod", Namespace: []string{"db"}, Name: "t"}
)

func loadExampleEngine(t *testing.T, name string) *policy.Engine {
	t.Helper()
	e, err := policy.Load(context.Background(), policy.Options{Paths: []string{libDir, filepath.Join(examplesDir, name)}})
	if err != nil {
		t.Fatal(err)
	}
	return e
}

// grantsOf is a scope's grants as "prefix: actions" lines, for comparing.
func grantsOf(s policy.Scope) []string {
	var out []string
	for _, g := range s.Grants {
		out = append(out, fmt.Sprintf("%s/%s: %s", g.Bucket, g.Prefix, strings.Join(g.Actions, " ")))
	}
	return out
}

func scopeOf(t *testing.T, e *policy.Engine, q policy.ScopeQuery) policy.Scope {
	t.Helper()
	s, err := e.Scope(context.Background(), q)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// TestScopeOfExamples: on the grants, table-scope and combined examples the
// scope is exactly the policy's prefixes — never the bucket — and a
// narrower policy or principal gives a narrower scope: ann's read grants
// are her two prefixes, eve's wh/db/; on the per-table route the
// table-scope and combined policies confine both to the table, combined
// through its deny (eve's group grant covers all of wh/db/). The list
// class is s3:ListBucket on the prefixes and GetBucketLocation where the
// policy allows bucket-level requests.
func TestScopeOfExamples(t *testing.T) {
	read := "s3:GetObject s3:GetObjectTagging s3:GetObjectVersion s3:GetObjectVersionTagging s3:ListMultipartUploadParts"
	cases := []struct {
		policy string
		q      policy.ScopeQuery
		want   []string
	}{
		{"grants", policy.ScopeQuery{Principal: scopeAnn, Access: "read", Bucket: "lake"},
			[]string{"lake/wh/db/t/: " + read, "lake/wh/sales/: " + read}},
		{"grants", policy.ScopeQuery{Principal: scopeEve, Access: "read", Bucket: "lake"},
			[]string{"lake/wh/db/: " + read}},
		{"grants", policy.ScopeQuery{Principal: scopeAnn, Access: "write", Bucket: "lake"}, nil},
		{"grants", policy.ScopeQuery{Principal: scopeEve, Access: "delete", Bucket: "lake"},
			[]string{"lake/wh/db/t/: s3:DeleteObject"}},
		{"grants", policy.ScopeQuery{Principal: scopeEve, Access: "delete_version", Bucket: "lake"}, nil},
		{"grants", policy.ScopeQuery{Principal: scopeAnn, Access: "list", Bucket: "lake"},
			[]string{"lake/: s3:GetBucketLocation", "lake/wh/db/t/: s3:ListBucket", "lake/wh/sales/: s3:ListBucket"}},
		{"grants", policy.ScopeQuery{Principal: scopeAnn, Access: "read", Bucket: "other"}, nil},
		// Vending under a prefix: the scope within it.
		{"grants", policy.ScopeQuery{Principal: scopeEve, Access: "read", Bucket: "lake", Prefix: "wh/db/t/"},
			[]string{"lake/wh/db/t/: " + read}},
		{"grants", policy.ScopeQuery{Principal: scopeAnn, Access: "read", Bucket: "lake", Prefix: "wh/"},
			[]string{"lake/wh/db/t/: " + read, "lake/wh/sales/: " + read}},
		{"grants", policy.ScopeQuery{Principal: scopeAnn, Access: "list", Bucket: "lake", Prefix: "wh/db/t/metadata/"},
			[]string{"lake/wh/db/t/metadata/: s3:ListBucket"}},
		{"table-scope", policy.ScopeQuery{Principal: scopeAnn, Access: "read", Bucket: "lake", Table: tableT},
			[]string{"lake/wh/db/t/: " + read}},
		{"table-scope", policy.ScopeQuery{Principal: scopeAnn, Access: "read", Bucket: "lake"}, nil}, // legacy route refused
		{"table-scope", policy.ScopeQuery{Principal: scopeAnn, Access: "write", Bucket: "lake", Table: tableT}, nil},
		{"table-scope", policy.ScopeQuery{Principal: scopeAnn, Access: "read", Bucket: "lake", Table: &policy.Table{Prefix: "prod", Namespace: []string{"db"}, Name: "t2"}},
			[]string{"lake/wh/db/t2/: " + read}},
		{"combined", policy.ScopeQuery{Principal: scopeEve, Access: "write", Bucket: "lake"},
			[]string{"lake/wh/db/: s3:AbortMultipartUpload s3:DeleteObjectTagging s3:DeleteObjectVersionTagging s3:PutObject s3:PutObjectTagging s3:PutObjectVersionTagging"}},
		{"combined", policy.ScopeQuery{Principal: scopeEve, Access: "write", Bucket: "lake", Table: tableT},
			[]string{"lake/wh/db/t/: s3:AbortMultipartUpload s3:DeleteObjectTagging s3:DeleteObjectVersionTagging s3:PutObject s3:PutObjectTagging s3:PutObjectVersionTagging"}},
		{"combined", policy.ScopeQuery{Principal: scopeAnn, Access: "list", Bucket: "lake", Table: tableT},
			[]string{"lake/wh/db/t/: s3:ListBucket"}}, // bucket-level requests are outside every table
		{"dev", policy.ScopeQuery{Principal: scopeAnn, Access: "write", Bucket: "warehouse"},
			[]string{"warehouse/: s3:AbortMultipartUpload s3:DeleteObjectTagging s3:DeleteObjectVersionTagging s3:PutObject s3:PutObjectTagging s3:PutObjectVersionTagging"}},
		{"dev", policy.ScopeQuery{Principal: scopeAnn, Access: "delete_version", Bucket: "warehouse"}, nil},
	}
	engines := map[string]*policy.Engine{}
	for _, c := range cases {
		e := engines[c.policy]
		if e == nil {
			e = loadExampleEngine(t, c.policy)
			engines[c.policy] = e
		}
		s := scopeOf(t, e, c.q)
		if s.Wider() {
			t.Errorf("%s %+v: wider than the policy's keys: %s", c.policy, c.q, s.Why)
		}
		// Every example composes lib/guardrails, whose denial of
		// headers no session policy carries: no action is exact, and
		// nothing would be vended.
		if len(c.want) > 0 && (s.Exact || !strings.Contains(s.Why, "x-amz-acl")) {
			t.Errorf("%s %+v: exact %v, why %q: want not exact, for the guardrails' header denial", c.policy, c.q, s.Exact, s.Why)
		}
		vq := c.q
		vq.Exact = true
		if v := scopeOf(t, e, vq); len(v.Grants) != 0 {
			t.Errorf("%s %+v: exact-mode grants %q, want none (the guardrails' header denial)", c.policy, vq, grantsOf(v))
		}
		if s.Revision != e.Revision() {
			t.Errorf("revision %q, want %q", s.Revision, e.Revision())
		}
		if got := grantsOf(s); !slices.Equal(got, c.want) {
			t.Errorf("%s %s %s table %v prefix %q:\n got %q\nwant %q", c.policy, c.q.Principal.ID, c.q.Access, c.q.Table, c.q.Prefix, got, c.want)
		}
	}
}

// TestScopeAllClasses: Access "" is every data class, merged by prefix.
func TestScopeAllClasses(t *testing.T) {
	e := loadExampleEngine(t, "grants")
	s := scopeOf(t, e, policy.ScopeQuery{Principal: scopeEve, Bucket: "lake"})
	want := []string{
		"lake/: s3:GetBucketLocation",
		"lake/wh/db/: s3:AbortMultipartUpload s3:DeleteObjectTagging s3:DeleteObjectVersionTagging s3:GetObject s3:GetObjectTagging s3:GetObjectVersion s3:GetObjectVersionTagging s3:ListBucket s3:ListMultipartUploadParts s3:PutObject s3:PutObjectTagging s3:PutObjectVersionTagging",
		"lake/wh/db/t/: s3:DeleteObject",
	}
	if got := grantsOf(s); !slices.Equal(got, want) || s.Wider() {
		t.Fatalf("got %q (wider %v), want %q", got, s.Wider(), want)
	}
}

func TestScopeQueryRefused(t *testing.T) {
	e := loadExampleEngine(t, "grants")
	for _, q := range []policy.ScopeQuery{
		{Principal: scopeAnn, Access: "read"},                  // no bucket
		{Principal: scopeAnn, Access: "admin", Bucket: "lake"}, // never compiled
		{Principal: scopeAnn, Access: "Read", Bucket: "lake"},
	} {
		if _, err := e.Scope(context.Background(), q); !errors.Is(err, policy.ErrScopeQuery) {
			t.Errorf("%+v: err = %v, want ErrScopeQuery", q, err)
		}
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := e.Scope(ctx, policy.ScopeQuery{Principal: scopeAnn, Bucket: "lake"}); !errors.Is(err, context.Canceled) {
		t.Errorf("canceled: err = %v", err)
	}
	var m policy.Manager
	if _, err := m.Scope(context.Background(), policy.ScopeQuery{Principal: scopeAnn, Bucket: "lake"}); !errors.Is(err, policy.ErrNoPolicy) {
		t.Errorf("no policy: err = %v", err)
	}
}

func writePolicyDir(t *testing.T, rego string) string {
	t.Helper()
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "authz.rego"), []byte(rego), 0o644); err != nil {
		t.Fatal(err)
	}
	return dir
}

// TestScopeFallback: where the residual on the key is not a set of
// prefixes — a regex, a prefix taken from a header — the class is granted
// bucket-wide, Exact is false and Why names the expression; the Manager
// logs it and reports it (the metric's hook). An exclusion keeps the
// bounding prefix (wider than the policy, so not exact, but not the
// bucket). A condition on a header alone is not on the key: the scope is
// the prefixes, exact.
func TestScopeFallback(t *testing.T) {
	cases := []struct {
		name, body string
		exact      bool
		want       []string
		why        string
		cond       bool // inexact for a condition not on the key: grants not wider
	}{
		{"regex", `allow if regex.match("^wh/db/[a-z]+/", input.resource.key)`, false,
			[]string{"lake/: s3:GetObject s3:GetObjectTagging s3:GetObjectVersion s3:GetObjectVersionTagging s3:ListMultipartUploadParts"}, "regex.match", false},
		{"header prefix", `allow if startswith(input.resource.key, input.request.headers["x-team"])`, false,
			[]string{"lake/: s3:GetObject s3:GetObjectTagging s3:GetObjectVersion s3:GetObjectVersionTagging s3:ListMultipartUploadParts"}, "x-team", false},
		{"exclusion", "allow if {\n\tstartswith(input.resource.key, \"wh/\")\n\tnot startswith(input.resource.key, \"wh/secret/\")\n}", false,
			[]string{"lake/wh/: s3:GetObject s3:GetObjectTagging s3:GetObjectVersion s3:GetObjectVersionTagging s3:ListMultipartUploadParts"}, "wh/secret/", false},
		// A condition on a header is not on the key: the grants are the
		// prefixes, but not exact (no session policy carries it).
		{"header gate", "allow if {\n\tstartswith(input.resource.key, \"wh/\")\n\tinput.request.headers[\"x-team\"] == \"data\"\n}", false,
			[]string{"lake/wh/: s3:GetObject s3:GetObjectTagging s3:GetObjectVersion s3:GetObjectVersionTagging s3:ListMultipartUploadParts"}, "x-team", true},
		{"source gate", "allow if {\n\tstartswith(input.resource.key, \"wh/\")\n\tinput.source.ip == \"10.0.0.7\"\n}", false,
			[]string{"lake/wh/: s3:GetObject s3:GetObjectTagging s3:GetObjectVersion s3:GetObjectVersionTagging s3:ListMultipartUploadParts"}, "10.0.0.7", true},
		{"arn", `allow if startswith(input.resource.arn, "arn:aws:s3:::lake/wh/db/")`, true,
			[]string{"lake/wh/db/: s3:GetObject s3:GetObjectTagging s3:GetObjectVersion s3:GetObjectVersionTagging s3:ListMultipartUploadParts"}, "", false},
		{"computed allow", "allow := count(deny) == 0 if input.principal.id != \"\"\n\ndeny contains \"outside\" if not startswith(input.resource.key, \"wh/db/\")", true,
			[]string{"lake/wh/db/: s3:GetObject s3:GetObjectTagging s3:GetObjectVersion s3:GetObjectVersionTagging s3:ListMultipartUploadParts"}, "", false},
		// A mint's operation and action are never an S3 request's: what a
		// policy allows only for mints is not in the scope.
		{"mint operation", "allow if input.operation == \"MintCredentials\"\n\nallow if startswith(input.resource.key, \"wh/db/\")", true,
			[]string{"lake/wh/db/: s3:GetObject s3:GetObjectTagging s3:GetObjectVersion s3:GetObjectVersionTagging s3:ListMultipartUploadParts"}, "", false},
		{"mint action", "allow if {\n\t\"sts:AssumeRole\" == input.action\n\tstartswith(input.resource.key, \"wh/\")\n}\n\nallow if startswith(input.resource.key, \"wh/db/\")", true,
			[]string{"lake/wh/db/: s3:GetObject s3:GetObjectTagging s3:GetObjectVersion s3:GetObjectVersionTagging s3:ListMultipartUploadParts"}, "", false},
		// s3:GetObject is GetObject and HeadObject: a policy that allows
		// only one of them is not exact for it.
		{"other operation", "allow if {\n\tinput.operation == \"GetObject\"\n\tstartswith(input.resource.key, \"wh/\")\n}", false,
			[]string{"lake/wh/: s3:GetObject s3:GetObjectVersion"}, "HeadObject", true},
		{"actions", "allow if {\n\tinput.action in {\"s3:GetObject\", \"s3:ListBucket\"}\n\tstartswith(input.resource.key, \"wh/\")\n}", true,
			[]string{"lake/wh/: s3:GetObject"}, "", false},
		// A sign request's input.mint is null, as in the scope's input.
		{"mint null", "allow if {\n\tinput.mint == null\n\tstartswith(input.resource.key, \"wh/\")\n}", true,
			[]string{"lake/wh/: s3:GetObject s3:GetObjectTagging s3:GetObjectVersion s3:GetObjectVersionTagging s3:ListMultipartUploadParts"}, "", false},
		{"equality", `allow if input.resource.key == "wh/db/t/metadata/v1.json"`, true,
			[]string{"lake/wh/db/t/metadata/v1.json: s3:GetObject s3:GetObjectTagging s3:GetObjectVersion s3:GetObjectVersionTagging s3:ListMultipartUploadParts"}, "", false},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			dir := writePolicyDir(t, "package countersign.authz\n\ndefault allow := false\n\n"+c.body+"\n")
			var logs bytes.Buffer
			var reported []string
			m, err := policy.NewManager(context.Background(), policy.SourceConfig{Paths: []string{dir}}, policy.ManagerOptions{
				Logger:          slog.New(slog.NewJSONHandler(&logs, nil)),
				OnScopeFallback: func(access string) { reported = append(reported, access) },
			})
			if err != nil {
				t.Fatal(err)
			}
			defer m.Close()
			s, err := m.Scope(context.Background(), policy.ScopeQuery{Principal: scopeAnn, Access: "read", Bucket: "lake"})
			if err != nil {
				t.Fatal(err)
			}
			if got := grantsOf(s); s.Exact != c.exact || !slices.Equal(got, c.want) {
				t.Fatalf("exact %v %q, want %v %q (why %s)", s.Exact, got, c.exact, c.want, s.Why)
			}
			if c.exact {
				if s.Why != "" || len(reported) != 0 || logs.Len() != 0 {
					t.Fatalf("exact scope reported: why %q, hook %v, log %s", s.Why, reported, logs.String())
				}
				return
			}
			if !strings.Contains(s.Why, c.why) {
				t.Errorf("why %q does not name %q", s.Why, c.why)
			}
			if c.cond {
				if s.Wider() || len(reported) != 0 || logs.Len() != 0 {
					t.Fatalf("scope inexact only for a condition reported as wider: %v, hook %v, log %s", s.Inexact, reported, logs.String())
				}
				return
			}
			if !slices.Equal(reported, []string{"read"}) {
				t.Errorf("OnScopeFallback got %v, want [read]", reported)
			}
			var line map[string]any
			if err := json.Unmarshal(logs.Bytes(), &line); err != nil {
				t.Fatalf("log: %v: %s", err, logs.String())
			}
			if line["level"] != "WARN" || line["principal"] != "ann" || line["access"] != "read" || line["bucket"] != "lake" || !strings.Contains(fmt.Sprint(line["why"]), c.why) {
				t.Errorf("log line %v", line)
			}
		})
	}
}

// TestScopeOfAlwaysFullyEvaluatedPolicy: a policy the fast path refuses
// (a non-deterministic built-in) still gets a scope, by the same partial
// evaluation; one that partial evaluation cannot handle is bucket-wide.
func TestScopeOfPolicyWithNondeterminism(t *testing.T) {
	dir := writePolicyDir(t, "package countersign.authz\n\ndefault allow := false\n\nallow if {\n\tstartswith(input.resource.key, \"wh/\")\n\ttime.now_ns() > 0\n}\n")
	e, err := policy.Load(context.Background(), policy.Options{Paths: []string{dir}})
	if err != nil {
		t.Fatal(err)
	}
	if on, _ := e.FastPath(); on {
		t.Fatal("fast path on: the test needs a policy it refuses")
	}
	s := scopeOf(t, e, policy.ScopeQuery{Principal: scopeAnn, Access: "delete", Bucket: "lake"})
	if got := grantsOf(s); !slices.Equal(got, []string{"lake/wh/: s3:DeleteObject"}) || s.Exact || s.Wider() || !strings.Contains(s.Why, "time.now_ns") {
		t.Fatalf("got %q exact %v (%s): want the prefix, not exact for the clock condition", got, s.Exact, s.Why)
	}
}

// TestScopeSizeLimitOnAManyGrantPolicy: a group with 2,000 prefixes gets
// them all in its scope; sessionpolicy coarsens them (its tests).
func TestScopeManyGrants(t *testing.T) {
	var prefixes []string
	for i := range 2000 {
		prefixes = append(prefixes, fmt.Sprintf("wh/db%d/t%d/", i%13, i))
	}
	data, _ := json.Marshal(map[string]any{"grants": map[string]any{"analysts": map[string]any{"lake": map[string]any{"read": prefixes}}}})
	dir := writePolicyDir(t, "package countersign.authz\n\ndefault allow := false\n\nallow if {\n\tsome g in input.principal.groups\n\tsome p in data.grants[g][input.resource.bucket][input.access]\n\tstartswith(input.resource.key, p)\n}\n")
	if err := os.WriteFile(filepath.Join(dir, "data.json"), data, 0o644); err != nil {
		t.Fatal(err)
	}
	e, err := policy.Load(context.Background(), policy.Options{Paths: []string{dir}})
	if err != nil {
		t.Fatal(err)
	}
	s := scopeOf(t, e, policy.ScopeQuery{Principal: scopeAnn, Access: "read", Bucket: "lake"})
	if len(s.Grants) != 2000 || !s.Exact {
		t.Fatalf("%d grants (exact %v), want 2000", len(s.Grants), s.Exact)
	}
}

// TestScopeConcurrent: an Engine compiles scopes from many goroutines at
// once (its partial queries are prepared once and shared), each the same
// as alone; run with -race.
func TestScopeConcurrent(t *testing.T) {
	e := loadExampleEngine(t, "combined")
	q := policy.ScopeQuery{Principal: scopeEve, Bucket: "lake", Table: tableT}
	want := grantsOf(scopeOf(t, e, q))
	errs := make(chan error, 8)
	for i := range 8 {
		go func() {
			q := q
			if i%2 == 1 {
				q.Table = nil
			}
			for range 3 {
				s, err := e.Scope(context.Background(), q)
				if err != nil {
					errs <- err
					return
				}
				if q.Table != nil && !slices.Equal(grantsOf(s), want) {
					errs <- fmt.Errorf("concurrent scope %q, want %q", grantsOf(s), want)
					return
				}
			}
			errs <- nil
		}()
	}
	for range 8 {
		if err := <-errs; err != nil {
			t.Fatal(err)
		}
	}
}
