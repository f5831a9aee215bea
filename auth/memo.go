package auth

import (
	"encoding/binary"
	"sync/atomic"
)

// tokenMemo sits in front of the verified cache: the entries the cache
// last returned, each holding its token's exact bytes, in slots chosen by
// the token's last bytes (its signature's). A table scan presents one
// token thousands of times; a memo hit is one constant-time comparison of
// the token (~60 ns for a JWT of 800 bytes) instead of its SHA-256 and the
// LRU's lock (~0.5 µs). An entry is honoured under exactly the cache's
// rules (verifiedCache.get: exp + leeway, key set generation) and only
// while the cache holds it (evicted, removed or purged entries are
// flagged), so the memo never accepts a token the cache would not; it
// holds pointers to the cache's entries, at most memoSlots of them.
type tokenMemo struct {
	slots [memoSlots]atomic.Pointer[cacheEntry]
}

const (
	memoBits  = 6
	memoSlots = 1 << memoBits
)

// slot is where tok is remembered.
func (m *tokenMemo) slot(tok []byte) *atomic.Pointer[cacheEntry] {
	var tail uint64
	if len(tok) >= 8 {
		tail = binary.LittleEndian.Uint64(tok[len(tok)-8:])
	}
	tail ^= uint64(len(tok))
	return &m.slots[(tail*0x9E3779B97F4A7C15)>>(64-memoBits)]
}

// sameToken reports whether a and b are equal, in time that depends on
// their length only: the remembered token is a credential, and a
// comparison that stops at the first difference would tell a caller how
// much of its guess was right.
func sameToken(a, b []byte) bool {
	if len(a) != len(b) {
		return false
	}
	var diff uint64
	i := 0
	for ; i+8 <= len(a); i += 8 {
		diff |= binary.LittleEndian.Uint64(a[i:]) ^ binary.LittleEndian.Uint64(b[i:])
	}
	for ; i < len(a); i++ {
		diff |= uint64(a[i] ^ b[i])
	}
	return diff == 0
}
