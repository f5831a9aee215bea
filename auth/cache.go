package auth

import (
	"sync/atomic"
	"time"

	lru "github.com/hashicorp/golang-lru/v2"
)

// verifiedCache remembers successful verifications, keyed by the SHA-256
// of the raw token. Public-key verification costs tens of microseconds
// and a table scan presents the same token thousands of times; a hit costs
// the hash and a map lookup.
//
// A hit is honoured only while
//   - now < exp + leeway: the same rule as a full verification, so a
//     cached token never lives longer than an uncached one; and
//   - the key set generation is the one the token was verified under: a
//     refresh that removes or replaces any key voids every cached entry,
//     so a removed key stops vouching for cached tokens within one
//     refresh interval (auth.jwks_refresh) of its removal from the JWKS.
//     Voiding everything on removal is simpler than tracking which key
//     verified which token, and removals are rare.
//
// Failures are not cached: a bad token costs a full check every time, so
// an attacker cannot make a forged token stick, and only tokens with an
// exp are cached, so nothing stays valid on the cache's say-so alone.
type verifiedCache struct {
	lru *lru.Cache[[32]byte, *cacheEntry]
}

type cacheEntry struct {
	id       *Identity
	notAfter time.Time // exp + leeway
	gen      uint64
	token    []byte      // the token itself, for tokenMemo (memo.go)
	evicted  atomic.Bool // out of the cache: the memo must not outlive it
}

// valid is the rule every hit is held to, in the cache and in the memo.
func (e *cacheEntry) valid(now time.Time, gen uint64) bool {
	return e.gen == gen && now.Before(e.notAfter)
}

func newVerifiedCache(size int) (*verifiedCache, error) {
	c, err := lru.NewWithEvict(size, func(_ [32]byte, e *cacheEntry) { e.evicted.Store(true) })
	if err != nil {
		return nil, err
	}
	return &verifiedCache{lru: c}, nil
}

// get returns the cached entry if it is still valid at now under key
// set generation gen; an entry that is no longer valid is dropped.
func (c *verifiedCache) get(key [32]byte, now time.Time, gen uint64) (*cacheEntry, bool) {
	e, ok := c.lru.Get(key)
	if !ok {
		return nil, false
	}
	if !e.valid(now, gen) {
		c.lru.Remove(key)
		return nil, false
	}
	return e, true
}

func (c *verifiedCache) add(key [32]byte, e *cacheEntry) { c.lru.Add(key, e) }
