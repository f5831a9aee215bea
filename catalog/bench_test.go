package catalog

import (
	"context"
	"testing"

	"github.com/countersign/countersign/auth"
)

// knownFront is a front whose upstream is never asked: every location
// the benchmarks look up was learned.
func knownFront(tb testing.TB) (*Front, [32]byte) {
	f, err := New(Options{Config: Config{Upstream: "http://127.0.0.1:9"}})
	if err != nil {
		tb.Fatal(err)
	}
	tok, _ := auth.TokenHash([]byte("Bearer ann"))
	f.locations.learn(tok, "/v1/prod/namespaces/db/tables/t", "s3://lake/wh/db/t")
	return f, tok
}

// BenchmarkLocateKnown is what the sign route adds for a table whose
// location the front knows: one cache lookup.
func BenchmarkLocateKnown(b *testing.B) {
	f, tok := knownFront(b)
	ctx := context.Background()
	b.ReportAllocs()
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			if loc, err := f.Locate(ctx, tok, nil, "/v1/prod/namespaces/db/tables/t"); err != nil || loc == "" {
				b.Fatal(loc, err)
			}
		}
	})
}

func TestLocateKnownAllocatesNothing(t *testing.T) {
	f, tok := knownFront(t)
	ctx := context.Background()
	table := "/v1/prod/namespaces/db/tables/t"
	if n := testing.AllocsPerRun(1000, func() {
		if _, err := f.Locate(ctx, tok, nil, table); err != nil {
			t.Fatal(err)
		}
	}); n != 0 {
		t.Fatalf("%v allocations per known-table lookup", n)
	}
}
