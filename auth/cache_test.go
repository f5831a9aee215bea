package auth

import (
	"context"
	"testing"
	"time"
)

func TestCache(t *testing.T) {
	a, srv, c := newJWKSAuth(t)
	now := c.Now()
	tok := mint(hdr("RS256", "rsa1"), with(claimsAt(now), "exp", now.Add(10*time.Minute).Unix()), rs256(testRSA()))
	id1 := mustAuth(t, a, tok)
	id2 := mustAuth(t, a, tok)
	if id1 != id2 {
		t.Fatal("a cache hit returned another identity")
	}
	if srv.fetches.Load() != 1 {
		t.Fatal("a cache hit fetched keys")
	}
	if _, ok := a.cache.get(id1.TokenHash, c.Now(), a.keys.current().gen); !ok {
		t.Fatal("the token is not in the cache under its hash")
	}

	// Still valid after exp, within the leeway, exactly as a full
	// verification would judge it.
	c.Advance(10*time.Minute + 29*time.Second)
	if id := mustAuth(t, a, tok); id != id1 {
		t.Fatal("a cache hit within the leeway returned another identity")
	}
	c.Advance(time.Second)
	expectReason(t, a, bearer(tok), ReasonExpired)
	if a.cache.lru.Contains(id1.TokenHash) {
		t.Fatal("an expired entry stayed in the cache")
	}

	// A failed verification is not cached: the same bad token fails the
	// same way twice, and does not occupy the cache.
	bad := mint(hdr("RS256", "rsa1"), claimsAt(c.Now()), rs256(testRSA2()))
	expectReason(t, a, bearer(bad), ReasonBadSignature)
	expectReason(t, a, bearer(bad), ReasonBadSignature)
	if a.cache.lru.Len() != 0 {
		t.Fatalf("%d entries after failures", a.cache.lru.Len())
	}
}

func TestCacheSize(t *testing.T) {
	srv := newJWKSServer(t, defaultJWKS())
	cfg := jwksConfig(srv.URL)
	cfg.CacheSize = 2
	c := newClock(t0)
	a := newAuth(t, cfg, c)
	var ids []*Identity
	var toks []string
	for _, jti := range []string{"a", "b", "c"} {
		tok := mint(hdr("EdDSA", "ed1"), with(claimsAt(c.Now()), "jti", jti), eddsa(testEd()))
		toks = append(toks, tok)
		ids = append(ids, mustAuth(t, a, tok))
	}
	if a.cache.lru.Len() != 2 {
		t.Fatalf("cache holds %d, want 2", a.cache.lru.Len())
	}
	if mustAuth(t, a, toks[0]) == ids[0] {
		t.Fatal("the least recently used token was not evicted")
	}
	if mustAuth(t, a, toks[2]) != ids[2] {
		t.Fatal("a recent token was evicted")
	}
}

func TestCachedLookupDoesNotAllocate(t *testing.T) {
	a, _, c := newJWKSAuth(t)
	h := bearer(mint(hdr("RS256", "rsa1"), claimsAt(c.Now()), rs256(testRSA())))
	ctx := context.Background()
	if _, err := a.Authenticate(ctx, h, nil); err != nil {
		t.Fatal(err)
	}
	allocs := testing.AllocsPerRun(100, func() {
		if _, err := a.Authenticate(ctx, h, nil); err != nil {
			t.Fatal(err)
		}
	})
	if allocs != 0 {
		t.Fatalf("%v allocations per cached Authenticate", allocs)
	}
}
