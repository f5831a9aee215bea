package sessionpolicy_test

import (
	"fmt"
	"testing"

	"github.com/countersign/countersign/policy"
	"github.com/countersign/countersign/sessionpolicy"
)

// BenchmarkCompileCoarsen: a scope of n prefixes (one statement) compiled
// under 2,048 characters.
func BenchmarkCompileCoarsen(b *testing.B) {
	for _, n := range []int{10, 300, 2000, 10000} {
		var gs []policy.ScopeGrant
		for i := range n {
			gs = append(gs, grant(fmt.Sprintf("wh/db%d/t%d/", i%13, i), readActions...))
		}
		b.Run(fmt.Sprint(n), func(b *testing.B) {
			for b.Loop() {
				if _, err := sessionpolicy.Compile(policy.Scope{Grants: gs}, sessionpolicy.Options{}); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
