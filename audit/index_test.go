package audit

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/cespare/xxhash/v2"
)

// indexedLog writes a log whose records vary principal, bucket and key the
// way a lakehouse's do (runs of one principal's scans), over several
// sealed segments.
func indexedLog(t *testing.T) (string, testKeys) {
	t.Helper()
	dir := t.TempDir()
	k := newTestKeys(t)
	cfg := testConfig(dir)
	cfg.SegmentMaxBytes = 4 << 20
	l := openLog(t, cfg, k.options())
	for i := 0; i < 12000; i += 100 {
		var batch []*Record
		for j := i; j < i+100; j++ {
			r := accessRecord(j)
			r.Principal.ID = fmt.Sprintf("p-%d", (j/300)%17)
			r.Bucket = fmt.Sprintf("bucket-%d", (j/2000)%3)
			batch = append(batch, r)
		}
		if err := l.Append(context.Background(), batch...); err != nil {
			t.Fatal(err)
		}
	}
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	return dir, k
}

func queryLines(t *testing.T, dir string, f Filter, opts QueryOptions) []string {
	t.Helper()
	var out []string
	err := QueryWith(context.Background(), os.DirFS(dir), f, opts, func(_ *Record, line []byte) error {
		out = append(out, string(line))
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// TestIndexQueryMatchesScan: every sealed segment gets an index, and a
// query through the indexes returns exactly what a full scan returns,
// while reading fewer blocks.
func TestIndexQueryMatchesScan(t *testing.T) {
	dir, _ := indexedLog(t)
	segs, err := ListSegments(os.DirFS(dir))
	if err != nil {
		t.Fatal(err)
	}
	if len(segs) < 3 {
		t.Fatalf("%d segments", len(segs))
	}
	for _, s := range segs {
		if !s.HasIndex {
			t.Fatalf("%s has no index", s.Name)
		}
	}
	all := queryLines(t, dir, Filter{}, QueryOptions{NoIndex: true})
	mid, _ := DecodeRecord([]byte(all[len(all)/2]))
	key := accessRecord(7777).Key
	filters := map[string]Filter{
		"principal":             {Principal: "p-5"},
		"absent principal":      {Principal: "nobody"},
		"key":                   {Key: key},
		"bucket and key":        {Bucket: "bucket-0", Key: key},
		"key in another bucket": {Bucket: "bucket-2", Key: key},
		"key prefix":            {KeyPrefix: "warehouse/sales.db/orders/data/dt=2026-11-30/00042-7-0000777"},
		"absent prefix":         {KeyPrefix: "warehouse/zzz"},
		"bucket":                {Bucket: "bucket-1"},
		"since":                 {Since: mid.Time},
		"until":                 {Until: mid.Time},
		"principal and window":  {Principal: "p-3", Since: mid.Time.Add(-time.Hour), Until: mid.Time},
	}
	for name, f := range filters {
		want := queryLines(t, dir, f, QueryOptions{NoIndex: true})
		var st QueryStats
		got := queryLines(t, dir, f, QueryOptions{Stats: &st})
		if !slices.Equal(got, want) {
			t.Errorf("%s: %d records through the index, %d by scanning", name, len(got), len(want))
		}
		if st.Indexed == 0 {
			t.Errorf("%s: no index used: %+v", name, st)
		}
		switch name {
		case "principal", "key", "bucket and key", "key in another bucket", "absent principal", "absent prefix", "key prefix":
			if st.BlocksRead*3 > st.Blocks {
				t.Errorf("%s: read %d of %d blocks", name, st.BlocksRead, st.Blocks)
			}
		}
		t.Logf("%s: %d records, %+v", name, len(got), st)
	}
}

// TestVerifyIndex: verify rebuilds each index from its segment; an index
// altered so that a query would miss records fails verify, naming the
// index; without the index the segment is scanned and verify passes.
func TestVerifyIndex(t *testing.T) {
	dir, k := indexedLog(t)
	res := verifyDir(t, dir, k)
	if res.Indexes != res.Segments {
		t.Fatalf("%d indexes verified of %d segments", res.Indexes, res.Segments)
	}
	segs, _ := ListSegments(os.DirFS(dir))
	seg := segs[1]
	idx, err := readIndex(os.DirFS(dir), seg.First)
	if err != nil || idx == nil {
		t.Fatal(err)
	}
	// Remove p-5 from every block that lists it: a query for p-5 through
	// this index would skip them.
	removed := 0
	for i := range idx.blocks {
		b := &idx.blocks[i]
		for j, p := range b.principals {
			if string(p) == "p-5" {
				b.principals = slices.Delete(b.principals, j, j+1)
				removed++
				break
			}
		}
	}
	if removed == 0 {
		t.Fatal("p-5 is in no block of the segment")
	}
	path := filepath.Join(dir, seg.IndexName)
	if err := os.WriteFile(path, idx.marshal(), 0o644); err != nil {
		t.Fatal(err)
	}
	full := queryLines(t, dir, Filter{Principal: "p-5"}, QueryOptions{NoIndex: true})
	lying := queryLines(t, dir, Filter{Principal: "p-5"}, QueryOptions{})
	if len(lying) >= len(full) {
		t.Fatalf("the altered index hides nothing: %d and %d records", len(lying), len(full))
	}
	_, err = Verify(os.DirFS(dir), VerifyOptions{Verifiers: k.verifiers})
	ve, ok := err.(*VerifyError)
	if !ok || ve.File != seg.IndexName {
		t.Fatalf("verify with an altered index: %v", err)
	}
	t.Logf("altered index: %v", err)

	// A damaged index (bad checksum) is ignored by queries, refused by verify.
	b, _ := os.ReadFile(path)
	b[len(b)/2] ^= 1
	os.WriteFile(path, b, 0o644)
	if got := queryLines(t, dir, Filter{Principal: "p-5"}, QueryOptions{}); len(got) != len(full) {
		t.Fatalf("damaged index: %d records, want %d", len(got), len(full))
	}
	if _, err := Verify(os.DirFS(dir), VerifyOptions{Verifiers: k.verifiers}); err == nil {
		t.Fatal("verify passed a damaged index")
	}

	// Without it: scanned, and the log verifies.
	os.Remove(path)
	if got := queryLines(t, dir, Filter{Principal: "p-5"}, QueryOptions{}); len(got) != len(full) {
		t.Fatalf("without the index: %d records, want %d", len(got), len(full))
	}
	res = verifyDir(t, dir, k)
	if res.Indexes != res.Segments-1 {
		t.Fatalf("%d indexes verified of %d segments, one removed", res.Indexes, res.Segments)
	}
}

// TestIndexFieldsMatchDecoder: the index's field finder agrees with the
// decoder on awkward values (escapes, quotes, no principal).
func TestIndexFieldsMatchDecoder(t *testing.T) {
	for i, mod := range []func(r *Record){
		func(r *Record) {},
		func(r *Record) { r.Principal = nil },
		func(r *Record) { r.Key = `a "quoted" \ key,"bucket":"x"` },
		func(r *Record) { r.Principal.Issuer = `iss","id":"forged`; r.Principal.ID = "é\u2028\x01" },
		func(r *Record) { r.Bucket, r.Key = "", "" },
	} {
		r := accessRecord(i)
		mod(r)
		r.Version, r.ID, r.Time, r.Node = 1, fmt.Sprintf("%032x", i), time.Unix(1, 0), "n"
		r.Seq = uint64(i)
		r.ID = string(appendID(nil, &[8]byte{}, r.Seq))
		line := AppendRecord(nil, r)
		dec, err := DecodeRecord(line)
		if err != nil {
			t.Fatal(err)
		}
		p, b, k, ok := indexFields(line)
		if !ok {
			t.Fatalf("%d: not found in %s", i, line)
		}
		wantP := []byte(nil)
		if dec.Principal != nil {
			wantP = encodedBody(dec.Principal.ID)
		}
		if string(p) != string(wantP) || string(b) != string(encodedBody(dec.Bucket)) || string(k) != string(encodedBody(dec.Key)) {
			t.Fatalf("%d: fields %q %q %q, decoder %+v", i, p, b, k, dec)
		}
	}
}

// BenchmarkIndexAdd is the writer's cost of indexing one record.
func BenchmarkIndexAdd(b *testing.B) {
	var lines [][]byte
	for i := 0; i < 4096; i++ {
		r := accessRecord(i)
		r.Version, r.Seq, r.Time, r.Node = 1, uint64(i), time.Unix(int64(i), 0), "node-a"
		r.ID = string(appendID(nil, &[8]byte{}, r.Seq))
		lines = append(lines, AppendRecord(nil, r))
	}
	ib := newIndexBuilder(0)
	b.ReportAllocs()
	b.ResetTimer()
	var off int64
	for i := 0; i < b.N; i++ {
		line := lines[i%len(lines)]
		ib.add(line, off, uint64(i), int64(i))
		off += int64(len(line)) + 1
	}
}

// TestBloomFalsePositives: a block's key filter (1,024 keys) answers yes
// for at most 0.05% of other keys (measured 0.014%), so a key's
// query reads about one block in vain at 10,000 blocks; format 1's
// 12 bits and 8 probes answered yes for about 0.3% and fail this.
func TestBloomFalsePositives(t *testing.T) {
	const keys, probes = 1024, 200000
	f := make([]uint64, (keys*bloomBitsPerKey+63)/64)
	for i := range keys {
		bloomAdd(f, xxhash.Sum64String(fmt.Sprintf("wh/db/t/data/part-%05d.parquet", i)))
	}
	for i := range keys {
		if !bloomHas(f, xxhash.Sum64String(fmt.Sprintf("wh/db/t/data/part-%05d.parquet", i))) {
			t.Fatalf("key %d not found: a false negative", i)
		}
	}
	fp := 0
	for i := range probes {
		if bloomHas(f, xxhash.Sum64String(fmt.Sprintf("wh/db/u/data/other-%07d.parquet", i))) {
			fp++
		}
	}
	if rate := float64(fp) / probes; rate > 0.0005 {
		t.Fatalf("false positives %d of %d (%.4f%%)", fp, probes, 100*rate)
	}
	t.Logf("false positives %d of %d", fp, probes)
}

// TestVerifyNamesFormat1Index: an index of the earlier format is named as
// such by verify (queries ignore it: its magic is not this format's).
func TestVerifyNamesFormat1Index(t *testing.T) {
	dir, k := indexedLog(t)
	segs, _ := ListSegments(os.DirFS(dir))
	path := filepath.Join(dir, segs[0].IndexName)
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	old := append([]byte(indexMagicOld), b[len(indexMagic):]...)
	if err := os.WriteFile(path, old, 0o644); err != nil {
		t.Fatal(err)
	}
	full := queryLines(t, dir, Filter{Principal: "p-5"}, QueryOptions{NoIndex: true})
	if got := queryLines(t, dir, Filter{Principal: "p-5"}, QueryOptions{}); len(got) != len(full) {
		t.Fatalf("with a format-1 index: %d records, want %d", len(got), len(full))
	}
	_, err = Verify(os.DirFS(dir), VerifyOptions{Verifiers: k.verifiers})
	ve, ok := err.(*VerifyError)
	if !ok || ve.File != segs[0].IndexName || !strings.Contains(ve.Msg, "countersign-index-1") {
		t.Fatalf("verify with a format-1 index: %v", err)
	}
}
