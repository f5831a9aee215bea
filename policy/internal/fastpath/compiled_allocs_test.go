//go:build !race

// (Allocation counts differ under -race.)

package fastpath

import (
	"context"
	"testing"
)

// TestDecideAllocs: a scan's decision from a cached residual allocates
// only what the memo keeps of it (the remembered decision, its key inline),
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
		if allocs > 1 {
			t.Errorf("%s: %.1f allocations per decision, want at most 1", name, allocs)
		}
	}
}

// TestNewMemoDecision: the remembered key is the key it was given, of
// every length around the inline room, never aliasing the caller's buffer
// (which the next decision reuses), in one allocation when it fits.
func TestNewMemoDecision(t *testing.T) {
	for _, n := range []int{0, 1, memoKeyRoom - 1, memoKeyRoom, memoKeyRoom + 1, 4 * memoKeyRoom} {
		key := make([]byte, n)
		for i := range key {
			key[i] = byte('a' + i%26)
		}
		want := string(key)
		d := newMemoDecision(memoDecision{scope: 7, hash: 9, allow: true, reason: "r"}, key)
		for i := range key {
			key[i] = 'X'
		}
		if d.key != want || d.scope != 7 || d.hash != 9 || !d.allow || d.reason != "r" {
			t.Fatalf("len %d: remembered %+v, key %q", n, *d, d.key)
		}
		var kept *memoDecision // escapes, as the memo's slot does
		allocs := testing.AllocsPerRun(50, func() {
			kept = newMemoDecision(memoDecision{scope: 1}, key)
		})
		if kept.key != string(key) {
			t.Fatalf("len %d: remembered %q", n, kept.key)
		}
		want1 := 1.0
		if n > memoKeyRoom {
			want1 = 2
		}
		if allocs != want1 {
			t.Errorf("len %d: %.0f allocations, want %.0f", n, allocs, want1)
		}
	}
}
