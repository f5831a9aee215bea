package auth

import (
	"context"
	"testing"
)

// BenchmarkAuthenticateCached is the hot path: a scan presenting the same
// token again and again.
func BenchmarkAuthenticateCached(b *testing.B) {
	a, _, c := newJWKSAuth(b)
	h := bearer(mint(hdr("RS256", "rsa1"), claimsAt(c.Now()), rs256(testRSA())))
	ctx := context.Background()
	if _, err := a.Authenticate(ctx, h, nil); err != nil {
		b.Fatal(err)
	}
	b.ReportAllocs()
	for b.Loop() {
		if _, err := a.Authenticate(ctx, h, nil); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkAuthenticateCachedParallel shows the cache under contention
// (the LRU takes a lock on every hit to record recency).
func BenchmarkAuthenticateCachedParallel(b *testing.B) {
	a, _, c := newJWKSAuth(b)
	h := bearer(mint(hdr("RS256", "rsa1"), claimsAt(c.Now()), rs256(testRSA())))
	ctx := context.Background()
	if _, err := a.Authenticate(ctx, h, nil); err != nil {
		b.Fatal(err)
	}
	b.ReportAllocs()
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			if _, err := a.Authenticate(ctx, h, nil); err != nil {
				b.Fatal(err)
			}
		}
	})
}

func benchUncached(b *testing.B, alg, kid string, sign signer) {
	a, _, c := newJWKSAuth(b)
	h := bearer(mint(hdr(alg, kid), claimsAt(c.Now()), sign))
	ctx := context.Background()
	b.ReportAllocs()
	for b.Loop() {
		a.cache.lru.Purge()
		if _, err := a.Authenticate(ctx, h, nil); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkAuthenticateRS256Uncached is a full verification: parse,
// RSA-2048 signature, claims.
func BenchmarkAuthenticateRS256Uncached(b *testing.B) {
	benchUncached(b, "RS256", "rsa1", rs256(testRSA()))
}

func BenchmarkAuthenticateES256Uncached(b *testing.B) {
	benchUncached(b, "ES256", "ec1", es256(testEC()))
}

func BenchmarkAuthenticateEdDSAUncached(b *testing.B) {
	benchUncached(b, "EdDSA", "ed1", eddsa(testEd()))
}
