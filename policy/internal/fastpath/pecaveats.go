package fastpath

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
//     package ("risky" rules). Topdown evaluates a body left to right, so a
//     call that conflicts is an error even when a later expression of the
//     body fails; partial evaluation saves the call, and drops the whole
//     branch when a later expression fails on the scope's known input: the
//     error is lost. The same holds one level up: a rule whose body reaches
//     a risky call is inlined into its callers, where a later expression can
//     drop it. So after a reference to a risky rule, or to any rule that
//     reaches one (riskyReach), every later expression of the body must be
//     one partial evaluation certainly saves without deciding it: of a
//     saved shape (a built-in call, a test of a term, an equality of terms
//     that are not composite literals), reading a per-object field (or a
//     document holding one) directly or a variable bound by such an
//     expression, and nothing under data. Dependence through a rule or
//     function partial evaluation inlines is not enough (the inlined body
//     can be decided on the scope). Kept rules of the decision package are targets
//     of the query: always evaluated, their conflicts surface. (Partial
//     evaluation reports no conflict of what it evaluates itself: see
//     tracedFunctions.)
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
	reach := riskyReach(c, risky)
	arity := map[string]int{} // the risky functions' arities: their calls are saved
	for p := range risky {
		if rs := c.GetRulesExact(ast.MustParseRef(p)); len(rs) > 0 && len(rs[0].Head.Args) > 0 {
			arity[p] = len(rs[0].Head.Args)
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
				top := caveatScan{reach: reach, arity: arity, bindDepends: func(t *ast.Term) bool { return termDepends(t, tainted, dep, all) }}
				w, neg := top.body(b.Body, func(e *ast.Expr) {
					if exprDepends(e, tainted, dep, all) {
						walkOperandVars(e, func(v ast.Var) { tainted.Add(v) })
					}
				})
				strictNeg = strictNeg || neg
				if w != "" {
					return fmt.Sprintf("%s (%s): %s", path, b.Location, w), strictNeg
				}
				// Nested bodies (comprehensions, every): judged without
				// knowing which outer variables depend, conservatively.
				nested := caveatScan{reach: reach, arity: arity, nested: true}
				ast.WalkBodies(b.Body, func(nb ast.Body) bool {
					if w == "" && !bodySame(nb, b.Body) {
						var neg bool
						w, neg = nested.body(nb, nil)
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

// riskyReach is risky and every rule whose definitions reference one of
// them, directly or through other rules (to a fixpoint).
func riskyReach(c *ast.Compiler, risky map[string]bool) map[string]bool {
	reach := make(map[string]bool, len(risky))
	for p := range risky {
		reach[p] = true
	}
	if len(risky) == 0 {
		return reach
	}
	for changed := true; changed; {
		changed = false
		for _, name := range sortedModuleNames(c.Modules) {
			for _, r := range c.Modules[name].Rules {
				path := r.Ref().GroundPrefix().String()
				if reach[path] {
					continue
				}
				for b := r; b != nil && !reach[path]; b = b.Else {
					for _, e := range b.Body {
						if callsRisky(e, reach) != "" {
							reach[path] = true
							changed = true
							break
						}
					}
				}
			}
		}
	}
	return reach
}

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

// caveatScan scans one body for the two caveats.
type caveatScan struct {
	reach map[string]bool // riskyReach
	// arity of each risky (kept) function: partial evaluation saves its
	// calls, so their outputs are unknown.
	arity map[string]int
	// bindDepends says whether a term bound to a variable depends on the
	// per-object fields (strictNeg); nil for a nested body: every one may.
	bindDepends func(*ast.Term) bool
	// nested: no later expression counts as certainly saved (the outer
	// body's bindings are not followed).
	nested bool
}

// body scans the expressions in order; after, if non-nil, sees each
// expression once it is scanned.
func (s caveatScan) body(body ast.Body, after func(*ast.Expr)) (why string, strictNeg bool) {
	bound := ast.NewVarSet()
	saved := ast.NewVarSet() // variables bound by certainly saved expressions
	refVars := map[ast.Var]bool{}
	pending := "" // a risky reference whose conflict later expressions could hide
	for _, e := range body {
		if selfEquality(e) {
			return "an equality of a reference with itself (partial evaluation drops it as a no-op, and with it the test that the reference is defined)", strictNeg
		}
		kept, out := s.keptCall(e)
		// A second call of the pending function is saved like the first
		// (if partial evaluation saved nothing for it, it is undefined
		// everywhere and cannot conflict).
		certain := !s.nested && savedWhole(e) &&
			(kept != "" && kept == pending || !readsData(e) && (readsObject(e) || usesVar(e, saved)))
		if pending != "" && !certain {
			return fmt.Sprintf("%s may conflict, and partial evaluation can drop the conflict", pending), strictNeg
		}
		if p := callsRisky(e, s.reach); p != "" {
			pending = p
		}
		if certain {
			walkOperandVars(e, func(v ast.Var) { saved.Add(v) })
		}
		if out != nil && !s.nested {
			walkOperandVars(&ast.Expr{Terms: out}, func(v ast.Var) { saved.Add(v) })
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
				if _, isRef := ts[3-i].Value.(ast.Ref); ok && isRef && !bound.Contains(v) && (s.bindDepends == nil || s.bindDepends(ts[3-i])) {
					refVars[v] = true
				}
			}
		}
		if after != nil {
			after(e)
		}
		ast.WalkVars(e, func(v ast.Var) bool { bound.Add(v); return false })
	}
	return "", strictNeg
}

// selfEquality: e is A = A or A == A with A holding a reference. OPA's
// copy propagation removes it from a residual as always true, but it is
// false when A is undefined (found by FuzzGeneratedPolicies:
// `input.request.headers["x-amz-acl"] == input.request.headers["x-amz-acl"]`
// allowed requests without the header). A variable equal to itself keeps
// its definedness (copy propagation binds it).
func selfEquality(e *ast.Expr) bool {
	if !e.IsEquality() && !e.IsCall() {
		return false
	}
	ts, ok := e.Terms.([]*ast.Term)
	if !ok || len(ts) != 3 {
		return false
	}
	if op := e.Operator(); !op.Equal(ast.Equality.Ref()) && !op.Equal(ast.Equal.Ref()) {
		return false
	}
	if !ts[1].Equal(ts[2]) {
		return false
	}
	hasRef := false
	ast.WalkRefs(ts[1], func(ast.Ref) bool { hasRef = true; return true })
	return hasRef
}

// keptCall: e is a call of a risky function, its path and the term its
// output is unified with (nil when the call is a test).
func (s caveatScan) keptCall(e *ast.Expr) (string, *ast.Term) {
	ts, ok := e.Terms.([]*ast.Term)
	if !ok || e.Negated || len(ts) == 0 {
		return "", nil
	}
	op, ok := ts[0].Value.(ast.Ref)
	if !ok {
		return "", nil
	}
	p := op.String()
	n, ok := s.arity[p]
	if !ok {
		return "", nil
	}
	if len(ts)-1 == n+1 {
		return p, ts[n+1]
	}
	return p, nil
}

// readsObject: e reads a per-object field, or a document holding one
// (`input`, `input.resource`), by a ground reference: what partial
// evaluation's save set contains, so a built-in call or a unification
// with it is saved.
func readsObject(e *ast.Expr) bool {
	found := false
	ast.WalkTerms(e, func(t *ast.Term) bool {
		if found {
			return true
		}
		switch v := t.Value.(type) {
		case ast.Var:
			found = v.Equal(ast.InputRootDocument.Value)
		case ast.Ref:
			if v.IsGround() && v[0].Equal(ast.InputRootDocument) {
				for _, u := range unknownRefs() {
					found = found || v.HasPrefix(u) || u.HasPrefix(v)
				}
			}
			for _, p := range v[1:] { // not the head: input.principal is not input
				found = found || readsObject(&ast.Expr{Terms: p})
			}
			return true
		}
		return found
	})
	return found
}

// readsData: e calls a function or reads a rule or document under data.
// Partial evaluation inlines those and can decide them on the scope (an
// inlined body that fails, a function that is undefined there), so such
// an expression is never certainly saved.
func readsData(e *ast.Expr) bool {
	found := false
	ast.WalkRefs(e, func(r ast.Ref) bool {
		found = found || r[0].Equal(ast.DefaultRootDocument)
		return found
	})
	return found
}

// usesVar: an operand of e uses one of vs.
func usesVar(e *ast.Expr, vs ast.VarSet) bool {
	found := false
	walkOperandVars(e, func(v ast.Var) { found = found || vs.Contains(v) })
	return found
}

// walkOperandVars calls f with the variables of e's operands: not the
// operators (the compiler's eq, a function's data reference) nor the root
// documents heading a reference.
func walkOperandVars(e *ast.Expr, f func(ast.Var)) {
	var term func(*ast.Term)
	term = func(t *ast.Term) {
		ast.WalkTerms(t, func(x *ast.Term) bool {
			switch v := x.Value.(type) {
			case ast.Var:
				f(v)
			case ast.Ref:
				if h, ok := v[0].Value.(ast.Var); ok && !v[0].Equal(ast.DefaultRootDocument) && !v[0].Equal(ast.InputRootDocument) {
					f(h)
				}
				for _, p := range v[1:] {
					term(p)
				}
				return true
			case ast.Call:
				for _, a := range v[1:] {
					term(a)
				}
				return true
			}
			return false
		})
	}
	switch ts := e.Terms.(type) {
	case *ast.Term:
		term(ts)
	case []*ast.Term:
		for _, t := range ts[1:] {
			term(t)
		}
	default:
		ast.WalkVars(e, func(v ast.Var) bool { f(v); return false }) // some, every: all of them
	}
}
