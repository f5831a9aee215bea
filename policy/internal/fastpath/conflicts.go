package fastpath

import (
	"fmt"
	"strings"
	"sync"

	"github.com/open-policy-agent/opa/v1/ast"
	"github.com/open-policy-agent/opa/v1/topdown"
)

// Partial evaluation inlines a rule that depends on the per-object fields
// into its callers, one branch per definition. That is exact unless the
// rule has two definitions that can both succeed with different values:
// OPA then reports a conflict (an error), and the inlined branches would
// just both succeed. conflictCapable finds the rules for which the policy
// does not rule that out; partial evaluation keeps them as rules of the
// residual (rego.DisableInlining), where the interpreter detects conflicts
// as topdown does.
//
// A complete rule or function is conflict-free when every definition has at
// most one value for a given input (its value is a constant, or its body
// cannot iterate) and every two definitions either have the same constant
// value or cannot both succeed: one tests E and the other not E, one tests
// A == B and the other A != B, or they test A == c1 and A == c2 for two
// different constants (a function's constant argument is such a test). The
// test is syntactic, on the compiled rules, after substituting the local
// variables by what defines them; anything it does not recognise is
// conflict-capable. Rules with else, partial objects and rules with
// reference heads are always kept.

// keptRules are the rules partial evaluation must not inline: those that may
// conflict and that depend on the per-object fields (the others are
// evaluated at partial evaluation, where OPA itself does not report their
// conflicts: complete rules are checked per scope, scopeChecked, and
// functions by a tracer, tracedFunctions).
func keptRules(c *ast.Compiler) []string {
	dep := unknownDependent(c)
	var out []string
	for _, p := range conflictCapable(c) {
		if dep[p] {
			out = append(out, p)
		}
	}
	return out
}

// scopeChecked are the conflict-capable rules outside the decision package
// that do not depend on the per-object fields: partial evaluation would
// not report their conflicts, and they are not targets; a scope evaluates
// them once, fully, on its known input (Cache.partial).
func scopeChecked(c *ast.Compiler) []string {
	dep := unknownDependent(c)
	var out []string
	for _, p := range conflictCapable(c) {
		if !dep[p] && !isFunction(c, p) && notTarget(c, p) {
			out = append(out, p)
		}
	}
	return out
}

func isFunction(c *ast.Compiler, p string) bool {
	rules := c.GetRulesExact(ast.MustParseRef(p))
	return len(rules) > 0 && len(rules[0].Head.Args) > 0
}

// tracedFunctions are the conflict-capable functions that do not depend
// on the per-object fields, each definition (else branches included)
// mapped to its function's path. Partial evaluation evaluates their calls
// itself and takes each of a call's values as a branch, where the full
// evaluation fails with a conflict; keeping them in the residual instead
// would cost the examples' location helpers (exclusive only semantically)
// fallbacks. So a scope's partial evaluation is traced
// (functionConflictTracer), and a call that gave two values fails the
// scope, whose objects OPA then decides.
func tracedFunctions(c *ast.Compiler) map[*ast.Rule]string {
	dep := unknownDependent(c)
	out := map[*ast.Rule]string{}
	for _, p := range conflictCapable(c) {
		if dep[p] || !isFunction(c, p) {
			continue
		}
		for _, r := range c.GetRulesExact(ast.MustParseRef(p)) {
			for e := r; e != nil; e = e.Else {
				out[e] = p
			}
		}
	}
	return out
}

// functionConflictTracer watches the values of tracedFunctions during one
// partial evaluation: every definition's exit with ground arguments and a
// ground value is one value of that call. Two different values for the
// same arguments are the conflict topdown reports in a full evaluation.
// Used by one evaluation at a time.
type functionConflictTracer struct {
	rules    map[*ast.Rule]string
	values   map[string]*ast.ValueMap // function path: arguments -> value
	conflict string                   // the first conflict seen
}

func newFunctionConflictTracer(rules map[*ast.Rule]string) *functionConflictTracer {
	return &functionConflictTracer{rules: rules, values: map[string]*ast.ValueMap{}}
}

func (t *functionConflictTracer) Enabled() bool { return true }

func (t *functionConflictTracer) Config() topdown.TraceConfig { return topdown.TraceConfig{} }

func (t *functionConflictTracer) TraceEvent(ev topdown.Event) {
	if ev.Op != topdown.ExitOp || t.conflict != "" {
		return
	}
	r, ok := ev.Node.(*ast.Rule)
	if !ok {
		return
	}
	path, ok := t.rules[r]
	if !ok || r.Head.Value == nil {
		return
	}
	args := ev.Plug(ast.ArrayTerm(r.Head.Args...))
	val := ev.Plug(r.Head.Value)
	if !args.IsGround() || !val.IsGround() {
		return
	}
	m := t.values[path]
	if m == nil {
		m = ast.NewValueMap()
		t.values[path] = m
	}
	prev := m.Get(args.Value)
	if prev == nil {
		m.Put(args.Value, val.Value)
		return
	}
	if prev.Compare(val.Value) != 0 {
		t.conflict = fmt.Sprintf("function %s%v has two values, %v and %v (topdown reports a conflict)", path, args, prev, val)
	}
}

// notTarget: p is a function, or a rule outside the decision package.
func notTarget(c *ast.Compiler, p string) bool {
	pkg := "data." + Package
	rules := c.GetRulesExact(ast.MustParseRef(p))
	fn := len(rules) > 0 && len(rules[0].Head.Args) > 0
	return fn || p != pkg && !strings.HasPrefix(p, pkg+".") && !strings.HasPrefix(p, pkg+"[")
}

// conflictCapable returns the paths of the rules that may conflict.
func conflictCapable(c *ast.Compiler) []string {
	type group struct {
		path  string
		rules []*ast.Rule
	}
	groups := map[string]*group{}
	var order []string
	for _, name := range sortedModuleNames(c.Modules) {
		for _, r := range c.Modules[name].Rules {
			path := r.Ref().GroundPrefix().String()
			g := groups[path]
			if g == nil {
				g = &group{path: path}
				groups[path] = g
				order = append(order, path)
			}
			g.rules = append(g.rules, r)
		}
	}
	var out []string
	for _, path := range order {
		if groupCapable(groups[path].rules) {
			out = append(out, path)
		}
	}
	return out
}

func groupCapable(rules []*ast.Rule) bool {
	var defs []*defInfo
	for _, r := range rules {
		if len(r.Head.Ref()) != 1 {
			return true // ref heads, partial objects
		}
		if r.Head.RuleKind() == ast.MultiValue {
			return false // a partial set: no conflicts
		}
		if r.Else != nil {
			return true
		}
		if r.Default {
			continue // used only when no other definition has a value
		}
		d := analyzeDef(r)
		if !d.single {
			return true
		}
		defs = append(defs, d)
	}
	for i := range defs {
		for j := i + 1; j < len(defs); j++ {
			a, b := defs[i], defs[j]
			if a.ground != nil && b.ground != nil && a.ground.Equal(b.ground) {
				continue
			}
			if !exclusive(a, b) {
				return true
			}
		}
	}
	return false
}

type defInfo struct {
	single bool      // at most one value per input
	ground *ast.Term // the value, if constant
	tests  []normTest
}

type normTest struct {
	neg bool
	t   *ast.Term // a call term (the builtin or function and its normalized operands), or a term tested for truth
}

// argVar names a function's i-th argument in normalized terms.
func argVar(i int) ast.Var { return ast.Var(fmt.Sprintf("$arg%d", i)) }

func analyzeDef(r *ast.Rule) *defInfo {
	d := &defInfo{single: true}
	if r.Head.Value != nil && r.Head.Value.IsGround() {
		d.ground = r.Head.Value
	}
	sub := map[ast.Var]*ast.Term{}
	bound := ast.NewVarSet()
	for i, a := range r.Head.Args {
		switch v := a.Value.(type) {
		case ast.Var:
			sub[v] = ast.VarTerm(string(argVar(i)))
			bound.Add(v)
		default:
			if !a.IsGround() {
				d.single = false // a pattern argument: not analysed
				return d
			}
			d.tests = append(d.tests, normTest{t: ast.CallTerm(ast.NewTerm(ast.Equal.Ref()), ast.VarTerm(string(argVar(i))), a)})
		}
	}
	for _, e := range r.Body {
		if iterates(e, bound) {
			d.single = false
		}
		t, def := normalize(e, sub, bound)
		if def == nil && t != nil {
			d.tests = append(d.tests, normTest{neg: e.Negated, t: t})
		}
		if !e.Negated {
			ast.WalkVars(e, func(v ast.Var) bool {
				bound.Add(v)
				return false
			})
		}
	}
	if d.ground != nil {
		d.single = true // every solution has the one value
	}
	return d
}

// iterates reports whether e can have several solutions: a reference
// indexed by a variable not yet bound, or a relation built-in.
func iterates(e *ast.Expr, bound ast.VarSet) bool {
	if e.Negated {
		return false
	}
	found := false
	ast.NewGenericVisitor(func(x any) bool {
		if found {
			return true
		}
		switch x := x.(type) {
		case *ast.ArrayComprehension, *ast.SetComprehension, *ast.ObjectComprehension, *ast.Every:
			return true // a single value (or a test), whatever is inside
		case ast.Ref:
			for _, p := range x[1:] {
				ast.WalkVars(p, func(v ast.Var) bool {
					if !bound.Contains(v) {
						found = true
					}
					return found
				})
			}
		}
		return found
	}).Walk(e)
	if found {
		return true
	}
	if e.IsCall() {
		if bi, ok := ast.BuiltinMap[e.Operator().String()]; ok && bi.Relation {
			return true
		}
	}
	return false
}

// normalize returns the normalized test of e, or, for an expression that
// defines a variable (x = t with x new, or a call's output), records the
// definition and returns def non-nil.
func normalize(e *ast.Expr, sub map[ast.Var]*ast.Term, bound ast.VarSet) (*ast.Term, *ast.Term) {
	switch ts := e.Terms.(type) {
	case *ast.Term:
		return subst(ts, sub), nil
	case []*ast.Term:
		op := ts[0]
		args := ts[1:]
		name := op.String()
		if !e.Negated && (name == ast.Equality.Name || name == ast.Assign.Name) && len(args) == 2 {
			for i := range 2 {
				if v, ok := args[i].Value.(ast.Var); ok && !bound.Contains(v) {
					t := subst(args[1-i], sub)
					sub[v] = t
					return nil, t
				}
			}
			return ast.CallTerm(ast.NewTerm(ast.Equal.Ref()), subst(args[0], sub), subst(args[1], sub)), nil
		}
		arity := -1
		if bi, ok := ast.BuiltinMap[name]; ok && bi.Decl != nil {
			arity = bi.Decl.Arity()
		}
		if !e.Negated && arity >= 0 && len(args) == arity+1 {
			if v, ok := args[arity].Value.(ast.Var); ok && !bound.Contains(v) {
				call := make([]*ast.Term, 0, len(args))
				call = append(call, op)
				for _, a := range args[:arity] {
					call = append(call, subst(a, sub))
				}
				t := ast.CallTerm(call...)
				sub[v] = t
				return nil, t
			}
		}
		// A user function's output, or a test.
		call := make([]*ast.Term, 0, len(args)+1)
		call = append(call, op)
		for _, a := range args {
			call = append(call, subst(a, sub))
		}
		if arity < 0 && !e.Negated && len(args) > 0 {
			if v, ok := args[len(args)-1].Value.(ast.Var); ok && !bound.Contains(v) {
				t := ast.CallTerm(call[:len(call)-1]...)
				sub[v] = t
				return nil, t
			}
		}
		return ast.CallTerm(call...), nil
	}
	return nil, nil
}

// subst replaces the variables of t by what defines them.
func subst(t *ast.Term, sub map[ast.Var]*ast.Term) *ast.Term {
	switch v := t.Value.(type) {
	case ast.Var:
		if s, ok := sub[v]; ok {
			return s
		}
		return t
	case ast.Ref:
		head := subst(v[0], sub)
		out := make(ast.Ref, 0, len(v))
		if r, ok := head.Value.(ast.Ref); ok {
			out = append(out, r...)
		} else {
			out = append(out, head)
		}
		for _, p := range v[1:] {
			out = append(out, subst(p, sub))
		}
		return ast.NewTerm(out)
	case ast.Call:
		out := make(ast.Call, len(v))
		for i, p := range v {
			out[i] = subst(p, sub)
		}
		return ast.NewTerm(out)
	case *ast.Array:
		out := make([]*ast.Term, v.Len())
		for i := range out {
			out[i] = subst(v.Elem(i), sub)
		}
		return ast.ArrayTerm(out...)
	}
	return t
}

func exclusive(a, b *defInfo) bool {
	for _, x := range a.tests {
		for _, y := range b.tests {
			if complementary(x, y) || complementary(y, x) {
				return true
			}
		}
	}
	return false
}

var (
	equalRef = ast.Equal.Ref()
	neqRef   = ast.NotEqual.Ref()
)

func callParts(t *ast.Term) (ast.Ref, []*ast.Term, bool) {
	c, ok := t.Value.(ast.Call)
	if !ok || len(c) == 0 {
		return nil, nil, false
	}
	op, ok := c[0].Value.(ast.Ref)
	return op, c[1:], ok
}

// complementary: x and y cannot both hold.
func complementary(x, y normTest) bool {
	if x.neg != y.neg {
		return x.t.Equal(y.t)
	}
	if x.neg {
		return false
	}
	xop, xa, ok1 := callParts(x.t)
	yop, ya, ok2 := callParts(y.t)
	if !ok1 || !ok2 || len(xa) != 2 || len(ya) != 2 {
		return false
	}
	switch {
	case xop.Equal(equalRef) && yop.Equal(neqRef):
		return sameOperands(xa, ya)
	case xop.Equal(equalRef) && yop.Equal(equalRef):
		// A == c1 and A == c2, c1 != c2 constants.
		for i := range 2 {
			for j := range 2 {
				a, c1 := xa[i], xa[1-i]
				b, c2 := ya[j], ya[1-j]
				if !a.Equal(b) || !ast.IsScalar(c1.Value) || !ast.IsScalar(c2.Value) {
					continue
				}
				if !c1.Equal(c2) {
					return true
				}
			}
		}
	}
	return false
}

func sameOperands(a, b []*ast.Term) bool {
	return (a[0].Equal(b[0]) && a[1].Equal(b[1])) || (a[0].Equal(b[1]) && a[1].Equal(b[0]))
}

// unknownDependent over-approximates which rules partial evaluation may
// leave depending on the per-object fields: a rule whose body reads them
// (or an object holding them, or input with a variable key), refers to such
// a rule, or — for a function — is called anywhere with an argument that
// depends on them. Dependence flows through the local variables of a body
// (any variable of an expression that depends is dependent) to a fixpoint.
func unknownDependent(c *ast.Compiler) map[string]bool {
	var rules []*ast.Rule
	for _, name := range sortedModuleNames(c.Modules) {
		rules = append(rules, c.Modules[name].Rules...)
	}
	paths := make([]string, len(rules))
	var all []string
	seen := map[string]bool{}
	for i, r := range rules {
		paths[i] = r.Ref().GroundPrefix().String()
		if !seen[paths[i]] {
			seen[paths[i]] = true
			all = append(all, paths[i])
		}
	}
	dep := map[string]bool{}
	for changed := true; changed; {
		changed = false
		mark := func(p string) {
			if !dep[p] {
				dep[p] = true
				changed = true
			}
		}
		for i, r := range rules {
			tainted := ast.NewVarSet()
			if dep[paths[i]] {
				for _, a := range r.Head.Args {
					ast.WalkVars(a, func(v ast.Var) bool { tainted.Add(v); return false })
				}
			}
			for _, x := range rulePieces(r) {
				walkExprs(x, func(e *ast.Expr) {
					if !exprDepends(e, tainted, dep, all) {
						return
					}
					if _, isRule := x.(*ast.Rule); isRule {
						mark(paths[i])
					}
					if !e.Negated {
						ast.WalkVars(e, func(v ast.Var) bool { tainted.Add(v); return false })
					}
					// A call with a dependent argument: the function depends.
					if e.IsCall() {
						if op := e.Operator(); op[0].Equal(ast.DefaultRootDocument) {
							mark(op.String())
						}
					}
					ast.WalkTerms(e, func(t *ast.Term) bool {
						if call, ok := t.Value.(ast.Call); ok {
							if op, ok := call[0].Value.(ast.Ref); ok && op[0].Equal(ast.DefaultRootDocument) {
								mark(op.String())
							}
						}
						return false
					})
				})
			}
			// The value depends on what the body binds.
			if !dep[paths[i]] && (r.Head.Value != nil && termDepends(r.Head.Value, tainted, dep, all) ||
				r.Head.Key != nil && termDepends(r.Head.Key, tainted, dep, all)) {
				mark(paths[i])
			}
		}
	}
	return dep
}

// rulePieces are a rule and its else branches.
func rulePieces(r *ast.Rule) []any {
	out := []any{r}
	for e := r.Else; e != nil; e = e.Else {
		out = append(out, e)
	}
	return out
}

func walkExprs(x any, f func(*ast.Expr)) {
	r := x.(*ast.Rule)
	for _, e := range r.Body {
		f(e)
	}
	// every and comprehensions have bodies of their own: an expression
	// containing them is judged as a whole by exprDepends.
}

func exprDepends(e *ast.Expr, tainted ast.VarSet, dep map[string]bool, all []string) bool {
	found := false
	ast.NewGenericVisitor(func(x any) bool {
		if found {
			return true
		}
		switch t := x.(type) {
		case *ast.Term:
			if termDepends(t, tainted, dep, all) {
				found = true
			}
			return true // termDepends looked inside
		case *ast.Expr:
			if len(t.With) > 0 {
				found = true
			}
		}
		return found
	}).Walk(e)
	return found
}

func termDepends(t *ast.Term, tainted ast.VarSet, dep map[string]bool, all []string) bool {
	found := false
	ast.WalkTerms(t, func(x *ast.Term) bool {
		if found {
			return true
		}
		switch v := x.Value.(type) {
		case ast.Var:
			if tainted.Contains(v) || v.Equal(ast.InputRootDocument.Value) {
				found = true
			}
		case ast.Ref:
			switch {
			case v[0].Equal(ast.InputRootDocument):
				found = inputRefDepends(v)
			case v[0].Equal(ast.DefaultRootDocument):
				found = dataRefDepends(v, dep, all)
			default:
				if h, ok := v[0].Value.(ast.Var); ok && tainted.Contains(h) {
					found = true
				}
			}
			if found {
				return true
			}
			// The reference's segments (variables, nested terms).
			for _, p := range v[1:] {
				if termDepends(p, tainted, dep, all) {
					found = true
					return true
				}
			}
			return true
		}
		return found
	})
	return found
}

// inputRefDepends: ref reads a per-object field, an object holding one, or
// input with a variable key.
func inputRefDepends(ref ast.Ref) bool {
	for _, ur := range unknownRefs() {
		n := min(len(ref), len(ur))
		same := true
		for i := 1; i < n; i++ {
			if !ref[i].IsGround() {
				return true
			}
			if !ref[i].Equal(ur[i]) {
				same = false
				break
			}
		}
		if same {
			return true // one is a prefix of the other
		}
	}
	return false
}

var unknownRefs = sync.OnceValue(func() []ast.Ref {
	out := make([]ast.Ref, len(unknownFields))
	for i, u := range unknownFields {
		out[i] = ast.MustParseRef(u)
	}
	return out
})

// dataRefDepends: ref may read a dependent rule (its ground prefix leads to
// one, or one leads to it).
func dataRefDepends(ref ast.Ref, dep map[string]bool, all []string) bool {
	g := ref.GroundPrefix()
	gs := g.String()
	for _, p := range all {
		if !dep[p] {
			continue
		}
		if p == gs || len(p) > len(gs) && p[:len(gs)] == gs && (p[len(gs)] == '.' || p[len(gs)] == '[') ||
			len(gs) > len(p) && gs[:len(p)] == p && (gs[len(p)] == '.' || gs[len(p)] == '[') {
			return true
		}
	}
	return false
}
