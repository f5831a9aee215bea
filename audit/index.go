package audit

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"

	"github.com/cespare/xxhash/v2"

	"github.com/countersign/countersign/internal/jsonstr"
)

// A segment index (seg-<first seq>.index) lets a query read only the
// blocks of a sealed segment that can hold a match. The writer builds it
// while it writes the segment and writes it at seal, before the seal is
// announced (Options.OnSeal), so it is uploaded with the segment. A
// segment without one (sealed by recovery after a crash, written before
// indexes existed, abandoned) is scanned.
//
// Blocks are runs of indexBlockRecords records. For each block the index
// holds its seq range and byte range, its time range, the exact set of
// principal ids and of buckets (or "too many to list", which never skips),
// the smallest and largest key, and a Bloom filter of its keys. Values
// are the JSON-encoded string bodies as they appear on the line, so the
// index is a function of the segment's bytes alone.
//
// Measured choice (docs/design.md, "Segment indexes"): principals and
// buckets per block are few (a handful of principals sign most requests),
// so exact sets are smaller than filters and never wrong; keys are nearly
// all distinct, so a Bloom filter (20 bits a key, 14 probes: about
// 0.014% false positives measured, so that a key's query reads about one block
// that does not hold it even at 10,000 blocks; format 1 had 12 bits and
// 8 probes, 0.3%, and read 30 such blocks at 10M records) answers "this key" and min/max answers "this prefix"
// (a table's keys cluster). About 0.23% of the segment's size (0.15% in format 1).
//
// Why it cannot lie undetected: audit verify rebuilds every index from
// the records it covers and requires the same bytes; an index that would
// make a query skip a matching record differs from the rebuilt one. A
// query itself trusts an index as far as it trusts the segment (queries
// never verify); it ignores an index whose header does not name this
// segment's first seq, record count and size, or whose checksum is wrong.

const (
	indexExt          = ".index"
	indexMagic        = "countersign-index-2\n"
	indexMagicOld     = "countersign-index-1\n" // 12-bit, 8-probe key filters
	indexBlockRecords = 1024
	indexSetMax       = 32 // more distinct values than this: not listed
	bloomBitsPerKey   = 20
	bloomProbes       = 14
)

// IndexName is the file name of the index of the segment whose first
// record is seq.
func IndexName(first uint64) string {
	return fmt.Sprintf("%s%0*d%s", segmentPrefix, segmentDigits, first, indexExt)
}

// segmentIndex is a parsed index.
type segmentIndex struct {
	first   uint64 // the segment's first seq
	records uint64
	size    int64 // the segment's size in bytes
	blocks  []indexBlock
}

type indexBlock struct {
	first, records   uint64
	offset, length   int64
	minTime, maxTime int64 // unix nanoseconds
	principals       [][]byte
	manyPrincipals   bool
	buckets          [][]byte
	manyBuckets      bool
	hasKeys          bool
	minKey, maxKey   []byte
	bloom            []uint64
}

// indexBuilder accumulates a segment's index, record by record.
type indexBuilder struct {
	idx  segmentIndex
	cur  indexBlock
	keys []uint64 // hashes of the current block's keys
}

func newIndexBuilder(first uint64) *indexBuilder {
	return &indexBuilder{idx: segmentIndex{first: first}}
}

// add indexes one line (without newline) at byte offset off of the
// segment. Lifecycle records and fields a line lacks add nothing but the
// record's place and time.
func (b *indexBuilder) add(line []byte, off int64, seq uint64, unixNano int64) {
	p, bk, k, ok := indexFields(line)
	b.addFields(line, off, seq, unixNano, p, bk, k, ok)
}

// addFields is add with the line's fields found already (indexFields' results).
func (b *indexBuilder) addFields(line []byte, off int64, seq uint64, unixNano int64, p, bk, k []byte, ok bool) {
	c := &b.cur
	if c.records == 0 {
		*c = indexBlock{first: seq, offset: off, minTime: unixNano, principals: c.principals[:0], buckets: c.buckets[:0]}
	}
	c.records++
	c.length = off + int64(len(line)) + 1 - c.offset
	c.maxTime = unixNano
	if ok {
		if p != nil {
			c.principals, c.manyPrincipals = addToSet(c.principals, c.manyPrincipals, p)
		}
		c.buckets, c.manyBuckets = addToSet(c.buckets, c.manyBuckets, bk)
		if len(k) > 0 {
			if !c.hasKeys || bytes.Compare(k, c.minKey) < 0 {
				c.minKey = append(c.minKey[:0], k...)
			}
			if !c.hasKeys || bytes.Compare(k, c.maxKey) > 0 {
				c.maxKey = append(c.maxKey[:0], k...)
			}
			c.hasKeys = true
			b.keys = append(b.keys, xxhash.Sum64(k))
		}
	}
	b.idx.records++
	b.idx.size = off + int64(len(line)) + 1
	if c.records == indexBlockRecords {
		b.closeBlock()
	}
}

func addToSet(set [][]byte, many bool, v []byte) ([][]byte, bool) {
	if many {
		return set, true
	}
	for _, s := range set {
		if bytes.Equal(s, v) {
			return set, false
		}
	}
	if len(set) == indexSetMax {
		return nil, true
	}
	return append(set, append([]byte(nil), v...)), false
}

func (b *indexBuilder) closeBlock() {
	c := b.cur
	if c.records == 0 {
		return
	}
	if len(b.keys) > 0 {
		c.bloom = make([]uint64, (len(b.keys)*bloomBitsPerKey+63)/64)
		for _, h := range b.keys {
			bloomAdd(c.bloom, h)
		}
	}
	b.idx.blocks = append(b.idx.blocks, c)
	b.cur = indexBlock{}
	b.keys = b.keys[:0]
}

// bloomAdd and bloomHas probe bloomProbes bits by double hashing (the two
// halves of one 64-bit hash, Kirsch and Mitzenmacher).
func bloomAdd(f []uint64, h uint64) {
	m := uint64(len(f)) * 64
	h1, h2 := h&0xffffffff, h>>32|1
	for i := uint64(0); i < bloomProbes; i++ {
		x := (h1 + i*h2) % m
		f[x/64] |= 1 << (x % 64)
	}
}

func bloomHas(f []uint64, h uint64) bool {
	m := uint64(len(f)) * 64
	if m == 0 {
		return false
	}
	h1, h2 := h&0xffffffff, h>>32|1
	for i := uint64(0); i < bloomProbes; i++ {
		x := (h1 + i*h2) % m
		if f[x/64]&(1<<(x%64)) == 0 {
			return false
		}
	}
	return true
}

// indexFields finds an access record's principal id, bucket and key (the
// string bodies as encoded) by the encoder's fixed field order; p is nil
// without a principal. ok is false for lifecycle records and lines not in
// the encoder's layout (they are then not indexed). A quote inside a JSON
// string is always escaped, so a field name with its quotes (`key":"`)
// cannot occur inside a value; searches start at a letter that is rare
// on the line, which keeps this about as cheap as the encoder.
func indexFields(line []byte) (p, bucket, key []byte, ok bool) {
	i := bytes.Index(line[:min(len(line), 240)], []byte(`kind":"access","source_ip":"`))
	if i < 2 || line[i-1] != '"' {
		return nil, nil, nil, false
	}
	r := line[i+len(`kind":"access","source_ip":"`):]
	e := stringEnd(r) // source_ip
	if e < 0 || !bytes.HasPrefix(r[e:], []byte(`","request_id":"`)) {
		return nil, nil, nil, false
	}
	r = r[e+len(`","request_id":"`):]
	if e = stringEnd(r); e < 0 {
		return nil, nil, nil, false
	}
	r = r[e+1:]
	if rest, found := bytes.CutPrefix(r, []byte(`,"principal":{"issuer":"`)); found {
		e = stringEnd(rest)
		if e < 0 || !bytes.HasPrefix(rest[e:], []byte(`","id":"`)) {
			return nil, nil, nil, false
		}
		rest = rest[e+len(`","id":"`):]
		if e = stringEnd(rest); e < 0 {
			return nil, nil, nil, false
		}
		p, r = rest[:e], rest[e:]
	}
	k := bytes.Index(r, []byte(`key":"`))
	if k < 3 || string(r[k-3:k]) != `","` {
		return nil, nil, nil, false
	}
	b := bytes.LastIndex(r[:k-3], []byte(`,"bucket":"`))
	if b < 0 {
		return nil, nil, nil, false
	}
	bucket = r[b+len(`,"bucket":"`) : k-3]
	r = r[k+len(`key":"`):]
	if e = stringEnd(r); e < 0 {
		return nil, nil, nil, false
	}
	return p, bucket, r[:e], true
}

// locate is indexFields(line) for a line the writer built from a head of
// headLen bytes and a tail encoded with f: the same fields, found from
// the encoder's offsets instead of by searching. indexFields searches for
// the kind only in the line's first 240 bytes, so a record whose kind
// ends beyond them (a long node name) is not indexed here either; its
// other searches always succeed on the encoder's layout (a quote inside
// a value is escaped, so no value holds a field name).
func (f *tailFields) locate(line []byte, headLen int) (p, bucket, key []byte, ok bool) {
	if !f.access || headLen+f.kind+len(`kind":"access","source_ip":"`) > min(len(line), 240) {
		return nil, nil, nil, false
	}
	t := line[headLen:]
	if f.principal {
		p = t[f.p0:f.p1]
	}
	return p, t[f.b0:f.b1], t[f.k0:f.k1], true
}

// stringEnd returns the index of the quote that ends a JSON string body:
// the first quote not escaped (preceded by an even number of
// backslashes).
func stringEnd(b []byte) int {
	for i := 0; ; {
		j := bytes.IndexByte(b[i:], '"')
		if j < 0 {
			return -1
		}
		q := i + j
		n := 0
		for k := q - 1; k >= 0 && b[k] == '\\'; k-- {
			n++
		}
		if n%2 == 0 {
			return q
		}
		i = q + 1
	}
}

// finish closes the last block and returns the index's bytes.
func (b *indexBuilder) finish() []byte {
	b.closeBlock()
	return b.idx.marshal()
}

func (x *segmentIndex) marshal() []byte {
	out := []byte(indexMagic)
	out = binary.AppendUvarint(out, x.first)
	out = binary.AppendUvarint(out, x.records)
	out = binary.AppendUvarint(out, uint64(x.size))
	out = binary.AppendUvarint(out, uint64(len(x.blocks)))
	putBytes := func(b []byte) { out = binary.AppendUvarint(out, uint64(len(b))); out = append(out, b...) }
	putSet := func(set [][]byte, many bool) {
		if many {
			out = binary.AppendUvarint(out, 0)
			return
		}
		out = binary.AppendUvarint(out, uint64(len(set))+1)
		for _, s := range set {
			putBytes(s)
		}
	}
	for i := range x.blocks {
		c := &x.blocks[i]
		out = binary.AppendUvarint(out, c.first)
		out = binary.AppendUvarint(out, c.records)
		out = binary.AppendUvarint(out, uint64(c.offset))
		out = binary.AppendUvarint(out, uint64(c.length))
		out = binary.AppendVarint(out, c.minTime)
		out = binary.AppendVarint(out, c.maxTime-c.minTime)
		putSet(c.principals, c.manyPrincipals)
		putSet(c.buckets, c.manyBuckets)
		if c.hasKeys {
			out = append(out, 1)
			putBytes(c.minKey)
			putBytes(c.maxKey)
		} else {
			out = append(out, 0)
		}
		out = binary.AppendUvarint(out, uint64(len(c.bloom)))
		for _, w := range c.bloom {
			out = binary.LittleEndian.AppendUint64(out, w)
		}
	}
	return binary.LittleEndian.AppendUint64(out, xxhash.Sum64(out))
}

var errIndexFormat = errors.New("malformed segment index")

func parseIndex(b []byte) (*segmentIndex, error) {
	if len(b) < len(indexMagic)+8 || string(b[:len(indexMagic)]) != indexMagic {
		return nil, errIndexFormat
	}
	body, sum := b[:len(b)-8], binary.LittleEndian.Uint64(b[len(b)-8:])
	if xxhash.Sum64(body) != sum {
		return nil, fmt.Errorf("%w: checksum", errIndexFormat)
	}
	r := body[len(indexMagic):]
	bad := false
	uv := func() uint64 {
		v, n := binary.Uvarint(r)
		if n <= 0 {
			bad = true
			return 0
		}
		r = r[n:]
		return v
	}
	vv := func() int64 {
		v, n := binary.Varint(r)
		if n <= 0 {
			bad = true
			return 0
		}
		r = r[n:]
		return v
	}
	getBytes := func() []byte {
		n := uv()
		if bad || n > uint64(len(r)) {
			bad = true
			return nil
		}
		v := r[:n:n]
		r = r[n:]
		return v
	}
	getSet := func() ([][]byte, bool) {
		n := uv()
		if n == 0 {
			return nil, true
		}
		if n-1 > indexSetMax {
			bad = true
			return nil, false
		}
		set := make([][]byte, 0, n-1)
		for i := uint64(1); i < n && !bad; i++ {
			set = append(set, getBytes())
		}
		return set, false
	}
	x := &segmentIndex{first: uv(), records: uv(), size: int64(uv())}
	nb := uv()
	if bad || nb > uint64(len(r)) {
		return nil, errIndexFormat
	}
	x.blocks = make([]indexBlock, 0, nb)
	for i := uint64(0); i < nb && !bad; i++ {
		c := indexBlock{first: uv(), records: uv(), offset: int64(uv()), length: int64(uv())}
		c.minTime = vv()
		c.maxTime = c.minTime + vv()
		c.principals, c.manyPrincipals = getSet()
		c.buckets, c.manyBuckets = getSet()
		if len(r) == 0 {
			bad = true
			break
		}
		c.hasKeys, r = r[0] == 1, r[1:]
		if c.hasKeys {
			c.minKey, c.maxKey = getBytes(), getBytes()
		}
		nw := uv()
		if bad || nw > uint64(len(r))/8 {
			bad = true
			break
		}
		c.bloom = make([]uint64, nw)
		for j := range c.bloom {
			c.bloom[j] = binary.LittleEndian.Uint64(r[8*j:])
		}
		r = r[8*nw:]
		x.blocks = append(x.blocks, c)
	}
	if bad || len(r) != 0 {
		return nil, errIndexFormat
	}
	return x, nil
}

// readIndex reads and parses a segment's index; nil if there is none.
func readIndex(fsys fs.FS, first uint64) (*segmentIndex, error) {
	f, err := fsys.Open(IndexName(first))
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	defer f.Close()
	b, err := io.ReadAll(f)
	if err != nil {
		return nil, err
	}
	return parseIndex(b)
}

// blockQuery is what a Filter lets an index check per block.
type blockQuery struct {
	since, until      int64 // unix nanoseconds; 0: unbounded
	principal, bucket []byte
	key               []byte
	keyHash           uint64
	keyPrefix         []byte
}

func (f *Filter) blockQuery() blockQuery {
	var q blockQuery
	if !f.Since.IsZero() {
		q.since = f.Since.UnixNano()
	}
	if !f.Until.IsZero() {
		q.until = f.Until.UnixNano()
	}
	if f.Principal != "" {
		q.principal = encodedBody(f.Principal)
	}
	if f.Bucket != "" {
		q.bucket = encodedBody(f.Bucket)
	}
	if f.Key != "" {
		q.key = encodedBody(f.Key)
		q.keyHash = xxhash.Sum64(q.key)
	} else if f.KeyPrefix != "" {
		q.keyPrefix = encodedBody(f.KeyPrefix)
	}
	return q
}

// prunes says whether the filter constrains anything an index holds.
func (q *blockQuery) prunes() bool {
	return q.since != 0 || q.until != 0 || q.principal != nil || q.bucket != nil || q.key != nil || q.keyPrefix != nil
}

// mayMatch says whether block c can hold a record the filter matches.
func (q *blockQuery) mayMatch(c *indexBlock) bool {
	switch {
	case q.since != 0 && c.maxTime < q.since,
		q.until != 0 && c.minTime >= q.until,
		q.principal != nil && !c.manyPrincipals && !hasValue(c.principals, q.principal),
		q.bucket != nil && !c.manyBuckets && !hasValue(c.buckets, q.bucket):
		return false
	case q.key != nil:
		return c.hasKeys && bytes.Compare(q.key, c.minKey) >= 0 && bytes.Compare(q.key, c.maxKey) <= 0 && bloomHas(c.bloom, q.keyHash)
	case q.keyPrefix != nil:
		return c.hasKeys && bytes.Compare(c.maxKey, q.keyPrefix) >= 0 &&
			bytes.Compare(c.minKey[:min(len(c.minKey), len(q.keyPrefix))], q.keyPrefix) <= 0
	}
	return true
}

func hasValue(set [][]byte, v []byte) bool {
	for _, s := range set {
		if bytes.Equal(s, v) {
			return true
		}
	}
	return false
}

// encodedBody is s as the encoder writes it between quotes.
func encodedBody(s string) []byte { return jsonstr.AppendBody(nil, s) }

// writeIndex writes a sealed segment's index (temporary file, fdatasync,
// rename, directory fsync), if this Log wrote the segment from its first
// record. A failure costs only speed (queries scan the segment), so it is
// logged, not a fault.
func (l *Log) writeIndex(seg *segment) bool {
	if seg.ix == nil || seg.ix.idx.records != seg.records || seg.ix.idx.size != seg.size {
		return false
	}
	data := seg.ix.finish()
	seg.ix = nil
	name := IndexName(seg.first)
	final := filepath.Join(l.cfg.Dir, name)
	tmp := final + ".tmp"
	err := func() error {
		f, err := l.openFile(tmp, os.O_WRONLY|os.O_CREATE|os.O_TRUNC, 0o640)
		if err != nil {
			return err
		}
		n, err := f.Write(data)
		if err == nil && n != len(data) {
			err = io.ErrShortWrite
		}
		if err == nil {
			err = f.Sync()
		}
		if cerr := f.Close(); err == nil {
			err = cerr
		}
		if err == nil {
			err = os.Rename(tmp, final)
		}
		if err == nil {
			err = syncDir(l.openFile, l.cfg.Dir)
		}
		return err
	}()
	if err != nil {
		os.Remove(tmp)
		l.log.Warn("audit: cannot write the segment index; queries scan the segment instead", "segment", seg.name, "err", err)
		return false
	}
	return true
}
