package sessionpolicy

import (
	"fmt"
	"math/rand/v2"
	"testing"

	"github.com/countersign/countersign/policy"
)

// TestDocSizeIsTheJSONLength: the size the coarsening loop computes
// without building the document is the document's length, escapes
// included.
func TestDocSizeIsTheJSONLength(t *testing.T) {
	r := rand.New(rand.NewPCG(5, 6))
	runes := []rune("ab/_-.é日\"\\\x01😀")
	acts := [][]string{{"s3:GetObject"}, {"s3:ListBucket"}, {"s3:GetBucketLocation"}, {"s3:PutObject", "s3:DeleteObject"}}
	for range 200 {
		var gs []policy.ScopeGrant
		for range 1 + r.IntN(12) {
			p := make([]rune, r.IntN(10))
			for i := range p {
				p[i] = runes[r.IntN(len(runes))]
			}
			gs = append(gs, policy.ScopeGrant{Bucket: fmt.Sprintf("b%d", r.IntN(3)), Prefix: string(p), Actions: acts[r.IntN(len(acts))]})
		}
		groups, err := group(gs, false)
		if err != nil {
			t.Fatal(err)
		}
		var d Document
		for _, g := range groups {
			d.Statements = append(d.Statements, g.statement())
		}
		if got, want := docSize(groups), len(d.JSON()); got != want {
			t.Fatalf("docSize %d, JSON %d: %s", got, want, d.JSON())
		}
	}
}

// TestCoarsenedSizes: coarsen's running size is the document's length
// after every scope and limit tried, and the document fits.
func TestCoarsenedSizes(t *testing.T) {
	r := rand.New(rand.NewPCG(9, 10))
	for range 300 {
		var gs []policy.ScopeGrant
		for range 1 + r.IntN(80) {
			p := fmt.Sprintf("wh/%c%d/é%d/", 'a'+rune(r.IntN(3)), r.IntN(20), r.IntN(5))
			if r.IntN(10) == 0 {
				p = p[:r.IntN(len(p))]
			}
			acts := [][]string{{"s3:GetObject"}, {"s3:ListBucket"}, {"s3:PutObject", "s3:DeleteObject"}}[r.IntN(3)]
			gs = append(gs, policy.ScopeGrant{Bucket: fmt.Sprintf("b%d", r.IntN(2)), Prefix: p, Actions: acts})
		}
		groups, err := group(gs, false)
		if err != nil {
			t.Fatal(err)
		}
		max := 300 + r.IntN(1800)
		_, size, ok := coarsen(groups, max)
		if got := docSize(groups); got != size {
			t.Fatalf("running size %d, document %d", size, got)
		}
		if ok != (size <= max) {
			t.Fatalf("ok %v with size %d, max %d", ok, size, max)
		}
	}
}
