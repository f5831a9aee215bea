//go:build !race

// (Allocation counts differ under -race.)

package fastpath

import (
	"context"
	"testing"
)

// TestDecideAllocs: a scan's decision from a cached residual allocates
// only what the memo keeps of it (the remembered decision and its key),
// on the grants and combined examples: the compiled rule sets' values are
// built once, and the object's key is read without boxing it.
func TestDecideAllocs(t *testing.T) {
	big := genGrants(1000)
	ins := scanInputs(512)
	ctx := context.Background()
	for _, name := range []string{"grants", "combined"} {
		e := testEngine(t, examplesRoot+"/"+name, big, Options{})
		forceBuild(e)
		if _, _, ok := e.fast.Decide(ctx, ins[0]); !ok {
			t.Fatalf("%s: the fast path did not decide", name)
		}
		i := 1
		allocs := testing.AllocsPerRun(200, func() {
			if allow, _, ok := e.fast.Decide(ctx, ins[i%len(ins)]); !ok || !allow {
				t.Fatalf("%s: %v %v", name, allow, ok)
			}
			i++
		})
		if allocs > 2 {
			t.Errorf("%s: %.1f allocations per decision, want at most 2", name, allocs)
		}
	}
}
