package audit

import (
	"fmt"
	"math/bits"

	"golang.org/x/mod/sumdb/tlog"
)

// The log's Merkle tree is RFC 6962's, as golang.org/x/mod/sumdb/tlog
// computes it: leaf i is tlog.RecordHash(line of seq i) over the line
// without its newline, and the tree spans the whole log across segments.
//
// Storage decision. The writer keeps only the tree's right edge (the
// "frontier": for each set bit k of the size n, the hash of the perfect
// subtree of 2^k leaves it stands for), at most 64 hashes, updated per
// record with one tlog.NodeHash on average and no allocation. That is all
// it needs to compute the root for a checkpoint, and memory stays constant
// however long the log. Each checkpoint entry on disk carries the frontier
// for its size (unsigned, but it must hash to the signed root, which
// tlog.TreeHash checks), so startup after a crash reads only the last
// checkpoint and the records after it — at most about a checkpoint
// interval of records — instead of the whole log, and a segment can be
// verified or proved without the segments before it (once those have been
// uploaded and removed).
//
// The tools (verify, proof) use tlog itself: hashStore is a
// tlog.HashReader seeded with a frontier, filled by
// tlog.StoredHashesForRecordHash, and read by tlog.TreeHash, ProveRecord
// and ProveTree. Every hash an inclusion or consistency proof for leaves
// at or after the seed needs is either a frontier element or lies after
// the seed, so the sparse store is enough.

// frontier is the right edge of a tree of n leaves.
type frontier struct {
	n uint64
	h [64]tlog.Hash // h[k] is meaningful when bit k of n is set
}

// append adds one leaf: like incrementing a binary counter, each carry
// merges two equal subtrees.
func (f *frontier) append(leaf tlog.Hash) {
	carry := leaf
	k := 0
	for f.n&(1<<k) != 0 {
		carry = tlog.NodeHash(f.h[k], carry)
		k++
	}
	f.h[k] = carry
	f.n++
}

// root is the tree hash: the subtrees folded from the right, as RFC 6962
// splits a tree at the largest power of two below its size.
func (f *frontier) root() tlog.Hash {
	if f.n == 0 {
		h, _ := tlog.TreeHash(0, nil) // the empty tree's hash; reads nothing
		return h
	}
	var h tlog.Hash
	first := true
	for k := 0; k < 64; k++ {
		if f.n&(1<<k) == 0 {
			continue
		}
		if first {
			h, first = f.h[k], false
		} else {
			h = tlog.NodeHash(f.h[k], h)
		}
	}
	return h
}

// hashes lists the frontier left to right (largest subtree first).
func (f *frontier) hashes() []tlog.Hash {
	out := make([]tlog.Hash, 0, bits.OnesCount64(f.n))
	for k := 63; k >= 0; k-- {
		if f.n&(1<<k) != 0 {
			out = append(out, f.h[k])
		}
	}
	return out
}

// frontierFrom rebuilds a frontier from its size and hashes (left to right).
func frontierFrom(n uint64, hs []tlog.Hash) (frontier, error) {
	f := frontier{n: n}
	if len(hs) != bits.OnesCount64(n) {
		return f, fmt.Errorf("frontier for size %d has %d hashes, want %d", n, len(hs), bits.OnesCount64(n))
	}
	i := 0
	for k := 63; k >= 0; k-- {
		if n&(1<<k) != 0 {
			f.h[k] = hs[i]
			i++
		}
	}
	return f, nil
}

// subtreeIndexes are the tlog stored-hash indexes of the frontier of a
// tree of n leaves, left to right (what tlog.TreeHash reads).
func subtreeIndexes(n int64) []int64 {
	var idx []int64
	var lo int64
	for k := 62; k >= 0; k-- {
		if n&(1<<k) != 0 {
			idx = append(idx, tlog.StoredHashIndex(k, lo>>k))
			lo += 1 << k
		}
	}
	return idx
}

// hashStore is a tlog.HashReader over the leaves from start on, seeded
// with the frontier at start. Memory: two hashes (64 bytes) per leaf.
type hashStore struct {
	seed   map[int64]tlog.Hash
	base   int64 // tlog.StoredHashCount(start): index of hashes[0]
	hashes []tlog.Hash
	n      int64
}

func newHashStore(start int64, fr []tlog.Hash) (*hashStore, error) {
	idx := subtreeIndexes(start)
	if len(idx) != len(fr) {
		return nil, fmt.Errorf("frontier for size %d has %d hashes, want %d", start, len(fr), len(idx))
	}
	s := &hashStore{seed: make(map[int64]tlog.Hash, len(idx)), base: tlog.StoredHashCount(start), n: start}
	for i, x := range idx {
		s.seed[x] = fr[i]
	}
	return s, nil
}

func (s *hashStore) ReadHashes(indexes []int64) ([]tlog.Hash, error) {
	out := make([]tlog.Hash, len(indexes))
	for i, x := range indexes {
		h, err := s.hash(x)
		if err != nil {
			return nil, err
		}
		out[i] = h
	}
	return out, nil
}

// appendLeaf stores leaf s.n and the parent of every subtree it completes:
// the hashes tlog.StoredHashesForRecordHash gives, without its three
// allocations per leaf (TestHashStoreAppendLeaf compares them).
func (s *hashStore) appendLeaf(h tlog.Hash) error {
	n := s.n
	s.hashes = append(s.hashes, h)
	// Each trailing 1 bit of n completes a subtree, whose left half is
	// the stored hash of the subtree before it at that level.
	for l := 0; (n>>l)&1 == 1; l++ {
		left, err := s.hash(tlog.StoredHashIndex(l, n>>l-1))
		if err != nil {
			return err
		}
		h = tlog.NodeHash(left, h)
		s.hashes = append(s.hashes, h)
	}
	s.n++
	return nil
}

// hash is ReadHashes of one index.
func (s *hashStore) hash(x int64) (tlog.Hash, error) {
	if x >= s.base {
		if x-s.base >= int64(len(s.hashes)) {
			return tlog.Hash{}, fmt.Errorf("tree hash %d not computed yet", x)
		}
		return s.hashes[x-s.base], nil
	}
	h, ok := s.seed[x]
	if !ok {
		return tlog.Hash{}, fmt.Errorf("tree hash %d lies before the first record available", x)
	}
	return h, nil
}

// root is tlog.TreeHash of the leaves so far.
func (s *hashStore) root() (tlog.Hash, error) { return tlog.TreeHash(s.n, s) }

// frontier returns the current right edge, left to right.
func (s *hashStore) frontier() ([]tlog.Hash, error) { return s.ReadHashes(subtreeIndexes(s.n)) }
