package audit

import (
	"bytes"
	"fmt"
	"math/rand/v2"
	"strings"
	"testing"
	"time"
)

// TestLocateIsIndexFields: for lines as the writer builds them, the
// fields found from the encoder's offsets (tailFields.locate) are exactly
// those indexFields finds by searching, which is what verify rebuilds the
// index with: principals with and without, ids, buckets and keys with
// characters that are escaped, node names whose length puts the kind on
// either side of indexFields' 240-byte window, lifecycle records.
func TestLocateIsIndexFields(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	odd := []string{"", "a", `q"uote`, `back\slash\`, "tab\tnl\n", "\x00\x1f", "é日本", "\u2028", "\xff\xfe", `key":"x`, `,"bucket":"b`, strings.Repeat("k", 300)}
	pick := func() string {
		if rng.IntN(3) == 0 {
			return odd[rng.IntN(len(odd))]
		}
		return fmt.Sprintf("wh/db/t/data/%05d.parquet", rng.IntN(1e5))
	}
	mac := newTokenMAC([]byte("0123456789abcdef0123456789abcdef"))
	nonce := [8]byte{1, 2, 3, 4, 5, 6, 7, 8}
	ts := []byte(time.Date(2026, 12, 3, 7, 0, 0, 123456000, time.UTC).Format(time.RFC3339Nano))
	var notIndexed, indexed int
	for i := range 4000 {
		r := accessRecord(i)
		switch rng.IntN(6) {
		case 0:
			r.Principal = nil
		case 1:
			r.Principal.ID = pick()
		case 2:
			r = &Record{Kind: KindLifecycle, Event: EventStart, Detail: map[string]string{"k": pick()}}
		}
		if r.Kind == KindAccess {
			r.Bucket, r.Key = pick(), pick()
		}
		node := strings.Repeat("n", rng.IntN(200))
		if rng.IntN(4) == 0 {
			node = `n"\` + node
		}
		var f tailFields
		line := appendHead(nil, uint64(rng.IntN(1e9)), &nonce, ts)
		headLen := len(line)
		line = appendTailFields(line, r, node, mac, &f)
		if plain := appendTail(nil, r, node, mac); !bytes.Equal(plain, line[headLen:]) {
			t.Fatalf("appendTailFields wrote another tail than appendTail:\n%s\n%s", line[headLen:], plain)
		}
		wp, wb, wk, wok := indexFields(line)
		p, b, k, ok := f.locate(line, headLen)
		if ok != wok || !bytes.Equal(p, wp) || (p == nil) != (wp == nil) || !bytes.Equal(b, wb) || !bytes.Equal(k, wk) {
			t.Fatalf("line %s\nlocate: %q %q %q %v\nindexFields: %q %q %q %v", line, p, b, k, ok, wp, wb, wk, wok)
		}
		if wok {
			indexed++
		} else if r.Kind == KindAccess {
			notIndexed++
		}
	}
	if indexed < 1000 || notIndexed < 100 {
		t.Fatalf("%d access lines indexed, %d not (a long node): the cases are not both covered", indexed, notIndexed)
	}
}

// BenchmarkIndexRecord is the writer's indexing of one signed access
// record: its fields found by searching the line (indexFields, as the
// writer did) or from the encoder's offsets (locate).
//
//	go test -run '^$' -bench IndexRecord -benchmem ./audit/
func BenchmarkIndexRecord(b *testing.B) {
	mac := newTokenMAC([]byte("0123456789abcdef0123456789abcdef"))
	nonce := [8]byte{1, 2, 3, 4, 5, 6, 7, 8}
	ts := []byte("2026-12-03T07:00:00.123456Z")
	var f tailFields
	line := appendHead(nil, 123456789, &nonce, ts)
	headLen := len(line)
	line = appendTailFields(line, signedRecord(1), "node-a", mac, &f)
	for _, how := range []string{"search", "offsets"} {
		b.Run(how, func(b *testing.B) {
			ix := newIndexBuilder(0)
			b.ReportAllocs()
			for b.Loop() {
				if how == "search" {
					ix.add(line, 0, 1, 1)
				} else {
					p, bk, k, ok := f.locate(line, headLen)
					ix.addFields(line, 0, 1, 1, p, bk, k, ok)
				}
			}
			if ix.idx.records == 0 || !ix.cur.hasKeys && len(ix.idx.blocks) == 0 {
				b.Fatal("nothing indexed")
			}
		})
	}
}
