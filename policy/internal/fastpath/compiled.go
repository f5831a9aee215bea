package fastpath

import (
	"slices"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/open-policy-agent/opa/v1/ast"
)

// A compiled rule set is evaluated without the interpreter's machinery
// (frames, trail, continuations, collectors): the common shape of a
// residual's grant rules, table-scope functions and the decision's
// compositions, where every definition is a conjunction of tests on
// operands — ground paths of the input, of the function's arguments or
// of another rule set's value, constants, and counts of those — with a
// constant value or one of its operands:
//
//	permit contains "grants" if { __l1 = input.resource.key; startswith(__l1, "wh/db/t/") }
//	f(r) = true if { "lake" = r.bucket; __l2 = r.prefix; is_string(__l2); ... }
//	allow = true if { count(data.x.deny, 0); __l3 = data.x.permit; count(__l3, __l4); gt(__l4, 0) }
//	t0 = __l5 if { __l5 = data.x.allow }
//
// A test is `operand = const` (either side), a variable bound to an
// operand (`v = operand`, `count(operand, v)`), is_string, startswith of a
// literal, a comparison with a constant (gt, gte, lt, lte, equal, neq), or
// a call of a residual function, each possibly negated. An undefined
// operand, or a built-in's error (startswith or count of the wrong type:
// OPA makes the expression undefined), fails the test, and a negated
// failing test holds, as in Rego. The index (index.go) still picks the
// candidates; two different values of a complete rule or function are a
// conflict (errFallback, as in the interpreter). Anything else — else
// branches, iteration, other built-ins, negations that must check their
// references (pecaveats.go) — leaves the rule set to the interpreter
// (compileSet returns nil). An interpreted definition whose body starts
// with such tests has them as its prefilter (rule.pre): when they fail,
// the interpreter does not run the body, which would fail at the same
// expression.
type compiledSet struct {
	defs []compiledDef // parallel to the rule set's rules
	def  ast.Value     // the default's value, or nil
	// A set's distinct elements, and when they are few, its value for
	// each subset of them (by bit mask): shared, never added to (as
	// ast.InternedEmptySetValue).
	elems  []ast.Value
	values []ast.Value
}

// maxPrebuilt: sets with up to this many distinct elements have their
// values built at compile time.
const maxPrebuilt = 4

type compiledDef struct {
	tests []compiledTest
	val   ast.Value // the constant value, or nil: head's
	head  *inPath
	elem  int // a set's: val's index in compiledSet.elems
}

type testKind uint8

const (
	testEqual testKind = iota
	testDefined
	testIsString
	testPrefix
	testCompare
	testNeq
	testCall
	testMember
)

type compiledTest struct {
	kind    testKind
	negated bool
	inPath            // the operand (testCall: none)
	c       ast.Value // testEqual, testCompare, testNeq
	lit     string    // testPrefix
	cmp     func(int) bool
	rev     bool     // testCompare: c is the first operand
	fn      *ruleSet // testCall
	args    []inPath // testCall
	// countInt: the operand is a count and c an integer (testEqual,
	// testNeq, testCompare), compared as ints: the count is not boxed
	// into a term nor c parsed at every test.
	countInt bool
	ci       int64
}

// inPath is an operand: a path in the input (arg -1), in a function
// argument or (set not nil) in another rule set's value; or a constant
// (konst not nil); count: its count.
type inPath struct {
	arg   int
	set   *ruleSet
	path  []ast.Value
	konst ast.Value
	count bool
	// get: object.get(the path but its last key, that key, dflt): the
	// value under the key of an object, dflt when it has none.
	get  bool
	dflt ast.Value
	// field: the path is one of the input's per-object fields, read
	// directly (objInput.field); 0: walked.
	field lazyField
}

var comparisons = map[string]func(int) bool{
	ast.GreaterThan.Name:   func(c int) bool { return c > 0 },
	ast.GreaterThanEq.Name: func(c int) bool { return c >= 0 },
	ast.LessThan.Name:      func(c int) bool { return c < 0 },
	ast.LessThanEq.Name:    func(c int) bool { return c <= 0 },
}

// compileSet returns the compiled form of rs, or nil when some definition
// is not of the compiled shape.
func compileSet(rs *ruleSet) *compiledSet {
	if len(rs.rules) == 0 {
		return nil
	}
	cs := &compiledSet{defs: make([]compiledDef, len(rs.rules))}
	for i, r := range rs.rules {
		if !compileDef(rs, r, &cs.defs[i]) {
			return nil
		}
	}
	if rs.def != nil {
		var d compiledDef
		if !compileDef(rs, rs.def, &d) || len(d.tests) > 0 || d.val == nil {
			return nil
		}
		cs.def = d.val
	}
	if rs.kind == kindSet {
		for i := range cs.defs {
			d := &cs.defs[i]
			d.elem = slices.IndexFunc(cs.elems, func(v ast.Value) bool { return ast.ValueEqual(v, d.val) })
			if d.elem < 0 {
				d.elem = len(cs.elems)
				cs.elems = append(cs.elems, d.val)
			}
		}
		if len(cs.elems) <= maxPrebuilt {
			cs.values = make([]ast.Value, 1<<len(cs.elems))
			for mask := range cs.values {
				s := ast.NewSet()
				for j, v := range cs.elems {
					if mask&(1<<j) != 0 {
						s.Add(ast.NewTerm(v))
					}
				}
				cs.values[mask] = s
			}
			cs.values[0] = ast.InternedEmptySetValue
		}
	}
	return cs
}

// compileDef compiles a whole definition: every expression a test, the
// value a constant (a set's) or an operand.
func compileDef(rs *ruleSet, r *rule, d *compiledDef) bool {
	if len(r.elses) > 0 || r.memoSlot > 0 {
		return false
	}
	c, tests, n := compileBody(r)
	if c == nil || n < len(r.body) {
		return false
	}
	d.tests = tests
	switch {
	case r.head.kind == tConst:
		d.val = r.head.c
	case rs.kind == kindSet:
		return false
	default:
		p, ok := c.resolve(&r.head)
		if !ok {
			return false
		}
		d.head = &p
	}
	return true
}

// compileBody compiles the longest prefix of r's body made of tests: n
// expressions. c is nil when the arguments are not distinct variables
// (the interpreter matches patterns first).
func compileBody(r *rule) (c *defCompiler, tests []compiledTest, n int) {
	c = &defCompiler{bound: map[int32]inPath{}}
	for i := range r.args {
		a := &r.args[i]
		if a.kind != tVar {
			return nil, nil, 0
		}
		if _, dup := c.bound[a.slot]; dup {
			return nil, nil, 0
		}
		c.bound[a.slot] = inPath{arg: i}
	}
	for n = 0; n < len(r.body); n++ {
		t, skip, ok := c.expr(&r.body[n])
		if !ok {
			break
		}
		if !skip {
			t.setCountInt()
			tests = append(tests, t)
		}
	}
	return c, tests, n
}

// expr compiles one expression into a test (skip: it always holds).
func (c *defCompiler) expr(e *expr) (t compiledTest, skip, ok bool) {
	if len(e.defined) > 0 {
		return t, false, false
	}
	t.negated = e.negated
	switch e.kind {
	case exTerm:
		x := &e.terms[0]
		if b, isBool := x.c.(ast.Boolean); x.kind == tConst && isBool && bool(b) && !e.negated {
			return t, true, true
		}
		return t, false, false
	case exEq:
		a, b := &e.terms[0], &e.terms[1]
		if a.kind != tConst {
			a, b = b, a
		}
		if a.kind == tConst {
			p, ok := c.resolve(b)
			if !ok {
				return t, false, false
			}
			t.kind, t.inPath, t.c = testEqual, p, a.c
			return t, false, true
		}
		// v = operand, v not bound yet: binds v (the body fails when
		// the operand is undefined).
		if c.free(b) {
			a, b = b, a
		}
		if e.negated || !c.free(a) {
			return t, false, false
		}
		p, ok := c.resolve(b)
		if !ok {
			return t, false, false
		}
		c.bound[a.slot] = p
		t.kind, t.inPath = testDefined, p
		return t, false, true
	case exFunc:
		if e.out || e.set.arity != len(e.terms) {
			return t, false, false
		}
		t.kind, t.fn = testCall, e.set
		for i := range e.terms {
			p, ok := c.resolve(&e.terms[i])
			if !ok {
				return t, false, false
			}
			t.args = append(t.args, p)
		}
		return t, false, true
	case exBuiltin:
	default:
		return t, false, false
	}
	name := e.bi.Name
	if name == ast.Count.Name && e.out && len(e.terms) == 2 {
		p, ok := c.resolve(&e.terms[0])
		if !ok || p.count || p.konst != nil {
			return t, false, false
		}
		p.count = true
		out := &e.terms[1]
		switch {
		case out.kind == tConst: // count(x) == c
			t.kind, t.inPath, t.c = testEqual, p, out.c
		case !e.negated && c.free(out):
			c.bound[out.slot] = p
			t.kind, t.inPath = testDefined, p
		default:
			return t, false, false
		}
		return t, false, true
	}
	if name == ast.ObjectGet.Name && e.out && len(e.terms) == 4 && !e.negated {
		// object.get(operand, "key", default, v): binds v; with a
		// constant for v, compares
		key, isStr := e.terms[1].c.(ast.String)
		p, ok := c.resolve(&e.terms[0])
		out := &e.terms[3]
		if !ok || p.count || p.get || p.konst != nil || e.terms[1].kind != tConst || !isStr || e.terms[2].kind != tConst || out.kind != tConst && !c.free(out) {
			return t, false, false
		}
		p.path = append(slices.Clip(p.path), key)
		p.get, p.dflt, p.field = true, e.terms[2].c, fieldNone
		if out.kind == tConst {
			t.kind, t.inPath, t.c = testEqual, p, out.c
			return t, false, true
		}
		c.bound[out.slot] = p
		t.kind, t.inPath = testDefined, p
		return t, false, true
	}
	if e.out {
		return t, false, false
	}
	switch {
	case name == ast.Member.Name && len(e.terms) == 2 && e.terms[1].kind == tConst:
		switch e.terms[1].c.(type) {
		case ast.Set, *ast.Array, ast.Object:
		default:
			return t, false, false
		}
		t.kind, t.c = testMember, e.terms[1].c
	case name == ast.IsString.Name && len(e.terms) == 1:
		t.kind = testIsString
	case name == ast.StartsWith.Name && len(e.terms) == 2 && e.terms[1].kind == tConst:
		lit, ok := e.terms[1].c.(ast.String)
		if !ok {
			return t, false, false
		}
		t.kind, t.lit = testPrefix, string(lit)
	case comparisons[name] != nil && len(e.terms) == 2 || name == ast.Equal.Name || name == ast.NotEqual.Name:
		x, y := &e.terms[0], &e.terms[1]
		if x.kind == tConst {
			x, y = y, x
			t.rev = true
		}
		if y.kind != tConst {
			return t, false, false
		}
		p, ok := c.resolve(x)
		if !ok {
			return t, false, false
		}
		t.inPath, t.c = p, y.c
		switch name {
		case ast.Equal.Name:
			t.kind = testEqual
		case ast.NotEqual.Name:
			t.kind = testNeq
		default:
			t.kind, t.cmp = testCompare, comparisons[name]
		}
		return t, false, true
	default:
		return t, false, false
	}
	p, ok := c.resolve(&e.terms[0])
	if !ok {
		return t, false, false
	}
	t.inPath = p
	return t, false, true
}

// setCountInt marks a comparison of a count with an integer constant
// (countInt). Only constants that parse as an int64 are: for them OPA's
// number comparison is the integers' (other spellings, such as 0.0 or
// 1e0, take the generic path).
func (t *compiledTest) setCountInt() {
	if !t.count || t.konst != nil || (t.kind != testEqual && t.kind != testNeq && t.kind != testCompare) {
		return
	}
	n, ok := t.c.(ast.Number)
	if !ok {
		return
	}
	ci, err := strconv.ParseInt(string(n), 10, 64)
	if err != nil {
		return
	}
	t.countInt, t.ci = true, ci
}

// defCompiler: the variables of a definition bound so far (its arguments,
// and variables bound to operands), by slot.
type defCompiler struct {
	bound map[int32]inPath
}

// free: t is a variable not bound yet.
func (c *defCompiler) free(t *term) bool {
	if t.kind != tVar {
		return false
	}
	_, bound := c.bound[t.slot]
	return !bound
}

// resolve is the operand t stands for: a constant, a bound variable, or a
// reference with a constant path on the input, a bound variable or a
// rule set (not a function).
func (c *defCompiler) resolve(t *term) (inPath, bool) {
	switch t.kind {
	case tConst:
		return inPath{konst: t.c}, true
	case tVar:
		p, ok := c.bound[t.slot]
		return p, ok
	case tRef:
	default:
		return inPath{}, false
	}
	r := t.ref
	var p inPath
	switch r.head {
	case headInput:
		p.arg = -1
	case headVar:
		b, ok := c.bound[int32(r.slot)]
		if !ok || b.count || b.get || b.konst != nil {
			return inPath{}, false
		}
		p.arg, p.set, p.path = b.arg, b.set, slices.Clip(b.path)
	case headRule:
		if r.set.kind == kindFunc {
			return inPath{}, false
		}
		p.arg, p.set = -1, r.set
	default:
		return inPath{}, false
	}
	for i := range r.path {
		if r.path[i].kind != tConst {
			return inPath{}, false
		}
		p.path = append(p.path, r.path[i].c)
	}
	if p.arg < 0 && p.set == nil && !p.get {
		p.field = fieldOf(p.path)
	}
	return p, true
}

// evalCompiled is the value of a compiled rule set (nil: undefined), as
// setValue or callFunc would compute it with the interpreter.
func (m *machine) evalCompiled(rs *ruleSet, args []ast.Value) (ast.Value, error) {
	cs := rs.comp
	mark := len(m.ibuf)
	cands := m.candidates(rs, args)
	defer func() { m.ibuf = m.ibuf[:mark] }()
	var val ast.Value
	var set ast.Set
	mask := 0
	for _, i := range cands {
		d := &cs.defs[i]
		ok, err := m.holds(d.tests, args)
		if err != nil {
			return nil, err
		}
		if !ok {
			continue
		}
		v := d.val
		if d.head != nil {
			if v, ok, err = m.operand(d.head, args); err != nil {
				return nil, err
			} else if !ok {
				continue // an undefined value: no value
			}
			v = materialize(v)
		}
		switch {
		case rs.kind != kindSet:
			if val != nil && !ast.ValueEqual(val, v) {
				return nil, errFallback // conflict: OPA raises an error
			}
			val = v
		case cs.values != nil:
			mask |= 1 << d.elem
		default:
			if set == nil {
				set = ast.NewSet()
			}
			set.Add(ast.NewTerm(v))
		}
	}
	if rs.kind == kindSet {
		switch {
		case cs.values != nil:
			return cs.values[mask], nil
		case set != nil:
			return set, nil
		}
		return ast.InternedEmptySetValue, nil
	}
	if val == nil {
		return cs.def, nil
	}
	return val, nil
}

// holds reports whether every test holds for this object, in order (a
// rule set a test reads may fail to evaluate: errFallback).
func (m *machine) holds(tests []compiledTest, args []ast.Value) (bool, error) {
	for i := range tests {
		ok, err := m.test(&tests[i], args)
		if err != nil {
			return false, err
		}
		if ok == tests[i].negated {
			return false, nil
		}
	}
	return true, nil
}

func (m *machine) test(t *compiledTest, args []ast.Value) (bool, error) {
	if t.kind == testCall {
		return m.testCall(t, args)
	}
	if t.countInt {
		return m.testCountInt(t, args)
	}
	cur, ok, err := m.operand(&t.inPath, args)
	if err != nil || !ok {
		return false, err
	}
	return m.testValue(t, cur), nil
}

// testCountInt is test for a countInt test: testValue's comparison of
// the count's term with the constant, on ints.
func (m *machine) testCountInt(t *compiledTest, args []ast.Value) (bool, error) {
	p := t.inPath
	p.count = false
	cur, ok, err := m.operand(&p, args)
	if err != nil || !ok {
		return false, err
	}
	n, ok := countOf(cur)
	if !ok {
		return false, nil // count errs: the expression is undefined
	}
	c := 0
	switch x := int64(n); {
	case x < t.ci:
		c = -1
	case x > t.ci:
		c = 1
	}
	switch t.kind {
	case testEqual:
		return c == 0, nil
	case testNeq:
		return c != 0, nil
	}
	if t.rev {
		return t.cmp(-c), nil
	}
	return t.cmp(c), nil
}

// countOf is count(v): the length of an array, object or set, the runes
// of a string; ok false for anything else (count errs).
func countOf(v ast.Value) (int, bool) {
	switch a := materialize(v).(type) {
	case *ast.Array:
		return a.Len(), true
	case ast.Object:
		return a.Len(), true
	case ast.Set:
		return a.Len(), true
	case ast.String:
		return utf8.RuneCountInString(string(a)), true
	}
	return 0, false
}

// operand is p's value (ok false: undefined).
func (m *machine) operand(p *inPath, args []ast.Value) (ast.Value, bool, error) {
	var cur ast.Value
	switch {
	case p.konst != nil:
		return p.konst, true, nil
	case p.field != 0:
		cur = m.in.field(p.field)
	case p.set != nil:
		v, err := m.setValue(p.set)
		if err != nil || v == nil {
			return nil, false, err
		}
		cur = v
	case p.arg < 0:
		cur = m.in.root()
	default:
		cur = args[p.arg]
	}
	if p.field == 0 {
		path := p.path
		if p.get {
			path = path[:len(path)-1]
		}
		for _, k := range path {
			var ok bool
			if cur, ok = m.lookup(cur, k); !ok {
				return nil, false, nil
			}
		}
		if p.get {
			switch cur.(type) {
			case *lazyVal, ast.Object:
			default:
				return nil, false, nil // object.get of a non-object errs: undefined
			}
			if v, ok := m.lookup(cur, p.path[len(p.path)-1]); ok {
				cur = v
			} else {
				cur = p.dflt
			}
		}
	}
	if p.count {
		n, ok := countOf(cur)
		if !ok {
			return nil, false, nil // count errs: the expression is undefined
		}
		return ast.InternedTerm(n).Value, true, nil
	}
	return cur, true, nil
}

// testCall: the function's value for the operands is defined and not
// false.
func (m *machine) testCall(t *compiledTest, args []ast.Value) (bool, error) {
	mark := len(m.vals)
	defer func() {
		clear(m.vals[mark:])
		m.vals = m.vals[:mark]
	}()
	for i := range t.args {
		v, ok, err := m.operand(&t.args[i], args)
		if err != nil || !ok {
			return false, err
		}
		m.vals = append(m.vals, v)
	}
	v, err := m.callFunc(t.fn, m.vals[mark:])
	if err != nil || v == nil {
		return false, err
	}
	return !isFalse(v), nil
}

func (m *machine) testValue(t *compiledTest, cur ast.Value) bool {
	switch t.kind {
	case testMember: // as the native internal.member_2
		x := materialize(cur)
		switch c := t.c.(type) {
		case ast.Set:
			return c.Contains(m.term(x))
		case *ast.Array:
			for i := range c.Len() {
				if ast.ValueEqual(x, c.Elem(i).Value) {
					return true
				}
			}
			return false
		default:
			return c.(ast.Object).Until(func(_, v *ast.Term) bool { return ast.ValueEqual(x, v.Value) })
		}
	case testEqual:
		if c, ok := t.c.(ast.String); ok {
			s, ok := stringOf(cur)
			return ok && s == string(c)
		}
		return equalValues(t.c, cur)
	case testNeq:
		return !equalValues(t.c, cur)
	case testCompare:
		x := materialize(cur)
		if t.rev {
			return t.cmp(t.c.Compare(x))
		}
		return t.cmp(x.Compare(t.c))
	case testDefined:
		return true
	case testIsString:
		_, ok := stringOf(cur)
		return ok
	default:
		s, ok := stringOf(cur)
		return ok && strings.HasPrefix(s, t.lit)
	}
}

// stringOf is v's content when v is a string, without boxing a lazy one
// (but marking it read, as its value() would).
func stringOf(v ast.Value) (string, bool) {
	switch x := v.(type) {
	case *lazyStr:
		if x.read != nil {
			*x.read = true
		}
		return x.s, true
	case ast.String:
		return string(x), true
	}
	return "", false
}

// candidates are the indices of rs's definitions its index selects for
// this object, in order, on m.ibuf (the caller truncates it).
func (m *machine) candidates(rs *ruleSet, args []ast.Value) []int {
	mark := len(m.ibuf)
	ix := rs.index
	if ix == nil {
		for i := range rs.rules {
			m.ibuf = append(m.ibuf, i)
		}
		return m.ibuf[mark:]
	}
	m.ibuf = append(m.ibuf, ix.always...)
	for l := range ix.levels {
		lv := &ix.levels[l]
		var cur ast.Value
		if lv.path.arg >= 0 {
			cur = args[lv.path.arg]
		} else {
			cur = m.in.root()
		}
		for _, p := range lv.path.path {
			var ok bool
			if cur, ok = m.lookup(cur, p); !ok {
				cur = nil
				break
			}
		}
		m.ibuf = lv.candidatesOf(cur, m.ibuf)
	}
	sortInts(m.ibuf[mark:])
	return m.ibuf[mark:]
}

// compileTuple is the decision query's tuple when the query is one
// definition binding each element to a rule set's value
// (`out contains [x0, x1] if { t0 = x0; t1 = x1 }`): the sets, in order;
// nil otherwise (the interpreter evaluates the query).
func compileTuple(q *ruleSet) []*ruleSet {
	if len(q.rules) != 1 || q.def != nil {
		return nil
	}
	r := q.rules[0]
	if len(r.elses) > 0 || len(r.args) > 0 || r.head.kind != tArray || len(r.body) != len(r.head.elems) {
		return nil
	}
	bound := map[int32]*ruleSet{}
	for i := range r.body {
		e := &r.body[i]
		if e.kind != exEq || e.negated || len(e.defined) > 0 {
			return nil
		}
		a, b := &e.terms[0], &e.terms[1]
		if a.kind != tVar {
			a, b = b, a
		}
		if a.kind != tVar || b.kind != tRef || b.ref.head != headRule || len(b.ref.path) > 0 || b.ref.set.kind == kindFunc {
			return nil
		}
		if _, dup := bound[a.slot]; dup {
			return nil
		}
		bound[a.slot] = b.ref.set
	}
	sets := make([]*ruleSet, len(r.head.elems))
	for i := range r.head.elems {
		x := &r.head.elems[i]
		if x.kind != tVar || bound[x.slot] == nil {
			return nil
		}
		sets[i] = bound[x.slot]
	}
	return sets
}

// runTuple evaluates the compiled decision query: every element's rule
// set's value, in order (an undefined one: no solution).
func (m *machine) runTuple(sets []*ruleSet) ([]ast.Value, error) {
	m.tuple = m.tupleBuf[:0]
	for _, rs := range sets {
		v, err := m.setValue(rs)
		if err != nil {
			return nil, err
		}
		if v == nil {
			return nil, errFallback // the query is undefined
		}
		m.tuple = append(m.tuple, materialize(v))
	}
	m.tupleBuf = m.tuple[:0]
	return m.tuple, nil
}
