package fastpath

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync/atomic"

	"github.com/open-policy-agent/opa/v1/ast"
	"github.com/open-policy-agent/opa/v1/topdown"
)

// This file turns the residual policy that partial evaluation leaves for one
// scope (the rules that still depend on the per-object fields of the input)
// into a program for the interpreter in interp.go.
//
// Only a well-understood subset of compiled Rego is accepted: complete
// rules, partial sets and functions (with default and else), bodies of
// unifications, calls of deterministic built-ins and of the residual's own
// functions, terms and negations. Anything else — comprehensions, every,
// with, partial objects, references to base documents — makes the scope
// unsupported, and its objects are decided by a full evaluation.

// errUnsupported: the residual uses something the interpreter does not
// implement; the scope falls back to full evaluation.
var errUnsupported = errors.New("policy: residual not supported by the fast path")

type ruleKind uint8

const (
	kindComplete ruleKind = iota
	kindSet
	kindFunc
)

// program is one scope's compiled residual.
type program struct {
	sets    []*ruleSet
	byPath  map[string]*ruleSet
	refs    map[string]*refTerm // ground input references, shared
	callees map[string]*callee
	query   *ruleSet   // partial set of [t0, t1, ...] tuples: the decision query
	tuple   []*ruleSet // the query compiled (compiled.go), or nil
	nRules  int
	// strictNeg: the policy binds variables to references it uses under
	// negation (pecaveats.go): negated expressions check their references.
	strictNeg bool
	// Header rules (headermemo.go): how many, and what is remembered of
	// them for the last header names.
	nHeaderRules int
	headerMemo   atomic.Pointer[headerMemo]
}

type ruleSet struct {
	id    int
	path  string
	kind  ruleKind
	arity int
	rules []*rule // top-level definitions, in order
	def   *rule
	index *guardIndex  // nil: evaluate every definition
	comp  *compiledSet // nil: the interpreter evaluates it (compiled.go)
}

type rule struct {
	set    *ruleSet
	nslots int
	args   []term
	head   term // complete and function: the value; set: the key
	body   []expr
	elses  []*rule
	guards []guard // tests of the body an index can check up front
	// pre: the tests the body starts with (compiled.go), checked before
	// the interpreter runs it; nil: none.
	pre []compiledTest
	// memoSlot is 1 + the rule's index in the program's header memo
	// (headermemo.go); 0: not a header rule.
	memoSlot int
}

type exprKind uint8

const (
	exTerm exprKind = iota
	exEq
	exBuiltin
	exFunc
)

type expr struct {
	kind    exprKind
	negated bool
	out     bool
	terms   []term // exTerm: [t]; exEq: [a, b]; calls: operands, then the output if out
	*callee
	// defined: references of a negated expression that must be defined
	// for the residual to be exact (copy propagation may have moved them
	// into the negation, see pecaveats.go); undefined falls back.
	defined []*refTerm
}

// callee is what a call calls, shared by the calls of one function.
type callee struct {
	bi     *ast.Builtin
	fn     topdown.BuiltinFunc
	native nativeBuiltin
	set    *ruleSet // exFunc
}

type termKind uint8

const (
	tConst termKind = iota
	tVar
	tRef
	tArray
	tObject // elems: key, value, key, value, ...
	tSet
)

type term struct {
	kind  termKind
	slot  int32
	c     ast.Value
	ref   *refTerm
	elems []term
}

type refHead uint8

const (
	headInput refHead = iota
	headVar
	headRule
	headConst // a variable folded to a constant
)

type refTerm struct {
	head refHead
	slot int       // headVar
	set  *ruleSet  // headRule
	c    ast.Value // headConst
	path []term
}

// compileProgram translates the compiled residual modules. query is the
// path of the decision query's rule set. known, if set, is the scope's
// known input: references into it, and calls of built-ins on constants,
// are folded into constants.
func compileProgram(c *ast.Compiler, query string, known *knownInput, strictNeg bool) (*program, error) {
	p := &program{byPath: map[string]*ruleSet{}, refs: map[string]*refTerm{}, callees: map[string]*callee{}, strictNeg: strictNeg}
	// First pass: rule sets, so that references between them resolve.
	type pending struct {
		set *ruleSet
		r   *ast.Rule
	}
	var todo []pending
	for _, name := range sortedModuleNames(c.Modules) {
		m := c.Modules[name]
		for _, r := range m.Rules {
			if len(r.Head.Ref()) != 1 {
				return nil, fmt.Errorf("%w: rule head %v", errUnsupported, r.Head.Ref())
			}
			path := r.Ref().GroundPrefix().String()
			rs := p.byPath[path]
			kind := kindComplete
			switch {
			case len(r.Head.Args) > 0:
				kind = kindFunc
			case r.Head.RuleKind() == ast.MultiValue:
				kind = kindSet
			}
			if rs == nil {
				rs = &ruleSet{id: len(p.sets), path: path, kind: kind, arity: len(r.Head.Args)}
				p.sets = append(p.sets, rs)
				p.byPath[path] = rs
			}
			if rs.kind != kind || rs.arity != len(r.Head.Args) {
				return nil, fmt.Errorf("%w: mixed rule kinds at %s", errUnsupported, path)
			}
			todo = append(todo, pending{rs, r})
		}
	}
	for _, t := range todo {
		tr := newTranslator(p, known)
		r, err := tr.rule(t.set, t.r)
		if err != nil {
			return nil, err
		}
		if t.r.Default {
			if t.set.def != nil || t.set.kind == kindSet {
				return nil, fmt.Errorf("%w: default at %s", errUnsupported, t.set.path)
			}
			t.set.def = r
		} else if !(t.r.Else == nil && len(r.body) == 1 && r.body[0].kind == exTerm && r.body[0].terms[0].kind == tConst && isFalse(r.body[0].terms[0].c)) {
			// (a definition that folded to false, without else, never
			// contributes: left out)
			t.set.rules = append(t.set.rules, r)
		}
		// else chain
		prev := r
		for e := t.r.Else; e != nil; e = e.Else {
			if t.set.kind == kindSet {
				return nil, fmt.Errorf("%w: else in a set", errUnsupported)
			}
			tr := newTranslator(p, known)
			er, err := tr.rule(t.set, e)
			if err != nil {
				return nil, err
			}
			r.elses = append(r.elses, er)
			prev = er
		}
		_ = prev
		p.nRules++
	}
	for _, rs := range p.sets {
		rs.index = buildIndex(rs.rules)
		for _, r := range rs.rules {
			r.guards = nil // only the index needed them
		}
		if len(rs.rules) > 0 {
			rs.rules = slices.Clip(rs.rules)
		}
	}
	p.refs, p.callees = nil, nil
	p.query = p.byPath[query]
	if p.query == nil || p.query.kind != kindSet {
		return nil, fmt.Errorf("%w: no decision query", errUnsupported)
	}
	p.numberHeaderRules()
	p.tuple = compileTuple(p.query)
	for _, rs := range p.sets {
		if rs == p.query {
			continue
		}
		if rs.comp = compileSet(rs); rs.comp != nil {
			continue
		}
		for _, r := range rs.rules {
			if r.memoSlot == 0 {
				if _, tests, _ := compileBody(r); len(tests) > 0 {
					r.pre = tests
				}
			}
		}
	}
	return p, nil
}

func sortedModuleNames(mods map[string]*ast.Module) []string {
	names := make([]string, 0, len(mods))
	for n := range mods {
		names = append(names, n)
	}
	// deterministic order; sort.Strings without importing sort twice
	for i := 1; i < len(names); i++ {
		for j := i; j > 0 && names[j] < names[j-1]; j-- {
			names[j], names[j-1] = names[j-1], names[j]
		}
	}
	return names
}

type translator struct {
	p     *program
	vars  map[ast.Var]int
	known *knownInput

	// Folding, in body order: variables with a constant value, variables
	// bound to an object of the input that holds per-object fields, and
	// variables bound so far.
	consts  map[ast.Var]ast.Value
	aliases map[ast.Var]ast.Ref
	bound   ast.VarSet
	fails   bool // a folded expression can never succeed

	// For the index: function arguments, and variables bound to a path
	// in the input or in an argument.
	argVars map[ast.Var]int
	paths   map[ast.Var]guardPath
}

func newTranslator(p *program, known *knownInput) *translator {
	return &translator{p: p, vars: map[ast.Var]int{}, known: known,
		consts: map[ast.Var]ast.Value{}, aliases: map[ast.Var]ast.Ref{}, bound: ast.NewVarSet(),
		argVars: map[ast.Var]int{}, paths: map[ast.Var]guardPath{}}
}

// failExpr is a body that never succeeds.
var failExpr = expr{kind: exTerm, terms: []term{{kind: tConst, c: ast.Boolean(false)}}}

func (tr *translator) slot(v ast.Var) int {
	if s, ok := tr.vars[v]; ok {
		return s
	}
	s := len(tr.vars)
	tr.vars[v] = s
	return s
}

func (tr *translator) rule(rs *ruleSet, r *ast.Rule) (*rule, error) {
	out := &rule{set: rs, body: make([]expr, 0, len(r.Body))}
	if len(r.Head.Args) > 0 {
		out.args = make([]term, 0, len(r.Head.Args))
	}
	for i, a := range r.Head.Args {
		t, err := tr.term(a)
		if err != nil {
			return nil, err
		}
		out.args = append(out.args, t)
		ast.WalkVars(a, func(v ast.Var) bool { tr.bound.Add(v); return false })
		if v, ok := a.Value.(ast.Var); ok {
			tr.argVars[v] = i
		}
	}
	for _, e := range r.Body {
		x, keep, err := tr.foldExpr(e)
		if err != nil {
			return nil, err
		}
		if tr.fails {
			out.body = []expr{failExpr}
			break
		}
		if keep {
			out.body = append(out.body, x)
			if g, ok := tr.guard(e, &x); ok && len(r.Head.Reference) <= 1 {
				out.guards = append(out.guards, g)
			}
		}
		tr.notePath(e)
		if !e.Negated {
			ast.WalkVars(e, func(v ast.Var) bool { tr.bound.Add(v); return false })
		}
	}
	h := r.Head.Value
	if rs.kind == kindSet {
		h = r.Head.Key
	}
	if h == nil {
		return nil, fmt.Errorf("%w: rule without value at %s", errUnsupported, rs.path)
	}
	t, err := tr.term(h)
	if err != nil {
		return nil, err
	}
	out.head = t
	out.nslots = len(tr.vars)
	return out, nil
}

func (tr *translator) expr(e *ast.Expr) (expr, error) {
	var x expr
	if len(e.With) > 0 {
		return x, fmt.Errorf("%w: with", errUnsupported)
	}
	x.negated = e.Negated
	switch ts := e.Terms.(type) {
	case *ast.Term:
		t, err := tr.term(ts)
		if err != nil {
			return x, err
		}
		x.kind, x.terms = exTerm, []term{t}
		tr.noteDefined(&x)
		return x, nil
	case []*ast.Term:
		op, ok := ts[0].Value.(ast.Ref)
		if !ok {
			return x, fmt.Errorf("%w: call of %v", errUnsupported, ts[0])
		}
		args := ts[1:]
		name := op.String()
		switch {
		case name == ast.Equality.Name || name == ast.Assign.Name:
			if len(args) != 2 {
				return x, fmt.Errorf("%w: %s arity", errUnsupported, name)
			}
			x.kind = exEq
		case op[0].Equal(ast.DefaultRootDocument):
			rs := tr.p.byPath[name]
			if rs == nil || rs.kind != kindFunc {
				return x, fmt.Errorf("%w: call of %s", errUnsupported, name)
			}
			switch len(args) {
			case rs.arity:
			case rs.arity + 1:
				x.out = true
			default:
				return x, fmt.Errorf("%w: arity of %s", errUnsupported, name)
			}
			x.kind, x.callee = exFunc, tr.p.callee(name, func() *callee { return &callee{set: rs} })
		default:
			bi, f, ok := usableBuiltin(name)
			if !ok {
				return x, fmt.Errorf("%w: built-in %s", errUnsupported, name)
			}
			n := bi.Decl.Arity()
			switch len(args) {
			case n:
			case n + 1:
				x.out = true
			default:
				return x, fmt.Errorf("%w: arity of %s", errUnsupported, name)
			}
			x.kind, x.callee = exBuiltin, tr.p.callee(name, func() *callee { return &callee{bi: bi, fn: f, native: natives[name]} })
		}
		x.terms = make([]term, 0, len(args))
		for _, a := range args {
			t, err := tr.term(a)
			if err != nil {
				return x, err
			}
			x.terms = append(x.terms, t)
		}
		tr.noteDefined(&x)
		return x, nil
	default:
		return x, fmt.Errorf("%w: expression %T", errUnsupported, e.Terms)
	}
}

// noteDefined records the references of a negated expression that may be
// undefined, when the policy needs it (program.strictNeg).
func (tr *translator) noteDefined(x *expr) {
	if !x.negated || !tr.p.strictNeg {
		return
	}
	var walk func(t *term)
	walk = func(t *term) {
		switch t.kind {
		case tRef:
			if !alwaysDefined(t.ref) {
				x.defined = append(x.defined, t.ref)
			}
			for i := range t.ref.path {
				walk(&t.ref.path[i])
			}
		case tArray, tObject, tSet:
			for i := range t.elems {
				walk(&t.elems[i])
			}
		}
	}
	for i := range x.terms {
		walk(&x.terms[i])
	}
}

// alwaysDefined: a reference to input or to one of the per-object fields
// (or an object holding them), defined for every object.
func alwaysDefined(r *refTerm) bool {
	if r.head != headInput || len(r.path) > 2 {
		return false
	}
	var segs [2]string
	for i := range r.path {
		s, ok := r.path[i].c.(ast.String)
		if r.path[i].kind != tConst || !ok {
			return false
		}
		segs[i] = string(s)
	}
	switch len(r.path) {
	case 0:
		return true
	case 1:
		return segs[0] == "resource" || segs[0] == "request" || segs[0] == "source"
	}
	switch segs[0] {
	case "resource":
		return segs[1] == "key" || segs[1] == "arn" || segs[1] == "prefix"
	case "request":
		return segs[1] == "headers"
	case "source":
		return segs[1] == "ip"
	}
	return false
}

func (tr *translator) term(t *ast.Term) (term, error) {
	switch v := t.Value.(type) {
	case ast.Null, ast.Boolean, ast.Number, ast.String:
		return term{kind: tConst, c: v}, nil
	case ast.Var:
		if c, ok := tr.consts[v]; ok {
			return term{kind: tConst, c: c}, nil
		}
		if v.Equal(ast.InputRootDocument.Value) {
			return term{kind: tRef, ref: &refTerm{head: headInput}}, nil
		}
		if v.Equal(ast.DefaultRootDocument.Value) {
			return term{}, fmt.Errorf("%w: data", errUnsupported)
		}
		return term{kind: tVar, slot: int32(tr.slot(v))}, nil
	case ast.Ref:
		return tr.ref(v)
	case *ast.Array:
		return tr.collection(t, tArray, v.Len(), v.Foreach)
	case ast.Set:
		return tr.collection(t, tSet, v.Len(), v.Foreach)
	case ast.Object:
		out := term{kind: tObject, elems: make([]term, 0, 2*v.Len())}
		var err error
		v.Foreach(func(k, e *ast.Term) {
			if err != nil {
				return
			}
			var kt, vt term
			if kt, err = tr.term(k); err != nil {
				return
			}
			if vt, err = tr.term(e); err != nil {
				return
			}
			out.elems = append(out.elems, kt, vt)
		})
		if err != nil {
			return term{}, err
		}
		return tr.fold(t, out), nil
	default:
		return term{}, fmt.Errorf("%w: term %T", errUnsupported, t.Value)
	}
}

// fold turns a composite literal without variables or references into a
// constant.
// collection translates an array or a set: its n elements, in foreach's
// order.
func (tr *translator) collection(t *ast.Term, kind termKind, n int, foreach func(func(*ast.Term))) (term, error) {
	out := term{kind: kind, elems: make([]term, 0, n)}
	var err error
	foreach(func(e *ast.Term) {
		if err != nil {
			return
		}
		var x term
		x, err = tr.term(e)
		out.elems = append(out.elems, x)
	})
	if err != nil {
		return term{}, err
	}
	return tr.fold(t, out), nil
}

func (tr *translator) fold(t *ast.Term, x term) term {
	terms := make([]*ast.Term, len(x.elems))
	for i := range x.elems {
		if x.elems[i].kind != tConst {
			return x
		}
		terms[i] = ast.NewTerm(x.elems[i].c)
	}
	// The value of the constant elements (a variable among them may have
	// been folded: t itself still names it).
	switch x.kind {
	case tArray:
		return term{kind: tConst, c: ast.NewArray(terms...)}
	case tSet:
		return term{kind: tConst, c: ast.NewSet(terms...)}
	case tObject:
		obj := ast.NewObject()
		for i := 0; i < len(terms); i += 2 {
			if prev := obj.Get(terms[i]); prev != nil {
				if !prev.Equal(terms[i+1]) {
					return x // conflicting keys: the evaluation falls back
				}
				continue
			}
			obj.Insert(terms[i], terms[i+1])
		}
		return term{kind: tConst, c: obj}
	}
	_ = t
	return x
}

func (tr *translator) ref(r ast.Ref) (term, error) {
	if c, ok := tr.knownRef(r); ok {
		return term{kind: tConst, c: c}, nil
	}
	out := &refTerm{}
	var rest ast.Ref
	switch {
	case r[0].Equal(ast.InputRootDocument):
		out.head, rest = headInput, r[1:]
	case r[0].Equal(ast.DefaultRootDocument):
		// The longest ground prefix naming a rule set of the residual.
		n := len(r.GroundPrefix())
		for k := n; k >= 2; k-- {
			if rs := tr.p.byPath[r[:k].String()]; rs != nil {
				if rs.kind == kindFunc {
					return term{}, fmt.Errorf("%w: function %s referenced", errUnsupported, rs.path)
				}
				out.head, out.set, rest = headRule, rs, r[k:]
				break
			}
		}
		if out.set == nil {
			return term{}, fmt.Errorf("%w: reference %v", errUnsupported, r)
		}
	default:
		v, ok := r[0].Value.(ast.Var)
		if !ok {
			return term{}, fmt.Errorf("%w: reference head %v", errUnsupported, r[0])
		}
		if c, ok := tr.consts[v]; ok {
			out.head, out.c, rest = headConst, c, r[1:]
		} else {
			out.head, out.slot, rest = headVar, tr.slot(v), r[1:]
		}
	}
	interned := ""
	if out.head == headInput && rest.IsGround() {
		interned = r.String()
		if x := tr.p.refs[interned]; x != nil {
			return term{kind: tRef, ref: x}, nil
		}
	}
	if len(rest) > 0 {
		out.path = make([]term, 0, len(rest))
	}
	for _, p := range rest {
		t, err := tr.term(p)
		if err != nil {
			return term{}, err
		}
		out.path = append(out.path, t)
	}
	if interned != "" {
		tr.p.refs[interned] = out
	}
	return term{kind: tRef, ref: out}, nil
}

// inputPath is the input reference r stands for: r itself, or r on a
// variable bound to an object of the input.
func (tr *translator) inputPath(r ast.Ref) (ast.Ref, bool) {
	if r[0].Equal(ast.InputRootDocument) {
		return r, true
	}
	if v, ok := r[0].Value.(ast.Var); ok {
		if base, ok := tr.aliases[v]; ok {
			return base.Concat(r[1:]), true
		}
	}
	return nil, false
}

// knownRef is the constant value of a reference into the scope's known
// input (nothing per-object on its path).
func (tr *translator) knownRef(r ast.Ref) (ast.Value, bool) {
	if tr.known == nil {
		return nil, false
	}
	full, ok := tr.inputPath(r)
	if !ok || len(full) < 2 || inputRefDepends(full) {
		return nil, false
	}
	v, err := tr.known.root.Find(full[1:])
	if err != nil {
		return nil, false // undefined: left to the evaluation
	}
	return v, true
}

// foldExpr translates e, evaluating it now if its operands are constants:
// keep is false for an expression folded away (recorded in tr.consts, or
// always true), and tr.fails is set for one that can never succeed.
func (tr *translator) foldExpr(e *ast.Expr) (expr, bool, error) {
	// x = input / input.resource / input.request: an alias, evaluated
	// lazily at run time, that lets later reads of known fields fold.
	if !e.Negated && e.IsEquality() && tr.known != nil {
		ts := e.Terms.([]*ast.Term)
		for i := 1; i <= 2; i++ {
			v, isVar := ts[i].Value.(ast.Var)
			other := ts[3-i]
			if !isVar || tr.bound.Contains(v) {
				continue
			}
			if r, ok := other.Value.(ast.Ref); ok {
				if full, ok := tr.inputPath(r); ok && full.IsGround() {
					tr.aliases[v] = full
				}
			} else if other.Value.Compare(ast.InputRootDocument.Value) == 0 {
				tr.aliases[v] = ast.InputRootRef
			}
		}
	}
	x, err := tr.expr(e)
	if err != nil {
		return x, true, err
	}
	if tr.known == nil {
		return x, true, nil
	}
	succeeds, decided := tr.evalConst(e, &x)
	if !decided {
		return x, true, nil
	}
	if succeeds == e.Negated {
		tr.fails = true
	}
	return x, false, nil
}

// evalConst evaluates an expression whose operands are all constants.
// decided is false when it cannot be evaluated now.
func (tr *translator) evalConst(e *ast.Expr, x *expr) (succeeds, decided bool) {
	consts := func(ts []term) bool {
		for i := range ts {
			if ts[i].kind != tConst {
				return false
			}
		}
		return true
	}
	switch x.kind {
	case exTerm:
		if x.terms[0].kind != tConst {
			return false, false
		}
		return !isFalse(x.terms[0].c), true
	case exEq:
		a, b := x.terms[0], x.terms[1]
		if a.kind == tConst && b.kind == tConst {
			return ast.ValueEqual(a.c, b.c), true
		}
		if e.Negated {
			return false, false
		}
		// var = constant, the variable's first occurrence: a constant.
		ts := e.Terms.([]*ast.Term)
		for i, t := range []term{a, b} {
			other := []term{b, a}[i]
			v, ok := ts[i+1].Value.(ast.Var)
			if t.kind == tVar && ok && !tr.bound.Contains(v) && other.kind == tConst {
				tr.consts[v] = other.c
				return true, true
			}
		}
		return false, false
	case exBuiltin:
		n := len(x.terms)
		if x.out {
			n--
		}
		if !consts(x.terms[:n]) || x.bi.Relation {
			return false, false
		}
		if x.out {
			// The output must be a new variable, or a constant.
			out := e.Operands()[n]
			if x.terms[n].kind != tConst {
				v, ok := out.Value.(ast.Var)
				if !ok || tr.bound.Contains(v) || e.Negated {
					return false, false
				}
			}
		}
		ops := make([]*ast.Term, n)
		for i := range ops {
			ops[i] = ast.NewTerm(x.terms[i].c)
		}
		var outs []ast.Value
		err := x.fn(topdown.BuiltinContext{Context: context.Background()}, ops, func(t *ast.Term) error {
			outs = append(outs, t.Value)
			return nil
		})
		if err != nil && isHalt(err) || len(outs) > 1 {
			return false, false
		}
		if len(outs) == 0 {
			return false, true // a built-in error: undefined
		}
		if !x.out {
			return !isFalse(outs[0]), true
		}
		if x.terms[n].kind == tConst {
			return ast.ValueEqual(x.terms[n].c, outs[0]), true
		}
		tr.consts[e.Operands()[n].Value.(ast.Var)] = outs[0]
		return true, true
	}
	return false, false
}

// pathOf is the path in the input or in a function argument that t reads.
func (tr *translator) pathOf(t *ast.Term) (guardPath, bool) {
	switch v := t.Value.(type) {
	case ast.Var:
		if i, ok := tr.argVars[v]; ok {
			return newGuardPath(i, nil), true
		}
		p, ok := tr.paths[v]
		return p, ok
	case ast.Ref:
		var base guardPath
		switch h := v[0].Value.(type) {
		case ast.Var:
			if v[0].Equal(ast.InputRootDocument) {
				base = newGuardPath(-1, nil)
			} else if b, ok := tr.pathOf(ast.NewTerm(h)); ok {
				base = b
			} else {
				return guardPath{}, false
			}
		default:
			return guardPath{}, false
		}
		path := append([]ast.Value(nil), base.path...)
		for _, p := range v[1:] {
			if !ast.IsConstant(p.Value) {
				return guardPath{}, false
			}
			path = append(path, p.Value)
		}
		return newGuardPath(base.arg, path), true
	}
	return guardPath{}, false
}

// notePath records a variable bound to a path: x = input.resource.key.
func (tr *translator) notePath(e *ast.Expr) {
	if e.Negated || !e.IsEquality() {
		return
	}
	ts := e.Terms.([]*ast.Term)
	for i := 1; i <= 2; i++ {
		v, ok := ts[i].Value.(ast.Var)
		if !ok || tr.bound.Contains(v) {
			continue
		}
		if p, ok := tr.pathOf(ts[3-i]); ok {
			tr.paths[v] = p
		}
	}
}

// guard is the index test e makes, if any: startswith(P, "lit") or P == c,
// e kept in the body, not negated.
func (tr *translator) guard(e *ast.Expr, x *expr) (guard, bool) {
	if e.Negated || x.out {
		return guard{}, false
	}
	ops := e.Operands()
	switch {
	case x.kind == exBuiltin && x.bi.Name == ast.StartsWith.Name:
		lit, ok := x.terms[1].c.(ast.String)
		if x.terms[1].kind != tConst || !ok {
			return guard{}, false
		}
		if p, ok := tr.pathOf(ops[0]); ok {
			return guard{path: p, kind: guardPrefix, lit: string(lit)}, true
		}
	case x.kind == exEq || x.kind == exBuiltin && x.bi.Name == ast.Equal.Name:
		for i := range 2 {
			if x.terms[1-i].kind != tConst {
				continue
			}
			if v, isVar := ops[i].Value.(ast.Var); isVar && !tr.bound.Contains(v) {
				continue // a binding, not a test
			}
			if p, ok := tr.pathOf(ops[i]); ok {
				return guard{path: p, kind: guardEqual, val: x.terms[1-i].c}, true
			}
		}
	}
	return guard{}, false
}

func (p *program) callee(name string, mk func() *callee) *callee {
	c := p.callees[name]
	if c == nil {
		c = mk()
		p.callees[name] = c
	}
	return c
}
