package policy_test

import (
	"context"
	"strconv"
	"testing"

	"github.com/countersign/countersign/policy"
)

// BenchmarkScope: compiling one principal's scope on the combined example,
// every data class, on the per-table route: uncached (a new principal
// each time) and cached (the same query again).
func BenchmarkScope(b *testing.B) {
	e, err := policy.Load(context.Background(), policy.Options{Paths: []string{libDir, examplesDir + "/combined"}})
	if err != nil {
		b.Fatal(err)
	}
	ctx := context.Background()
	q := policy.ScopeQuery{Principal: policy.Principal{ID: "eve", Issuer: "https://idp.example/", Groups: []string{"etl"}}, Bucket: "lake", Table: tableT}
	b.Run("uncached", func(b *testing.B) {
		i := 0
		for b.Loop() {
			q := q
			q.Principal.ID = "eve" + strconv.Itoa(i)
			i++
			if _, err := e.Scope(ctx, q); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("cached", func(b *testing.B) {
		if _, err := e.Scope(ctx, q); err != nil {
			b.Fatal(err)
		}
		for b.Loop() {
			if _, err := e.Scope(ctx, q); err != nil {
				b.Fatal(err)
			}
		}
	})
}

// BenchmarkMintScopes: what a read-write mint for a new principal asks
// the scope compiler (read, write, list and delete, in exact mode, under
// the table's location, on the per-table route), uncached.
func BenchmarkMintScopes(b *testing.B) {
	e, err := policy.Load(context.Background(), policy.Options{Paths: []string{libDir, examplesDir + "/combined"}})
	if err != nil {
		b.Fatal(err)
	}
	ctx := context.Background()
	i := 0
	for b.Loop() {
		p := policy.Principal{ID: "eve" + strconv.Itoa(i), Issuer: "https://idp.example/", Groups: []string{"etl"}}
		i++
		for _, class := range []string{"read", "write", "list", "delete"} {
			if _, err := e.Scope(ctx, policy.ScopeQuery{Principal: p, Access: class, Bucket: "lake", Prefix: "wh/db/t/", Table: tableT, Exact: true}); err != nil {
				b.Fatal(err)
			}
		}
	}
}
