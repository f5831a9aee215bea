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
