package audit

import (
	"bytes"
	"fmt"
	"testing"

	"golang.org/x/mod/sumdb/tlog"
)

// TestHashStoreAppendLeaf: from every seed size up to 70 (frontiers of
// every shape), the hashes appendLeaf stores are exactly the ones
// tlog.StoredHashesForRecordHash gives, for 70 more leaves; and a leaf
// whose sibling lies before the seed is refused, not hashed with zeros.
func TestHashStoreAppendLeaf(t *testing.T) {
	var all []tlog.Hash // every stored hash of the whole tree, by tlog
	r := tlog.HashReaderFunc(func(idx []int64) ([]tlog.Hash, error) {
		out := make([]tlog.Hash, len(idx))
		for i, x := range idx {
			if x >= int64(len(all)) {
				return nil, fmt.Errorf("hash %d not stored", x)
			}
			out[i] = all[x]
		}
		return out, nil
	})
	leaf := func(n int64) tlog.Hash { return tlog.RecordHash([]byte(fmt.Sprint("record ", n))) }
	for n := int64(0); n < 140; n++ {
		hs, err := tlog.StoredHashesForRecordHash(n, leaf(n), r)
		if err != nil {
			t.Fatal(err)
		}
		all = append(all, hs...)
	}
	for start := int64(0); start <= 70; start++ {
		idx := subtreeIndexes(start)
		fr := make([]tlog.Hash, len(idx))
		for i, x := range idx {
			fr[i] = all[x]
		}
		s, err := newHashStore(start, fr)
		if err != nil {
			t.Fatal(err)
		}
		for n := start; n < start+70; n++ {
			if err := s.appendLeaf(leaf(n)); err != nil {
				t.Fatalf("seed %d, leaf %d: %v", start, n, err)
			}
		}
		base := tlog.StoredHashCount(start)
		want := all[base:tlog.StoredHashCount(start+70)]
		if len(s.hashes) != len(want) {
			t.Fatalf("seed %d: %d hashes stored, tlog stores %d", start, len(s.hashes), len(want))
		}
		for i := range want {
			if s.hashes[i] != want[i] {
				t.Fatalf("seed %d: stored hash %d differs from tlog's", start, base+int64(i))
			}
		}
	}
	// Seeded at 3 (frontier: the subtree of leaves 0-1, leaf 2) without
	// the leaf 2 hash: leaf 3 needs it.
	s := &hashStore{seed: map[int64]tlog.Hash{}, base: tlog.StoredHashCount(3), n: 3}
	if err := s.appendLeaf(leaf(3)); err == nil {
		t.Fatal("appendLeaf hashed leaf 3 without its sibling")
	}
}

// TestLeafHasher: the kept digest gives tlog.RecordHash for lines one
// after another, of every length around SHA-256's 64-byte block.
func TestLeafHasher(t *testing.T) {
	var lh leafHasher
	for n := range 200 {
		line := bytes.Repeat([]byte{byte('a' + n%26)}, n)
		if got, want := lh.hash(line), tlog.RecordHash(line); got != want {
			t.Fatalf("%d bytes: %v, tlog.RecordHash %v", n, got, want)
		}
	}
}
