package vend

import (
	"context"
	"math"
	"testing"
	"time"

	"github.com/countersign/countersign/internal/policyinput"
	"github.com/countersign/countersign/policy"
)

// countingScoper is the real scope compiler (policy.Manager), counting
// its compilations.
type countingScoper struct {
	m *policy.Manager
	n int
}

func (c *countingScoper) Scope(ctx context.Context, q ScopeQuery) (Scope, error) {
	c.n++
	ps, err := c.m.Scope(ctx, policy.ScopeQuery{Principal: q.Principal, Access: q.Access, Bucket: q.Bucket, Prefix: q.Prefix, Table: q.Table})
	out := Scope{Exact: ps.Exact, Why: ps.Why, Revision: ps.Revision}
	for _, g := range ps.Grants {
		out.Grants = append(out.Grants, Grant{Bucket: g.Bucket, Prefix: g.Prefix, Actions: g.Actions})
	}
	return out, err
}

// TestScopeCache: a scope is compiled once per (revision, principal,
// query) within the TTL; another revision, principal, class, prefix or
// table, or an expired entry, compiles again; a principal that cannot be
// encoded exactly is never cached, nor is an error.
func TestScopeCache(t *testing.T) {
	ctx := context.Background()
	m, err := policy.NewManager(ctx, policy.SourceConfig{Paths: []string{"../deploy/policies/lib", "../deploy/policies/combined"}}, policy.ManagerOptions{})
	if err != nil {
		t.Fatal(err)
	}
	defer m.Close()
	cs := &countingScoper{m: m}
	now := time.Date(2026, 12, 2, 4, 0, 0, 0, time.UTC)
	c := newScopeCache(cs, func() time.Time { return now })
	ann := policyinput.Principal{ID: "ann", Issuer: "https://idp", Groups: []string{"analysts"}}
	q := ScopeQuery{Principal: ann, Access: "read", Bucket: "lake", Prefix: "wh/db/t/"}
	rev := m.Revision()
	expect := func(what string, q ScopeQuery, rev string, want int) Scope {
		t.Helper()
		s, err := c.scope(ctx, rev, q)
		if err != nil {
			t.Fatal(err)
		}
		if cs.n != want {
			t.Fatalf("%s: %d compilations, want %d", what, cs.n, want)
		}
		return s
	}
	first := expect("first", q, rev, 1)
	if !first.Exact || !first.covers("lake", "wh/db/t/") {
		t.Fatalf("analysts' read scope does not cover wh/db/t/: %+v", first)
	}
	again := expect("same query", q, rev, 1)
	if len(again.Grants) != len(first.Grants) {
		t.Fatalf("cached scope differs: %+v vs %+v", again, first)
	}
	expect("another revision", q, rev+"x", 2)
	etl := q
	etl.Principal.Groups = []string{"etl"}
	expect("another group", etl, rev, 3)
	list := q
	list.Access = "list"
	expect("another class", list, rev, 4)
	sub := q
	sub.Prefix = "wh/db/t/data/"
	expect("another prefix", sub, rev, 5)
	tq := q
	tq.Table = &policyinput.Table{Prefix: "prod", Namespace: []string{"db"}, Name: "t"}
	expect("a table", tq, rev, 6)
	tq2 := tq
	tq2.Table = &policyinput.Table{Prefix: "prod", Namespace: []string{"db"}, Name: "t", Location: "s3://lake/wh/db/t/"}
	expect("the table's location", tq2, rev, 7)
	expect("the table again", tq, rev, 7)
	now = now.Add(scopeCacheTTL)
	expect("expired", q, rev, 8)
	// Claims the principal key cannot encode (nor the policy input: the
	// compiler refuses them): compiled, and refused, every time.
	odd := q
	odd.Principal.Claims = map[string]any{"nan": math.NaN()}
	for i := range 2 {
		if _, err := c.scope(ctx, rev, odd); err == nil || cs.n != 9+i {
			t.Fatalf("unencodable claims, try %d: %v, %d compilations", i, err, cs.n)
		}
	}
	expect("no revision", q, "", 11)
	expect("no revision again", q, "", 12)
}
