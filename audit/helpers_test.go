package audit

import (
	"context"
	"crypto/sha256"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"golang.org/x/mod/sumdb/note"
)

// testKeys is one checkpoint key pair and HMAC key per test.
type testKeys struct {
	signer, verifier string
	hmac             []byte
	verifiers        note.Verifiers
}

func newTestKeys(t testing.TB) testKeys {
	t.Helper()
	s, v, h, err := GenerateKeys("countersign-test")
	if err != nil {
		t.Fatal(err)
	}
	vs, err := ParseVerifiers(v)
	if err != nil {
		t.Fatal(err)
	}
	return testKeys{signer: s, verifier: v, hmac: []byte(h), verifiers: vs}
}

func testConfig(dir string) Config {
	return Config{
		Dir:                dir,
		NodeID:             "node-a",
		SegmentMaxBytes:    1 << 20, // preallocation writes a segment's size in zeros
		CheckpointInterval: 20 * time.Millisecond,
		HeartbeatInterval:  time.Hour,
	}
}

func (k testKeys) options() Options {
	return Options{CheckpointKey: k.signer, HMACKey: k.hmac}
}

// appendConcurrently has writers goroutines append each access records
// apiece, one per call, and waits for them; a failed Append is an error.
func appendConcurrently(t testing.TB, l *Log, writers, each int) {
	t.Helper()
	var wg sync.WaitGroup
	for w := range writers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range each {
				if err := l.Append(context.Background(), accessRecord(w*each+i)); err != nil {
					t.Errorf("Append: %v", err)
					return
				}
			}
		}()
	}
	wg.Wait()
}

// appenders is the benchmarks' appender loop (BenchmarkAppend,
// BenchmarkAppendCPU): one goroutine per record of recs, each appending
// its record, one per call, until between them they have made b.N
// appends; a failed Append is an error and ends its goroutine. The
// returned run, called once, starts them and waits for them. Unlike
// appendConcurrently the goroutines share one quota of b.N, and the
// loop's state is allocated here, before the caller's b.ResetTimer, so
// that what the benchmark times and counts between ResetTimer and
// StopTimer is the goroutines and their appends alone.
func appenders(b *testing.B, l *Log, recs []*Record) (run func()) {
	var next atomic.Int64
	var wg sync.WaitGroup
	return func() {
		for w := range len(recs) {
			wg.Add(1)
			go func() {
				defer wg.Done()
				ctx := context.Background()
				r := recs[w]
				for next.Add(1) <= int64(b.N) {
					if err := l.Append(ctx, r); err != nil {
						b.Error(err)
						return
					}
				}
			}()
		}
		wg.Wait()
	}
}

func openLog(t testing.TB, cfg Config, opts Options) *Log {
	t.Helper()
	l, err := Open(cfg, opts)
	if err != nil {
		t.Fatalf("Open: %v", err)
	}
	return l
}

// accessRecord is a realistic allowed GetObject record, about 700 bytes
// encoded, varied by i.
func accessRecord(i int) *Record {
	tok := sha256.Sum256([]byte(fmt.Sprintf("token-%d", i%7)))
	return &Record{
		Kind:      KindAccess,
		SourceIP:  "10.12.7.31",
		RequestID: fmt.Sprintf("req-%016x", i),
		Principal: &Principal{
			Issuer:      "https://idp.example.com/realms/lakehouse",
			ID:          fmt.Sprintf("spark-etl-%d", i%5),
			Groups:      []string{"analytics", "etl-writers"},
			JTI:         "5b1e0f2c-9a4d-4c1e-8f61-0d7a3e2b9c41",
			TokenSHA256: tok,
		},
		Operation:      "GetObject",
		Action:         "s3:GetObject",
		Access:         "read",
		Bucket:         "lakehouse-prod",
		Key:            fmt.Sprintf("warehouse/sales.db/orders/data/dt=2026-11-30/00042-7-%08d-part-00000.parquet", i),
		Region:         "us-east-1",
		Table:          &Table{Prefix: "prod", Namespace: []string{"sales"}, Name: "orders"},
		Role:           RoleObject,
		Decision:       DecisionAllow,
		Status:         200,
		PolicyRevision: "sha256:9f2c4e1a7b3d",
		EvalMicros:     31,
		Signing: &Signing{
			AccessKeyID:            "AKIAIOSFODNN7EXAMPLE",
			Scope:                  "20261130/us-east-1/s3/aws4_request",
			AmzDate:                "20261130T120000Z",
			SignedHeaders:          []string{"host", "range", "x-amz-content-sha256", "x-amz-date"},
			Payload:                "UNSIGNED-PAYLOAD",
			CanonicalRequestSHA256: fmt.Sprintf("%064x", i),
			SignatureSHA256:        fmt.Sprintf("%064x", i*7+1),
		},
	}
}

func verifyDir(t testing.TB, dir string, k testKeys) *VerifyResult {
	t.Helper()
	res, err := Verify(os.DirFS(dir), VerifyOptions{Verifiers: k.verifiers})
	if err != nil {
		t.Fatalf("verify: %v", err)
	}
	return res
}

// readLog returns every record of the log (abandoned tails excluded).
func readLog(t testing.TB, dir string) []*Record {
	t.Helper()
	var out []*Record
	err := Query(context.Background(), os.DirFS(dir), Filter{}, func(r *Record, _ []byte) error {
		out = append(out, r)
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return out
}

func segmentFiles(t testing.TB, dir string) []string {
	t.Helper()
	m, err := filepath.Glob(filepath.Join(dir, "seg-*.jsonl"))
	if err != nil {
		t.Fatal(err)
	}
	return m
}

func events(recs []*Record) string {
	var b []string
	for _, r := range recs {
		if r.Kind == KindLifecycle {
			b = append(b, string(r.Event))
		}
	}
	return strings.Join(b, ",")
}

// batchFunc is a Reporter that hands each batch's record count to a test.
type batchFunc func(records int)

func (f batchFunc) AuditBatch(records int, _ time.Duration) { f(records) }
