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
		groups, err := group(gs)
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
