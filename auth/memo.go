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
	b = b[:len(a)]
	// 32 bytes a round in four independent words: one word a round made
	// the comparison 2/3 of a memo hit.
	var d0, d1, d2, d3 uint64
	for len(a) >= 32 {
		d0 |= binary.LittleEndian.Uint64(a[0:8]) ^ binary.LittleEndian.Uint64(b[0:8])
		d1 |= binary.LittleEndian.Uint64(a[8:16]) ^ binary.LittleEndian.Uint64(b[8:16])
		d2 |= binary.LittleEndian.Uint64(a[16:24]) ^ binary.LittleEndian.Uint64(b[16:24])
		d3 |= binary.LittleEndian.Uint64(a[24:32]) ^ binary.LittleEndian.Uint64(b[24:32])
		a, b = a[32:], b[32:]
	}
	for len(a) >= 8 {
		d0 |= binary.LittleEndian.Uint64(a) ^ binary.LittleEndian.Uint64(b)
		a, b = a[8:], b[8:]
	}
	for i := range a {
		d1 |= uint64(a[i] ^ b[i])
	}
	return d0|d1|d2|d3 == 0
}
