package cover

import (
	"math/rand/v2"
	"slices"
	"strings"
	"testing"
)

// TestSetOperations holds Union and Intersect to their meaning, element by
// element, on random prefix sets over a small alphabet.
func TestSetOperations(t *testing.T) {
	r := rand.New(rand.NewPCG(7, 8))
	word := func(n int) string {
		b := make([]byte, r.IntN(n+1))
		for i := range b {
			b[i] = "ab/"[r.IntN(3)]
		}
		return string(b)
	}
	set := func() Set {
		switch r.IntN(6) {
		case 0:
			return All()
		case 1:
			return Set{}
		}
		var ps []string
		for range 1 + r.IntN(4) {
			ps = append(ps, word(3))
		}
		return Prefixes(ps...)
	}
	for range 2000 {
		a, b := set(), set()
		u, i := a.Union(b), a.Intersect(b)
		for _, s := range [][]string{u.Prefixes, i.Prefixes, a.Prefixes} {
			if !slices.IsSorted(s) {
				t.Fatalf("not sorted: %q", s)
			}
			for j := 1; j < len(s); j++ {
				if strings.HasPrefix(s[j], s[j-1]) {
					t.Fatalf("not normalized: %q", s)
				}
			}
		}
		for range 20 {
			v := word(6)
			if u.Contains(v) != (a.Contains(v) || b.Contains(v)) {
				t.Fatalf("%v ∪ %v = %v wrong at %q", a, b, u, v)
			}
			if i.Contains(v) != (a.Contains(v) && b.Contains(v)) {
				t.Fatalf("%v ∩ %v = %v wrong at %q", a, b, i, v)
			}
		}
	}
	if !Prefixes("").Contains("x") || Prefixes().Contains("") || !(Set{}).Empty() || All().Empty() {
		t.Fatal("edge cases")
	}
}
