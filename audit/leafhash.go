package audit

import (
	"crypto/sha256"
	"hash"

	"golang.org/x/mod/sumdb/tlog"
)

// leafHasher is tlog.RecordHash (SHA-256 of 0x00 and the line) with its
// digest kept between lines, for code that hashes every line of a log:
// RecordHash allocates a digest per call. For one goroutine at a time.
type leafHasher struct {
	d   hash.Hash
	sum [sha256.Size]byte
}

func (lh *leafHasher) hash(line []byte) tlog.Hash {
	if lh.d == nil {
		lh.d = sha256.New()
	}
	lh.d.Reset()
	lh.d.Write([]byte{0})
	lh.d.Write(line)
	return tlog.Hash(lh.d.Sum(lh.sum[:0]))
}
