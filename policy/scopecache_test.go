package policy

import (
	"context"
	"testing"
)

// TestScopeCached: asking again for the same scope runs no partial
// evaluation; another principal, class or table does; a caller changing
// its copy does not change the cached one.
func TestScopeCached(t *testing.T) {
	ctx := context.Background()
	e, err := Load(ctx, Options{Paths: []string{"../deploy/policies/lib", "../deploy/policies/grants"}})
	if err != nil {
		t.Fatal(err)
	}
	ann := Principal{ID: "ann", Issuer: "https://idp.example/", Groups: []string{"analysts"}, Claims: map[string]any{"k": "v"}}
	q := ScopeQuery{Principal: ann, Access: "read", Bucket: "lake"}
	first, err := e.Scope(ctx, q)
	if err != nil {
		t.Fatal(err)
	}
	n := e.scope.partials.Load()
	if n != 1 {
		t.Fatalf("%d partial evaluations for one read scope, want 1", n)
	}
	first.Grants[0].Prefix, first.Grants[0].Actions[0] = "changed", "changed"
	again, err := e.Scope(ctx, q)
	if err != nil {
		t.Fatal(err)
	}
	if got := e.scope.partials.Load(); got != n {
		t.Fatalf("the same query ran %d more partial evaluations", got-n)
	}
	if again.Grants[0].Prefix != "wh/db/t/" || again.Grants[0].Actions[0] != "s3:GetObject" {
		t.Fatalf("a caller's change reached the cache: %+v", again.Grants[0])
	}
	other := q
	other.Principal.Claims = map[string]any{"k": "w"}
	if _, err := e.Scope(ctx, other); err != nil {
		t.Fatal(err)
	}
	if got := e.scope.partials.Load(); got != n+1 {
		t.Fatalf("another principal's claims: %d partial evaluations, want %d", got, n+1)
	}
}
