package fastpath

import (
	"slices"
	"testing"

	"github.com/countersign/countersign/internal/policyinput"
	"github.com/open-policy-agent/opa/v1/ast"
)

// TestBuiltinsReviewed: every built-in of the OPA version compiled in is
// either allowed on the fast path or refused, and the allowed ones are
// still pure functions. An OPA upgrade that adds a built-in fails here
// until it is reviewed (doc.go's checklist); until then the fast path
// refuses it, which is safe.
func TestBuiltinsReviewed(t *testing.T) {
	var unreviewed []string
	for name, bi := range ast.BuiltinMap {
		if name != bi.Name {
			continue // an infix alias (+, ==, in): compiled to its name
		}
		if !fastBuiltins[name] && !refusedBuiltins[name] {
			unreviewed = append(unreviewed, name)
		}
	}
	slices.Sort(unreviewed)
	if len(unreviewed) > 0 {
		t.Errorf("built-ins in neither fastBuiltins nor refusedBuiltins (review them): %v", unreviewed)
	}
	for name := range fastBuiltins {
		if refusedBuiltins[name] {
			t.Errorf("%s is both allowed and refused", name)
		}
		bi, ok := ast.BuiltinMap[name]
		if !ok {
			t.Errorf("allowed built-in %s does not exist in this OPA version", name)
			continue
		}
		if bi.Nondeterministic || bi.Relation {
			t.Errorf("allowed built-in %s is non-deterministic or a relation", name)
		}
		if _, _, ok := usableBuiltin(name); !ok {
			t.Errorf("allowed built-in %s is not usable", name)
		}
	}
	for name := range refusedBuiltins {
		if _, ok := ast.BuiltinMap[name]; !ok {
			t.Errorf("refused built-in %s does not exist in this OPA version: remove it", name)
		}
	}
}

// TestBuiltinRefusedFallsBack: a residual calling a built-in off the
// allow-list (deterministic, but unreviewed) is unsupported: its scope is
// decided by full evaluations, with OPA's answers.
func TestBuiltinRefusedFallsBack(t *testing.T) {
	for name, call := range map[string]string{
		"strings.split_n": `count(strings.split_n(input.resource.key, "/", 2)) == 2`,
		"uuid.parse":      `not uuid.parse(input.resource.key)`,
		"walk":            `some p, v; walk({"k": input.resource.key}, [p, v]); startswith(v, "wh/")`,
	} {
		t.Run(name, func(t *testing.T) {
			e := moduleEngine(t, map[string]string{"authz.rego": "package countersign.authz\nallow if {\n\tstartswith(input.resource.key, \"wh/\")\n\t" + call + "\n}\n"}, nil)
			if e.fast == nil {
				t.Fatalf("no fast path: %s", e.noFast)
			}
			forceBuild(e)
			g := newInputGen(21, exampleGrants(t))
			g.stream(40, func(in *policyinput.Input) { checkSame(t, e, in) })
			st := &e.fast.stats
			if st.hits.Load() != 0 || st.failed.Load() == 0 {
				t.Fatalf("%d fast decisions, %d unsupported residuals: %s ran on the fast path", st.hits.Load(), st.failed.Load(), name)
			}
		})
	}
}
