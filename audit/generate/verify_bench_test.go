package generate

import (
	"context"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/countersign/countersign/audit"
)

// BenchmarkVerify measures audit.Verify of one node's generated log
// (50,000 access records, about 60 MB), the per-record cost of `audit
// verify` and `audit fleet verify`: go test -run '^$' -bench Verify
// -benchmem ./audit/generate/ (add -cpuprofile to see where it goes).
func BenchmarkVerify(b *testing.B) {
	signer, hmac, verifier := testKeys(b)
	out := b.TempDir()
	res, err := Run(context.Background(), Options{
		Out: out, Nodes: []string{"node-1"}, Records: 50000, Seed: 1,
		Start: time.Date(2026, 11, 1, 0, 0, 0, 0, time.UTC), CheckpointKey: signer, HMACKey: hmac,
	})
	if err != nil {
		b.Fatal(err)
	}
	vs, err := audit.ParseVerifiers(verifier)
	if err != nil {
		b.Fatal(err)
	}
	fsys := os.DirFS(filepath.Join(out, res[0].Node))
	var records uint64
	b.ResetTimer()
	for b.Loop() {
		v, err := audit.Verify(fsys, audit.VerifyOptions{Verifiers: vs, Origin: "countersign/node-1"})
		if err != nil {
			b.Fatal(err)
		}
		records = v.Next
	}
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(uint64(b.N)*records), "ns/record")
}
