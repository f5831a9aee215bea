package policy

import (
	"fmt"
	"strings"

	"github.com/open-policy-agent/opa/v1/ast"
)

// Two things partial evaluation does not preserve, found by
// FuzzGeneratedPolicies; a policy where either can happen has its scopes
// decided by full evaluations (falling back is always exact).
//
//   - Conflicts of kept functions and of kept rules outside the decision
//     package. Topdown evaluates a body left to right, so a call that
//     conflicts is an error even when a later expression of the body
//     fails; partial evaluation saves the call, and drops the whole branch
//     when a later expression fails on the scope's known input: the error
//     is lost. Safe only when every later expression depends on the
//     per-object fields in a way partial evaluation saves without
//     deciding it (a call, a test of a term, an equality of terms that are
//     not composite literals). Kept rules of the decision package are
//     targets of the query: always evaluated, their conflicts surface.
//     (Partial evaluation reports no conflict of what it evaluates itself:
//     see keptRules.)
//   - Definedness under negation. `v := x[3]; not f(v)` fails when x[3] is
//     undefined; copy propagation rewrites it to `not f(x[3])`, which
//     succeeds then. (The compiler itself hoists a call's operands out of a
//     negation this way: `not is_string(r.prefix)` binds r.prefix first.)
//     When the policy binds a variable to a reference that depends on the
//     per-object fields and negates an expression using it, strictNeg is
//     set: the residual's negated expressions then fall back when a
//     reference in them (other than the per-object fields, always
//     defined) is undefined.

// peCaveat says why the compiled policy's residuals could differ from the
// full evaluation, or "", and whether negations must check their
// references.
func peCaveat(c *ast.Compiler, kept []string) (why string, strictNeg bool) {
	dep := unknownDependent(c)
	risky := map[string]bool{} // kept rules whose conflicts a dropped branch can hide
	for _, p := range kept {
		if notTarget(c, p) && dep[p] {
			risky[p] = true
		}
	}
	var all []string
	for p := range dep {
		all = append(all, p)
	}
	for _, name := range sortedModuleNames(c.Modules) {
		for _, r := range c.Modules[name].Rules {
			path := r.Ref().GroundPrefix().String()
			for b := r; b != nil; b = b.Else {
				tainted := ast.NewVarSet()
				if dep[path] {
					for _, a := range r.Head.Args {
						ast.WalkVars(a, func(v ast.Var) bool { tainted.Add(v); return false })
					}
				}
				w, neg := bodyCaveat(b.Body, tainted, dep, all, risky)
				strictNeg = strictNeg || neg
				if w != "" {
					return fmt.Sprintf("%s (%s): %s", path, b.Location, w), strictNeg
				}
				// Nested bodies (comprehensions, every): judged without
				// knowing which outer variables depend, conservatively.
				ast.WalkBodies(b.Body, func(nb ast.Body) bool {
					if w == "" && !bodySame(nb, b.Body) {
						var neg bool
						w, neg = nestedCaveat(nb, risky)
						strictNeg = strictNeg || neg
					}
					return w != ""
				})
				if w != "" {
					return fmt.Sprintf("%s (%s): %s", path, b.Location, w), strictNeg
				}
			}
		}
	}
	return "", strictNeg
}

func bodySame(a, b ast.Body) bool { return len(a) > 0 && len(b) > 0 && a[0] == b[0] }

// callsRisky: e calls or references one of the risky rules.
func callsRisky(e *ast.Expr, risky map[string]bool) string {
	if len(risky) == 0 {
		return ""
	}
	found := ""
	ast.WalkRefs(e, func(r ast.Ref) bool {
		if found == "" && r[0].Equal(ast.DefaultRootDocument) {
			g := r.GroundPrefix().String()
			for p := range risky {
				if g == p || strings.HasPrefix(g, p+".") || strings.HasPrefix(g, p+"[") || strings.HasPrefix(p, g) {
					found = p
				}
			}
		}
		return found != ""
	})
	return found
}

// savedWhole: partial evaluation saves e, a dependent expression, without
// deciding any part of it.
func savedWhole(e *ast.Expr) bool {
	if e.Negated || len(e.With) > 0 {
		return false
	}
	switch ts := e.Terms.(type) {
	case *ast.Term:
		return !composite(ts)
	case []*ast.Term:
		if e.IsEquality() || e.IsAssignment() {
			return !composite(ts[1]) && !composite(ts[2])
		}
		return true // a call: saved whole when an operand is unknown
	}
	return false
}

func composite(t *ast.Term) bool {
	switch t.Value.(type) {
	case *ast.Array, ast.Object, ast.Set, *ast.ArrayComprehension, *ast.SetComprehension, *ast.ObjectComprehension:
		return true
	}
	return false
}

func bodyCaveat(body ast.Body, tainted ast.VarSet, dep map[string]bool, all []string, risky map[string]bool) (why string, strictNeg bool) {
	bound := ast.NewVarSet()
	refVars := map[ast.Var]bool{}
	pending := "" // a risky call whose conflict later expressions could hide
	for _, e := range body {
		// (a kept rule's value is unknown to partial evaluation)
		depends := exprDepends(e, tainted, dep, all) || callsRisky(e, risky) != ""
		if pending != "" && !(depends && savedWhole(e)) {
			return fmt.Sprintf("%s may conflict, and partial evaluation can drop the conflict", pending), strictNeg
		}
		if p := callsRisky(e, risky); p != "" {
			pending = p
		}
		if e.Negated {
			var found ast.Var
			ast.WalkVars(e, func(v ast.Var) bool {
				if found == "" && refVars[v] {
					found = v
				}
				return found != ""
			})
			if found != "" {
				strictNeg = true
			}
			continue
		}
		if e.IsEquality() || e.IsAssignment() {
			ts := e.Terms.([]*ast.Term)
			for i := 1; i <= 2; i++ {
				v, ok := ts[i].Value.(ast.Var)
				if _, isRef := ts[3-i].Value.(ast.Ref); ok && isRef && !bound.Contains(v) && termDepends(ts[3-i], tainted, dep, all) {
					refVars[v] = true
				}
			}
		}
		if depends {
			ast.WalkVars(e, func(v ast.Var) bool { tainted.Add(v); return false })
		}
		ast.WalkVars(e, func(v ast.Var) bool { bound.Add(v); return false })
	}
	return "", strictNeg
}

// nestedCaveat: the caveats in a nested body, every reference and every
// later expression assumed to be the risky kind.
func nestedCaveat(body ast.Body, risky map[string]bool) (why string, strictNeg bool) {
	bound := ast.NewVarSet()
	refVars := map[ast.Var]bool{}
	pending := ""
	for _, e := range body {
		if pending != "" {
			return fmt.Sprintf("%s may conflict, and partial evaluation can drop the conflict", pending), strictNeg
		}
		pending = callsRisky(e, risky)
		if e.Negated {
			var found ast.Var
			ast.WalkVars(e, func(v ast.Var) bool {
				if found == "" && refVars[v] {
					found = v
				}
				return found != ""
			})
			if found != "" {
				strictNeg = true
			}
			continue
		}
		if e.IsEquality() || e.IsAssignment() {
			ts := e.Terms.([]*ast.Term)
			for i := 1; i <= 2; i++ {
				v, ok := ts[i].Value.(ast.Var)
				if _, isRef := ts[3-i].Value.(ast.Ref); ok && isRef && !bound.Contains(v) {
					refVars[v] = true
				}
			}
		}
		ast.WalkVars(e, func(v ast.Var) bool { bound.Add(v); return false })
	}
	return "", strictNeg
}
