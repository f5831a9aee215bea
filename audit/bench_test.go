package audit

import (
	"crypto/sha256"
	"encoding/json"
	"fmt"
	"testing"
	"time"

	"github.com/countersign/countersign/internal/strictjson"
)

// benchRecord is a ~700-byte record, the size of an access record without
// a signing block: a denied DeleteObjects key with the policy's reason, varied
// by i. An allowed, signed GetObject record carries the signing block too
// and is ~1 KB (signedRecord).
func benchRecord(i int) *Record {
	return &Record{
		Kind:      KindAccess,
		SourceIP:  "10.12.7.31",
		RequestID: fmt.Sprintf("c0ffee%010x", i),
		Principal: &Principal{
			Issuer:      "https://idp.example.com",
			ID:          "spark-etl",
			Groups:      []string{"etl"},
			JTI:         "5b1e0f2c9a4d",
			TokenSHA256: sha256.Sum256([]byte("token")),
		},
		Operation:      "DeleteObjects",
		Action:         "s3:DeleteObject",
		Access:         "delete",
		Bucket:         "lakehouse-prod",
		Key:            fmt.Sprintf("wh/sales.db/orders/data/%08d-00000.parquet", i),
		Region:         "us-east-1",
		Role:           RoleDeleteKey,
		Decision:       DecisionDeny,
		Reason:         "no delete grant for group etl",
		Status:         403,
		PolicyRevision: "sha256:9f2c4e1a7b3d",
		EvalMicros:     31,
	}
}

// signedRecord is an allowed GetObject with its signing block (~1 KB).
func signedRecord(i int) *Record {
	r := benchRecord(i)
	r.Operation, r.Action, r.Access, r.Role = "GetObject", "s3:GetObject", "read", RoleObject
	r.Decision, r.Reason, r.Status = DecisionAllow, "", 200
	r.Signing = &Signing{
		AccessKeyID:            "AKIAIOSFODNN7EXAMPLE",
		Scope:                  "20261130/us-east-1/s3/aws4_request",
		AmzDate:                "20261130T120000Z",
		SignedHeaders:          []string{"host", "range", "x-amz-content-sha256", "x-amz-date"},
		Payload:                "UNSIGNED-PAYLOAD",
		CanonicalRequestSHA256: "3f1c9a4d2e5b6c7d8e9f0a1b2c3d4e5f6a7b8c9d0e1f2a3b4c5d6e7f8a9b0c1d",
		SignatureSHA256:        "9b0c1d3f1c9a4d2e5b6c7d8e9f0a1b2c3d4e5f6a7b8c9d0e1f2a3b4c5d6e7f8a",
	}
	return r
}

// BenchmarkAppend measures durable appends through real files and real
// fdatasync at 1, 16 and 64 concurrent writers, one record per Append (a
// sign request for one object). records/s is the throughput; ns/op is per
// record; B/op and allocs/op count every goroutine, the writer's included;
// records/batch is the group commit's average batch per fdatasync.
func BenchmarkAppend(b *testing.B) {
	for _, bc := range []struct {
		name    string
		writers int
		record  func(int) *Record
	}{
		{"writers=1", 1, benchRecord},
		{"writers=16", 16, benchRecord},
		{"writers=64", 64, benchRecord},
		{"signed-1KB/writers=64", 64, signedRecord},
	} {
		writers := bc.writers
		b.Run(bc.name, func(b *testing.B) {
			k := newTestKeys(b)
			cfg := testConfig(b.TempDir())
			cfg.CheckpointInterval = time.Second
			l := openLog(b, cfg, k.options())
			defer l.Close()
			recs := make([]*Record, writers)
			for i := range recs {
				recs[i] = bc.record(i)
			}
			before := l.Stats()
			run := appenders(b, l, recs)
			b.ReportAllocs()
			b.ResetTimer()
			start := time.Now()
			run()
			elapsed := time.Since(start)
			b.StopTimer()
			after := l.Stats()
			b.ReportMetric(float64(b.N)/elapsed.Seconds(), "records/s")
			if n := after.Batches - before.Batches; n > 0 {
				b.ReportMetric(float64(after.Records-before.Records)/float64(n), "records/batch")
			}
		})
	}
}

// BenchmarkEncodeRecord is the per-record encoding on the caller's
// goroutine (the tail, with the token HMAC) plus the writer's head.
func BenchmarkEncodeRecord(b *testing.B) {
	r := signedRecord(42)
	mac := newTokenMAC([]byte("0123456789abcdef0123456789abcdef"))
	nonce := [8]byte{1, 2, 3, 4, 5, 6, 7, 8}
	ts := []byte("2026-11-30T12:00:00.123456789Z")
	var tail, line []byte
	b.ReportAllocs()
	for i := 0; b.Loop(); i++ {
		tail = appendTail(tail[:0], r, "node-a", mac)
		line = appendHead(line[:0], uint64(i), &nonce, ts)
		line = append(line, tail...)
	}
	b.SetBytes(int64(len(line)))
}

// BenchmarkEncodeRecordJSON is encoding/json on the same record, for
// comparison.
func BenchmarkEncodeRecordJSON(b *testing.B) {
	r := signedRecord(42)
	r.Version, r.Seq, r.ID, r.Time, r.Node = 1, 42, "0102030405060708000000000000002a", time.Now(), "node-a"
	b.ReportAllocs()
	for b.Loop() {
		if _, err := json.Marshal(r); err != nil {
			b.Fatal(err)
		}
	}
}

func TestBenchRecordSize(t *testing.T) {
	r := benchRecord(42)
	r.Version, r.Seq, r.ID, r.Time, r.Node = 1, 1234567, "0102030405060708000000000012d687", time.Now(), "node-a"
	r.Principal.TokenHMAC = fmt.Sprintf("%064x", 1)
	n := len(AppendRecord(nil, r))
	s := signedRecord(42)
	s.Version, s.Seq, s.ID, s.Time, s.Node, s.Principal.TokenHMAC = r.Version, r.Seq, r.ID, r.Time, r.Node, r.Principal.TokenHMAC
	t.Logf("benchRecord %d bytes, signedRecord %d bytes", n, len(AppendRecord(nil, s)))
	if n < 650 || n > 750 {
		t.Fatalf("benchmark record is %d bytes, want ~700", n)
	}
}

// BenchmarkDecodeRecord is what a query pays per matching record, and
// BenchmarkDecodeHead what verify pays per access record (the writer's
// layout, a generated record's size: 1.2 KB).
func BenchmarkDecodeRecord(b *testing.B) {
	line := benchLine(b)
	b.SetBytes(int64(len(line)))
	b.ReportAllocs()
	for b.Loop() {
		if _, err := DecodeRecord(line); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkDecodeHead(b *testing.B) {
	line := benchLine(b)
	var c strictjson.Checker
	b.SetBytes(int64(len(line)))
	b.ReportAllocs()
	for b.Loop() {
		if _, err := decodeHead(&c, line); err != nil {
			b.Fatal(err)
		}
	}
}

func benchLine(b *testing.B) []byte {
	r := signedRecord(42)
	r.Principal.TokenHMAC = fmt.Sprintf("%064x", 1)
	nonce := [8]byte{1, 2, 3, 4, 5, 6, 7, 8}
	line := appendHead(nil, 42, &nonce, []byte("2026-11-30T12:00:00.123456789Z"))
	line = append(line, appendTail(nil, r, "node-a", newTokenMAC([]byte("0123456789abcdef0123456789abcdef")))...)
	if _, err := DecodeRecord(line); err != nil {
		b.Fatal(err)
	}
	return line
}
