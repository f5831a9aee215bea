package generate

import (
	"context"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/countersign/countersign/audit"
)

func testKeys(t testing.TB) (signer string, hmac []byte, verifier string) {
	t.Helper()
	s, v, h, err := audit.GenerateKeys("generate-test")
	if err != nil {
		t.Fatal(err)
	}
	return s, []byte(h), v
}

// TestGenerate: three nodes' logs that verify, hold the records asked for
// within the simulated month, rotate segments, and have a realistic mix
// (a dominant principal, many minor ones, reads, writes and deletes).
func TestGenerate(t *testing.T) {
	signer, hmac, verifier := testKeys(t)
	out := t.TempDir()
	start := time.Date(2026, 11, 1, 0, 0, 0, 0, time.UTC)
	res, err := Run(context.Background(), Options{
		Out: out, Records: 30000, Seed: 7, Start: start, Span: 30 * 24 * time.Hour,
		CheckpointKey: signer, HMACKey: hmac,
	})
	if err != nil {
		t.Fatal(err)
	}
	vs, err := audit.ParseVerifiers(verifier)
	if err != nil {
		t.Fatal(err)
	}
	if len(res) != 3 {
		t.Fatalf("%d nodes", len(res))
	}
	for _, r := range res {
		if r.Records != 10000 {
			t.Errorf("%s: %d access records, want 10000", r.Node, r.Records)
		}
		fsys := os.DirFS(filepath.Join(out, r.Node))
		v, err := audit.Verify(fsys, audit.VerifyOptions{Verifiers: vs, Origin: "countersign/" + r.Node})
		if err != nil {
			t.Fatalf("%s: verify: %v", r.Node, err)
		}
		if v.Segments < 20 {
			t.Errorf("%s: %d segments over a month of daily rotation", r.Node, v.Segments)
		}
		principals := map[string]int{}
		ops := map[string]int{}
		access := 0
		var last time.Time
		err = audit.Query(context.Background(), fsys, audit.Filter{Kind: audit.KindAccess}, func(rec *audit.Record, _ []byte) error {
			access++
			principals[rec.Principal.ID]++
			ops[rec.Operation]++
			last = rec.Time
			if rec.Time.Before(start) {
				t.Fatalf("record at %s before the start", rec.Time)
			}
			return nil
		})
		if err != nil {
			t.Fatal(err)
		}
		if access != 10000 {
			t.Errorf("%s: query finds %d access records", r.Node, access)
		}
		if last.Before(start.Add(20*24*time.Hour)) || last.After(start.Add(40*24*time.Hour)) {
			t.Errorf("%s: last record at %s: not spread over the month", r.Node, last)
		}
		top := 0
		for _, n := range principals {
			top = max(top, n)
		}
		if top < access/10 || len(principals) < 25 {
			t.Errorf("%s: %d principals, the busiest with %d of %d records: not a Zipf mix", r.Node, len(principals), top, access)
		}
		for _, op := range []string{"GetObject", "PutObject", "DeleteObjects", "ListObjectsV2"} {
			if ops[op] == 0 {
				t.Errorf("%s: no %s record: %v", r.Node, op, ops)
			}
		}
	}
	// Continuing a log: the same nodes again, a later start.
	res2, err := Run(context.Background(), Options{
		Out: out, Nodes: []string{"node-2"}, Records: 500, Seed: 8, Start: start.Add(31 * 24 * time.Hour), Span: time.Hour,
		CheckpointKey: signer, HMACKey: hmac,
	})
	if err != nil {
		t.Fatal(err)
	}
	v, err := audit.Verify(os.DirFS(filepath.Join(out, "node-2")), audit.VerifyOptions{Verifiers: vs})
	if err != nil {
		t.Fatal(err)
	}
	if v.Next < res2[0].Stats.TreeSize || v.Next < 10500 {
		t.Fatalf("continued log ends at %d (stats %d)", v.Next, res2[0].Stats.TreeSize)
	}
}
