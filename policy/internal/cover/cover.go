// Package cover over-approximates, from partial evaluation's output, the
// values of one input field for which a policy query can succeed: the key
// prefixes a principal's allows can reach (docs/design.md, "Scope
// compiler").
//
// The analysis reads the residual queries and their support rules as
// logic: a body is the intersection of what its expressions allow, a rule
// the union of its definitions, a query the union of its bodies. Only a
// few forms constrain the field: startswith(field, "lit"), field ==
// "lit", startswith(input.resource.arn, "arn:aws:s3:::bucket/lit"), a
// rule or function reference holding those, count(set) > 0, and
// count(set) == 0 over rules of the form `not A` plus expressions that
// always succeed (a deny that must not fire). Every other expression
// allows all values, so the result is always an over-approximation: a
// value for which the query succeeds is in it. Expressions whose operands
// are all known are evaluated; known-false ones drop their body.
package cover

import (
	"context"
	"fmt"
	"strings"

	"github.com/open-policy-agent/opa/v1/ast"
	"github.com/open-policy-agent/opa/v1/rego"
	"github.com/open-policy-agent/opa/v1/topdown"
)

// Options says what the analysis is about.
type Options struct {
	// Field is the input field whose values are computed, a string in
	// every input (input.resource.key, or a list's input.resource.prefix);
	// nil: none, and the result is All or empty (can the query succeed at
	// all?).
	Field ast.Ref
	// Known is the input without its unknown fields: references into it
	// are evaluated.
	Known ast.Object
	// Unknowns are the references partial evaluation left unknown.
	Unknowns []ast.Ref
	// Defined are unknown references defined in every input (for the
	// expressions that must always succeed): input.resource.arn, say.
	Defined []ast.Ref
	// ARN, if set, is the prefix input.resource.arn has before the field:
	// "arn:aws:s3:::bucket/" for an object's key.
	ARN string
	// Exact makes every expression the analysis does not read lossy, not
	// only those on the field: a condition on the request, the source, a
	// version, or anything else left unknown is then a reason the result
	// is not exactly the field's values the policy allows (what a session
	// policy, which carries no such condition, may grant).
	Exact bool
	// Never are values some unknown references never take in the inputs
	// the analysis is about (a scope's S3 requests never have a mint's
	// operation): an equality of one with such a value cannot succeed, so
	// what a policy allows only under it is left out.
	Never []Never
}

// Never is the values Ref never takes.
type Never struct {
	Ref    ast.Ref
	Values []ast.Value
}

// Why says why an analysis's set is not exactly the field's values the
// policy allows; both empty when it is.
type Why struct {
	// Key names the first expression on the field the analysis could not
	// read (a regex, an exclusion, a prefix taken from a header): the set
	// may be wider than the policy on the field.
	Key string
	// Cond names, with Options.Exact, the first other condition the
	// analysis read as allowing every value (on headers, the source, a
	// version): the set is the field's values, but the policy allows them
	// only under that condition.
	Cond string
}

// String is the first reason, or "".
func (w Why) String() string {
	if w.Key != "" {
		return w.Key
	}
	return w.Cond
}

// Analyze returns a superset of the values of o.Field for which one of
// pqs's queries succeeds, and why it may not be exactly those values
// (see Why; without Options.Exact, conditions on other fields are
// dropped silently). It fails only when ctx ends.
func Analyze(ctx context.Context, pqs *rego.PartialQueries, o Options) (Set, Why, error) {
	a := &analyzer{ctx: ctx, o: o, rules: map[string][]*ast.Rule{}, memo: map[string]memoed{}, mentions: map[string]bool{}}
	for _, m := range pqs.Support {
		pkg := m.Package.Path.String()
		for _, r := range m.Rules {
			k := pkg + "." + r.Head.Ref().GroundPrefix().String()
			a.rules[k] = append(a.rules[k], r)
		}
	}
	var out Set
	for _, q := range pqs.Queries {
		out = out.Union(a.body(q, nil))
		if err := ctx.Err(); err != nil {
			return Set{}, Why{}, err
		}
	}
	return out, a.lossy, nil
}

func truncate(s string) string {
	if len(s) > 300 {
		return s[:300] + "..."
	}
	return s
}

type analyzer struct {
	// lossy is the first expression that involves the field and that the
	// analysis read as allowing every value: the result is then wider than
	// the policy's allows on the field.
	lossy    Why
	mentions map[string]bool // support rules whose bodies involve the field
	ctx      context.Context
	o        Options
	rules    map[string][]*ast.Rule // support rules by path
	memo     map[string]memoed      // truthy rule references without arguments
	depth    int
}

const maxDepth = 64

// memoed is a rule reference's result and why it is lossy: a later use
// of the memo is as lossy as the first.
type memoed struct {
	set   Set
	lossy Why
}

// merge fills w's empty reasons from o.
func (w *Why) merge(o Why) {
	if w.Key == "" {
		w.Key = o.Key
	}
	if w.Cond == "" {
		w.Cond = o.Cond
	}
}

// env holds a body's variable bindings: var = term expressions, and the
// outputs of calls (count(x, v) binds v to count(x)).
type env map[ast.Var]*ast.Term

// opaque stands for a value the analysis knows nothing about.
var opaque = ast.VarTerm("__cover_opaque__")

// bindings collects the body's bindings of variables, on top of outer.
func bindings(b ast.Body, outer env) env {
	e := env{}
	for k, v := range outer {
		e[k] = v
	}
	for _, x := range b {
		if x.Negated || len(x.With) > 0 {
			continue
		}
		ts, ok := x.Terms.([]*ast.Term)
		if !ok || len(ts) < 2 {
			continue
		}
		op := ts[0].Value.(ast.Ref).String()
		if (op == "eq" || op == "assign") && len(ts) == 3 {
			for i := 1; i <= 2; i++ {
				v, ok := ts[i].Value.(ast.Var)
				if ok && e[v] == nil && !termHasVar(ts[3-i], v) {
					e[v] = ts[3-i]
					break
				}
			}
			continue
		}
		// A call with its output: the last operand, one more than the
		// built-in's arity.
		if bi, ok := ast.BuiltinMap[op]; ok && len(ts)-1 == bi.Decl.Arity()+1 {
			if v, ok := ts[len(ts)-1].Value.(ast.Var); ok && e[v] == nil {
				e[v] = ast.CallTerm(ts[:len(ts)-1]...)
			}
		}
	}
	return e
}

func termHasVar(t *ast.Term, v ast.Var) bool {
	found := false
	ast.WalkVars(t, func(x ast.Var) bool {
		if x.Equal(v) {
			found = true
		}
		return found
	})
	return found
}

// body is the intersection of what its expressions allow.
func (a *analyzer) body(b ast.Body, outer env) Set {
	e := bindings(b, outer)
	s := All()
	lossy := a.lossy
	for _, x := range b {
		s = s.Intersect(a.expr(x, e))
		if s.Empty() || a.ctx.Err() != nil {
			a.lossy = lossy // a body that never succeeds loses nothing
			return Set{}
		}
	}
	return s
}

// lose records why the result is wider than the policy, and allows every
// value.
func (a *analyzer) lose(why string) Set {
	if a.lossy.Key == "" {
		a.lossy.Key = why
	}
	return All()
}

// lost is what an expression the analysis does not read allows: every
// value, and when it involves the field, the result is lossy.
func (a *analyzer) lost(x *ast.Expr, e env) Set {
	switch {
	case a.involves(x, e):
		if a.lossy.Key == "" {
			a.lossy.Key = fmt.Sprintf("the expression %s on %v is not a prefix or equality test", truncate(x.String()), a.o.Field)
		}
	case a.o.Exact && a.lossy.Cond == "":
		a.lossy.Cond = fmt.Sprintf("the condition %s is not on the key, and a session policy cannot carry it", truncate(x.String()))
	}
	return All()
}

// lostBody is lost for a rule body whose failure the analysis cannot read.
func (a *analyzer) lostBody(b ast.Body, e env) Set {
	for _, x := range b {
		if a.involves(x, e) {
			return a.lose(fmt.Sprintf("the rule body %s on %v is not a negated prefix test", truncate(b.String()), a.o.Field))
		}
	}
	if a.o.Exact && a.lossy.Cond == "" {
		a.lossy.Cond = fmt.Sprintf("the denial %s is not a condition on the key, and a session policy cannot carry it", truncate(b.String()))
	}
	return All()
}

// involves reports whether x may read the field: a reference to it, to an
// object holding it (input, input.resource), to its ARN, through a
// variable bound to one, or through a support rule that does.
func (a *analyzer) involves(x *ast.Expr, e env) bool {
	if a.o.Field == nil {
		return false
	}
	found := false
	seen := map[ast.Var]bool{}
	var visit func(v any)
	visit = func(v any) {
		ast.WalkTerms(v, func(t *ast.Term) bool {
			if found {
				return true
			}
			switch x := t.Value.(type) {
			case ast.Var:
				if b := e[x]; b != nil && !seen[x] {
					seen[x] = true
					visit(b)
				}
			case ast.Ref:
				switch {
				case x[0].Equal(ast.InputRootDocument):
					g := x.GroundPrefix()
					if a.o.Field.HasPrefix(g) || g.HasPrefix(a.o.Field) || arnRef.HasPrefix(g) || g.HasPrefix(arnRef) {
						found = true
					}
				case x[0].Equal(ast.DefaultRootDocument):
					if key, ok := a.ruleOf(x); ok && a.ruleInvolves(key) {
						found = true
					}
				default:
					if v, ok := x[0].Value.(ast.Var); ok {
						if b := e[v]; b != nil && !seen[v] {
							seen[v] = true
							visit(b)
						}
					}
				}
			}
			return found
		})
	}
	visit(x)
	return found
}

// ruleInvolves: some definition of the rule involves the field (function
// arguments count as involving it: a call may pass input.resource).
func (a *analyzer) ruleInvolves(key string) bool {
	if v, ok := a.mentions[key]; ok {
		return v
	}
	a.mentions[key] = true // cycles (none in Rego): assume the worst
	out := false
	for _, r := range a.rules[key] {
		if len(r.Head.Args) > 0 {
			out = true
			break
		}
		e := bindings(r.Body, nil)
		for _, x := range r.Body {
			if a.involves(x, e) {
				out = true
				break
			}
		}
		if out {
			break
		}
	}
	a.mentions[key] = out
	return out
}

// kind of a resolved term.
type kind uint8

const (
	kOpaque kind = iota
	kConst       // v.c
	kUndefined
	kField // the field
	kARN   // input.resource.arn
	kRule  // v.ref: a reference to a support rule
	kCount // count(v.ref)
)

type value struct {
	kind kind
	c    ast.Value
	ref  ast.Ref
}

// resolve substitutes bindings and known input into t.
func (a *analyzer) resolve(t *ast.Term, e env, depth int) value {
	if depth > maxDepth {
		return value{}
	}
	switch v := t.Value.(type) {
	case ast.Var:
		if b := e[v]; b != nil && b != t {
			return a.resolve(b, e, depth+1)
		}
		return value{}
	case ast.Ref:
		return a.resolveRef(v, e, depth)
	case ast.Call:
		op := v[0].Value.(ast.Ref).String()
		if op == "count" && len(v) == 2 {
			if r := a.resolve(v[1], e, depth+1); r.kind == kRule {
				return value{kind: kCount, ref: r.ref}
			}
		}
		if op == "object.get" && len(v) == 4 {
			// object.get(input.resource, "arn", d): the field itself when
			// the object is a reference (known or not).
			if base, ok := a.refOf(v[1], e); ok {
				if k := a.resolve(v[2], e, depth+1); k.kind == kConst && ast.IsScalar(k.c) {
					switch r := a.resolveRef(base.Append(ast.NewTerm(k.c)), e, depth+1); r.kind {
					case kUndefined:
						return a.resolve(v[3], e, depth+1)
					case kOpaque:
					default:
						return r
					}
				}
			}
		}
		args := make([]ast.Value, 0, len(v)-1)
		for _, x := range v[1:] {
			r := a.resolve(x, e, depth+1)
			switch r.kind {
			case kConst:
				args = append(args, r.c)
			case kUndefined:
				return value{kind: kUndefined}
			default:
				return value{}
			}
		}
		out, ok := a.call(op, args)
		if !ok {
			return value{}
		}
		if out == nil {
			return value{kind: kUndefined}
		}
		return value{kind: kConst, c: out}
	}
	if ast.IsConstant(t.Value) {
		return value{kind: kConst, c: t.Value}
	}
	// A composite with variables or references: constant if they all are.
	c, ok := a.constComposite(t.Value, e, depth)
	if !ok {
		return value{}
	}
	return value{kind: kConst, c: c}
}

// constComposite is an array, set or object whose elements all resolve to
// constants, as a constant.
func (a *analyzer) constComposite(x ast.Value, e env, depth int) (ast.Value, bool) {
	elem := func(t *ast.Term) (*ast.Term, bool) {
		r := a.resolve(t, e, depth+1)
		if r.kind != kConst {
			return nil, false
		}
		return ast.NewTerm(r.c), true
	}
	ok := true
	switch v := x.(type) {
	case *ast.Array:
		out := make([]*ast.Term, 0, v.Len())
		v.Foreach(func(t *ast.Term) {
			if c, good := elem(t); good && ok {
				out = append(out, c)
			} else {
				ok = false
			}
		})
		return ast.NewArray(out...), ok
	case ast.Set:
		out := ast.NewSet()
		v.Foreach(func(t *ast.Term) {
			if c, good := elem(t); good && ok {
				out.Add(c)
			} else {
				ok = false
			}
		})
		return out, ok
	case ast.Object:
		out := ast.NewObject()
		v.Foreach(func(k, t *ast.Term) {
			kc, good1 := elem(k)
			vc, good2 := elem(t)
			if good1 && good2 && ok {
				out.Insert(kc, vc)
			} else {
				ok = false
			}
		})
		return out, ok
	}
	return nil, false
}

func (a *analyzer) resolveRef(r ast.Ref, e env, depth int) value {
	head := r[0]
	switch {
	case head.Equal(ast.InputRootDocument):
	case head.Equal(ast.DefaultRootDocument):
		if _, ok := a.ruleOf(r); ok {
			return value{kind: kRule, ref: r}
		}
		return value{}
	default:
		v, ok := head.Value.(ast.Var)
		if !ok || e[v] == nil {
			return value{}
		}
		b := e[v]
		switch bv := b.Value.(type) {
		case ast.Ref:
			return a.resolveRef(bv.Concat(r[1:]), e, depth+1)
		case ast.Var:
			return a.resolveRef(append(ast.Ref{b}, r[1:]...), e, depth+1)
		}
		base := a.resolve(b, e, depth+1)
		if base.kind != kConst {
			return value{}
		}
		return a.index(base.c, r[1:], e, depth)
	}
	// input...: ground parts resolved.
	path := make(ast.Ref, len(r))
	path[0] = head
	for i, p := range r[1:] {
		if ast.IsConstant(p.Value) {
			path[i+1] = p
			continue
		}
		x := a.resolve(p, e, depth+1)
		if x.kind != kConst {
			return value{}
		}
		path[i+1] = ast.NewTerm(x.c)
	}
	if a.o.Field != nil && path.Equal(a.o.Field) {
		return value{kind: kField}
	}
	if a.o.ARN != "" && path.Equal(arnRef) {
		return value{kind: kARN}
	}
	for _, u := range a.o.Unknowns {
		if path.HasPrefix(u) || u.HasPrefix(path) {
			return value{}
		}
	}
	x, err := a.o.Known.Find(path[1:])
	if err != nil {
		return value{kind: kUndefined}
	}
	return value{kind: kConst, c: x}
}

var arnRef = ast.MustParseRef("input.resource.arn")

// refOf is the input reference t stands for (input, input.resource, or a
// variable bound to one).
func (a *analyzer) refOf(t *ast.Term, e env) (ast.Ref, bool) {
	for range maxDepth {
		switch v := t.Value.(type) {
		case ast.Var:
			if v.Equal(ast.InputRootDocument.Value) {
				return ast.InputRootRef, true
			}
			if e[v] == nil {
				return nil, false
			}
			t = e[v]
		case ast.Ref:
			if v[0].Equal(ast.InputRootDocument) && v.IsGround() {
				return v, true
			}
			return nil, false
		default:
			return nil, false
		}
	}
	return nil, false
}

func (a *analyzer) index(c ast.Value, rest ast.Ref, e env, depth int) value {
	for _, p := range rest {
		k := a.resolve(p, e, depth+1)
		if k.kind != kConst {
			return value{}
		}
		var err error
		if c, err = c.Find(ast.Ref{ast.NewTerm(k.c)}); err != nil {
			return value{kind: kUndefined}
		}
	}
	return value{kind: kConst, c: c}
}

// ruleOf finds the support rules a reference names (its longest prefix
// that is a rule path).
func (a *analyzer) ruleOf(r ast.Ref) (string, bool) {
	g := r.GroundPrefix()
	for k := len(g); k >= 2; k-- {
		key := g[:k].String()
		if _, ok := a.rules[key]; ok {
			return key, true
		}
	}
	return "", false
}

// call evaluates a deterministic built-in on constants: ok false when it
// cannot, out nil when it is undefined (or fails).
func (a *analyzer) call(op string, args []ast.Value) (out ast.Value, ok bool) {
	bi, found := ast.BuiltinMap[op]
	if !found || bi.Nondeterministic || bi.Relation || len(args) != bi.Decl.Arity() {
		return nil, false
	}
	f := topdown.GetBuiltin(op)
	if f == nil {
		return nil, false
	}
	defer func() {
		if recover() != nil {
			out, ok = nil, false
		}
	}()
	ops := make([]*ast.Term, len(args))
	for i := range args {
		ops[i] = ast.NewTerm(args[i])
	}
	var outs []ast.Value
	err := f(topdown.BuiltinContext{Context: a.ctx}, ops, func(t *ast.Term) error {
		outs = append(outs, t.Value)
		return nil
	})
	if err != nil {
		if _, halt := err.(topdown.Halt); halt {
			return nil, false
		}
		return nil, true
	}
	if len(outs) != 1 {
		return nil, len(outs) == 0
	}
	return outs[0], true
}

// truthy is what a constant expression term decides: undefined and false
// fail.
func truthy(v value) (decided, ok bool) {
	switch v.kind {
	case kUndefined:
		return true, false
	case kConst:
		b, isBool := v.c.(ast.Boolean)
		return true, !isBool || bool(b)
	}
	return false, false
}

// expr is what one expression allows.
func (a *analyzer) expr(x *ast.Expr, e env) Set {
	if len(x.With) > 0 {
		return a.lost(x, e)
	}
	if x.Negated {
		// not A: fails where A certainly succeeds; the analysis knows that
		// only for constants.
		if ok, decided := a.constExpr(x, e); decided {
			return setOf(ok)
		}
		if ok, decided := a.fieldIsString(x, e); decided {
			return setOf(ok)
		}
		if t, ok := x.Terms.(*ast.Term); ok && len(x.With) == 0 {
			// not R, R a support rule that never succeeds here (its
			// over-approximation is empty): always true.
			if v := a.resolve(t, e, 0); v.kind == kRule && a.ruleTruthy(v.ref, nil).Empty() {
				return All()
			}
		}
		return a.lost(x, e)
	}
	switch ts := x.Terms.(type) {
	case *ast.Term:
		v := a.resolve(ts, e, 0)
		if v.kind == kRule {
			return a.ruleTruthy(v.ref, nil)
		}
		if d, ok := truthy(v); d {
			return setOf(ok)
		}
		return a.lost(x, e)
	case []*ast.Term:
		return a.call2(x, ts, e)
	}
	return a.lost(x, e)
}

func setOf(ok bool) Set {
	if ok {
		return All()
	}
	return Set{}
}

// call2 is what a call expression allows.
func (a *analyzer) call2(x *ast.Expr, ts []*ast.Term, e env) Set {
	opRef, _ := ts[0].Value.(ast.Ref)
	op := opRef.String()
	args := ts[1:]
	if opRef[0].Equal(ast.DefaultRootDocument) {
		if _, ok := a.ruleOf(opRef); ok {
			return a.funcCall(opRef, args, e)
		}
		return a.lost(&ast.Expr{Terms: ts}, e)
	}
	if bi, ok := ast.BuiltinMap[op]; ok && op != "eq" && op != "assign" && len(args) == bi.Decl.Arity()+1 {
		// f(a, b, true): the call's value is true, as the expression f(a, b)
		// (what `allow := count(deny) == 0` leaves).
		if out := a.resolve(args[len(args)-1], e, 0); out.kind == kConst && out.c.Compare(ast.Boolean(true)) == 0 {
			return a.call2(x, ts[:len(ts)-1], e)
		}
	}
	switch op {
	case "eq", "assign", "equal":
		if len(args) != 2 {
			return a.lost(x, e)
		}
		l, r := a.resolve(args[0], e, 0), a.resolve(args[1], e, 0)
		if r.kind != kConst && l.kind == kConst {
			l, r = r, l
		}
		if l.kind == kUndefined || r.kind == kUndefined {
			return Set{}
		}
		if r.kind != kConst {
			return a.lost(x, e)
		}
		if l.kind == kOpaque && a.never(args, r.c, e) {
			return Set{}
		}
		switch l.kind {
		case kConst:
			return setOf(ast.ValueEqual(l.c, r.c))
		case kField:
			s, isStr := r.c.(ast.String)
			if !isStr {
				return Set{} // the field is a string
			}
			return Prefixes(string(s))
		case kARN:
			s, isStr := r.c.(ast.String)
			if !isStr {
				return Set{}
			}
			return a.arn(string(s))
		case kRule:
			return a.ruleTruthy(l.ref, r.c)
		case kCount:
			if n, ok := r.c.(ast.Number); ok && n.Compare(ast.Number("0")) == 0 {
				return a.ruleEmpty(l.ref)
			}
			return a.ruleTruthy(l.ref, nil)
		}
		return a.lost(x, e)
	case "count":
		// count(S, n): n is its output.
		if len(args) == 2 {
			s, n := a.resolve(args[0], e, 0), a.resolve(args[1], e, 0)
			if s.kind == kRule && n.kind == kConst {
				if num, ok := n.c.(ast.Number); ok && num.Compare(ast.Number("0")) == 0 {
					return a.ruleEmpty(s.ref)
				}
				return a.ruleTruthy(s.ref, nil)
			}
		}
	case "gt", "neq", "gte":
		if len(args) == 2 {
			l, r := a.resolve(args[0], e, 0), a.resolve(args[1], e, 0)
			if l.kind == kCount && r.kind == kConst {
				// count(S) > 0, != 0, >= 1 (or more): S has a member.
				n, ok := r.c.(ast.Number)
				zero := ok && n.Compare(ast.Number("0")) == 0
				one := ok && n.Compare(ast.Number("1")) == 0
				if op == "gt" && ok && n.Compare(ast.Number("0")) >= 0 || op == "neq" && zero || op == "gte" && (one || ok && n.Compare(ast.Number("1")) > 0) {
					return a.ruleTruthy(l.ref, nil)
				}
			}
		}
	case "startswith":
		if len(args) == 2 {
			l, r := a.resolve(args[0], e, 0), a.resolve(args[1], e, 0)
			if s, ok := r.c.(ast.String); r.kind == kConst && ok {
				switch l.kind {
				case kField:
					return Prefixes(string(s))
				case kARN:
					return a.arnPrefix(string(s))
				}
			}
		}
	case "is_string":
		if len(args) == 1 && a.resolve(args[0], e, 0).kind == kField {
			return All() // the field is a string
		}
	}
	if ok, decided := a.constExpr(&ast.Expr{Terms: ts}, e); decided {
		return setOf(ok)
	}
	return a.lost(x, e)
}

// never reports an operand of an equality with c that is an input
// reference Options.Never says never takes c.
func (a *analyzer) never(args []*ast.Term, c ast.Value, e env) bool {
	for _, t := range args {
		ref, ok := a.refOf(t, e)
		if !ok {
			continue
		}
		for _, n := range a.o.Never {
			if !ref.Equal(n.Ref) {
				continue
			}
			for _, v := range n.Values {
				if ast.ValueEqual(v, c) {
					return true
				}
			}
		}
	}
	return false
}

// arn is the set of fields whose ARN is s.
func (a *analyzer) arn(s string) Set {
	if rest, ok := strings.CutPrefix(s, a.o.ARN); ok {
		return Prefixes(rest)
	}
	return Set{}
}

// arnPrefix is the set of fields whose ARN starts with s.
func (a *analyzer) arnPrefix(s string) Set {
	if rest, ok := strings.CutPrefix(s, a.o.ARN); ok {
		return Prefixes(rest)
	}
	if strings.HasPrefix(a.o.ARN, s) {
		return All()
	}
	return Set{}
}

// fieldIsString decides is_string(field), negated or not: the field is a
// string in every input.
func (a *analyzer) fieldIsString(x *ast.Expr, e env) (ok, decided bool) {
	ts, isCall := x.Terms.([]*ast.Term)
	if !isCall || len(ts) != 2 || len(x.With) > 0 || ts[0].Value.(ast.Ref).String() != "is_string" {
		return false, false
	}
	if a.resolve(ts[1], e, 0).kind != kField {
		return false, false
	}
	return !x.Negated, true
}

// constExpr evaluates an expression whose operands are all constants.
func (a *analyzer) constExpr(x *ast.Expr, e env) (ok, decided bool) {
	var d, res bool
	switch ts := x.Terms.(type) {
	case *ast.Term:
		d, res = truthy(a.resolve(ts, e, 0))
	case []*ast.Term:
		op := ts[0].Value.(ast.Ref).String()
		args := make([]ast.Value, 0, len(ts)-1)
		for _, t := range ts[1:] {
			v := a.resolve(t, e, 0)
			switch v.kind {
			case kConst:
				args = append(args, v.c)
			case kUndefined:
				return x.Negated, true
			default:
				return false, false
			}
		}
		switch {
		case (op == "eq" || op == "equal" || op == "assign") && len(args) == 2:
			d, res = true, ast.ValueEqual(args[0], args[1])
		default:
			bi, found := ast.BuiltinMap[op]
			if !found {
				return false, false
			}
			n := bi.Decl.Arity()
			var out ast.Value
			var can bool
			switch len(args) {
			case n:
				out, can = a.call(op, args)
				if !can {
					return false, false
				}
				d, res = truthy(value{kind: kConst, c: out})
				if out == nil {
					d, res = true, false
				}
			case n + 1:
				out, can = a.call(op, args[:n])
				if !can {
					return false, false
				}
				d, res = true, out != nil && ast.ValueEqual(out, args[n])
			default:
				return false, false
			}
		}
	}
	if !d {
		return false, false
	}
	return res != x.Negated, true
}

// ruleTruthy is what a reference to a support rule allows when it is
// truthy (want nil) or equal to want.
func (a *analyzer) ruleTruthy(r ast.Ref, want ast.Value) Set {
	key, _ := a.ruleOf(r)
	memoKey := key
	if want != nil {
		memoKey += "\x00" + want.String()
	}
	if m, ok := a.memo[memoKey]; ok {
		a.lossy.merge(m.lossy)
		return m.set
	}
	outer := a.lossy
	a.lossy = Why{}
	defer func() {
		inner := a.lossy
		a.lossy = outer
		a.lossy.merge(inner)
	}()
	if a.depth > maxDepth {
		return a.lose("rules nested too deeply")
	}
	a.depth++
	defer func() { a.depth-- }()
	var out Set
	for _, rule := range a.rules[key] {
		if len(rule.Head.Args) > 0 || rule.Else != nil {
			out = a.lose(fmt.Sprintf("rule %s has a form the analysis does not read", key))
			break
		}
		head := rule.Head.Value
		if rule.Head.Key != nil && rule.Head.Value == nil {
			head = nil // a set: membership
		}
		if head != nil && ast.IsConstant(head.Value) {
			if want != nil && !ast.ValueEqual(head.Value, want) {
				continue
			}
			if b, ok := head.Value.(ast.Boolean); want == nil && ok && !bool(b) {
				continue
			}
		}
		if rule.Default {
			out = All()
			break
		}
		out = out.Union(a.body(rule.Body, nil))
		if out.All {
			break
		}
	}
	a.memo[memoKey] = memoed{set: out, lossy: a.lossy}
	return out
}

// funcCall is what a call of a support function allows when it succeeds
// (its value truthy, or bound to an output).
func (a *analyzer) funcCall(r ast.Ref, args []*ast.Term, e env) Set {
	key, _ := a.ruleOf(r)
	if a.depth > maxDepth {
		return a.lose("rules nested too deeply")
	}
	a.depth++
	defer func() { a.depth-- }()
	var out Set
	for _, rule := range a.rules[key] {
		n := len(rule.Head.Args)
		if n == 0 || rule.Else != nil || rule.Default || (len(args) != n && len(args) != n+1) {
			return a.lose(fmt.Sprintf("function %s has a form the analysis does not read", key))
		}
		if len(args) == n {
			if b, ok := rule.Head.Value.Value.(ast.Boolean); ok && !bool(b) {
				continue
			}
		}
		fe := env{}
		for i, formal := range rule.Head.Args {
			v, ok := formal.Value.(ast.Var)
			if !ok {
				return a.lose(fmt.Sprintf("function %s has a form the analysis does not read", key))
			}
			fe[v] = a.closed(args[i], e)
		}
		out = out.Union(a.body(rule.Body, fe))
		if out.All {
			break
		}
	}
	return out
}

// closed is t with the caller's bindings substituted, or opaque if it
// still names a caller's variable.
func (a *analyzer) closed(t *ast.Term, e env) *ast.Term {
	out := t
	for range 8 {
		free := false
		out = ast.NewTerm(mustTransformVars(out.Value, func(v ast.Var) *ast.Term {
			if b := e[v]; b != nil {
				free = true
				return b
			}
			return nil
		}))
		if !free {
			break
		}
	}
	hasVar := false
	ast.WalkVars(out, func(v ast.Var) bool {
		if !v.Equal(ast.InputRootDocument.Value) && !v.Equal(ast.DefaultRootDocument.Value) {
			hasVar = true
		}
		return hasVar
	})
	if hasVar {
		return opaque
	}
	return out
}

func mustTransformVars(x ast.Value, f func(ast.Var) *ast.Term) ast.Value {
	out, err := ast.TransformVars(x, func(v ast.Var) (ast.Value, error) {
		if t := f(v); t != nil {
			return t.Value, nil
		}
		return v, nil
	})
	if v, ok := out.(ast.Value); err == nil && ok {
		return v
	}
	return opaque.Value
}

// ruleEmpty is what count(S) == 0 allows: for every definition of S, the
// values for which its body fails. That is known for a body made of one
// `not A` and expressions that always succeed (A must then hold: may(A)),
// a body that never succeeds (nothing), or one that always does (no value).
func (a *analyzer) ruleEmpty(r ast.Ref) Set {
	key, _ := a.ruleOf(r)
	if a.depth > maxDepth {
		return a.lose("rules nested too deeply")
	}
	a.depth++
	defer func() { a.depth-- }()
	out := All()
	for _, rule := range a.rules[key] {
		if len(rule.Head.Args) > 0 || rule.Else != nil || rule.Default {
			continue // no constraint from it
		}
		out = out.Intersect(a.bodyFails(rule.Body))
		if out.Empty() {
			break
		}
	}
	return out
}

func (a *analyzer) bodyFails(b ast.Body) Set {
	e := bindings(b, nil)
	var neg *ast.Expr
	for _, x := range b {
		ok, decided := a.constExpr(x, e)
		if !decided {
			ok, decided = a.fieldIsString(x, e)
		}
		if decided {
			if !ok {
				return All() // never succeeds: no constraint
			}
			continue
		}
		if x.Negated && neg == nil && len(x.With) == 0 {
			neg = x
			continue
		}
		if !a.certain(x, e) {
			return a.lostBody(b, e)
		}
	}
	if neg == nil {
		return Set{} // always succeeds: the set is never empty
	}
	pos := neg.Copy()
	pos.Negated = false
	return a.expr(pos, e)
}

// certain reports an expression that succeeds in every input: a binding
// of a fresh variable, or of a call's output, to something always
// defined, or is_string of the field.
func (a *analyzer) certain(x *ast.Expr, e env) bool {
	if x.Negated || len(x.With) > 0 {
		return false
	}
	ts, ok := x.Terms.([]*ast.Term)
	if !ok {
		return false
	}
	op := ts[0].Value.(ast.Ref).String()
	switch {
	case op == "is_string" && len(ts) == 2:
		return a.resolve(ts[1], e, 0).kind == kField
	case (op == "eq" || op == "assign") && len(ts) == 3:
		for i := 1; i <= 2; i++ {
			if v, ok := ts[i].Value.(ast.Var); ok && e[v] == ts[3-i] {
				return a.defined(ts[3-i], e, 0)
			}
		}
	case totalBuiltins[op]:
		bi := ast.BuiltinMap[op]
		n := bi.Decl.Arity()
		if len(ts)-1 != n+1 {
			return false
		}
		call := ast.CallTerm(ts[:len(ts)-1]...)
		v, ok := ts[len(ts)-1].Value.(ast.Var)
		if !ok || e[v] == nil || !e[v].Equal(call) {
			return false // not a fresh variable: a test of the output
		}
		return a.defined(call, e, 0)
	}
	return false
}

// totalBuiltins never fail on defined operands of the types checked in
// defined: sprintf on a string and an array, object.get on an object.
var totalBuiltins = map[string]bool{"sprintf": true, "object.get": true}

// defined reports a term defined in every input.
func (a *analyzer) defined(t *ast.Term, e env, depth int) bool {
	if depth > maxDepth {
		return false
	}
	switch v := t.Value.(type) {
	case ast.Var:
		if b := e[v]; b != nil {
			return a.defined(b, e, depth+1)
		}
		return false
	case ast.Ref:
		r := a.resolve(t, e, depth)
		switch r.kind {
		case kConst, kField, kARN:
			return true
		}
		if v[0].Equal(ast.InputRootDocument) && v.IsGround() {
			for _, d := range a.o.Defined {
				if v.Equal(d) {
					return true
				}
			}
		}
		return false
	case ast.Call:
		op := v[0].Value.(ast.Ref).String()
		switch {
		case op == "sprintf" && len(v) == 3:
			f := a.resolve(v[1], e, depth+1)
			if _, ok := f.c.(ast.String); f.kind != kConst || !ok {
				return false
			}
			return a.defined(v[2], e, depth+1) && isArray(v[2], a, e, depth)
		case op == "object.get" && len(v) == 4:
			return a.isObject(v[1], e, depth) && a.defined(v[2], e, depth+1) && a.defined(v[3], e, depth+1)
		}
		return a.resolve(t, e, depth).kind == kConst
	case *ast.Array:
		ok := true
		v.Foreach(func(x *ast.Term) { ok = ok && a.defined(x, e, depth+1) })
		return ok
	}
	return a.resolve(t, e, depth).kind == kConst
}

func isArray(t *ast.Term, a *analyzer, e env, depth int) bool {
	if _, ok := t.Value.(*ast.Array); ok {
		return true
	}
	r := a.resolve(t, e, depth+1)
	_, ok := r.c.(*ast.Array)
	return r.kind == kConst && ok
}

// isObject: input, input.resource (always objects), or a constant object.
func (a *analyzer) isObject(t *ast.Term, e env, depth int) bool {
	if v, ok := t.Value.(ast.Var); ok && e[v] != nil {
		return a.isObject(e[v], e, depth+1)
	}
	if r, ok := t.Value.(ast.Ref); ok && (r.Equal(ast.InputRootRef) || r.Equal(resourceRef)) {
		return true
	}
	if v, ok := t.Value.(ast.Var); ok && v.Equal(ast.InputRootDocument.Value) {
		return true
	}
	c := a.resolve(t, e, depth+1)
	_, ok := c.c.(ast.Object)
	return c.kind == kConst && ok
}

var resourceRef = ast.MustParseRef("input.resource")
