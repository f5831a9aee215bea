package fastpath

import (
	"slices"
	"strings"
	"unicode/utf8"

	"github.com/open-policy-agent/opa/v1/ast"
)

// A compiled rule set is evaluated without the interpreter's machinery
// (frames, trail, continuations, collectors): the common shape of a
// residual's grant rules and table-scope functions, where every definition
// is a conjunction of tests on ground paths of the input or of the
// function's arguments, with a constant value:
//
//	permit contains "grants" if { "lake" = input.resource.bucket; not is_string(input.resource.prefix); startswith(input.resource.key, "wh/db/t/") }
//	f(r) = true if { "lake" = r.bucket; is_string(r.prefix); startswith(r.prefix, "wh/db/t/") }
//
// A test is `path = const` (either side), is_string(path) or
// startswith(path, "literal"), each possibly negated. A path that is
// undefined, or a startswith of a value that is not a string (OPA's
// built-in errs: the expression is undefined), makes the test fail, and a
// negated failing test succeed, as in Rego. The index (index.go) still
// picks the candidates. Anything else — else branches, variables,
// iteration, other built-ins, references to other rules, negations that
// must check their references (pecaveats.go) — leaves the rule set to the
// interpreter (compileSet returns nil).
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
	val   ast.Value
	elem  int // a set's: val's index in compiledSet.elems
}

type testKind uint8

const (
	testEqual testKind = iota
	testDefined
	testIsString
	testPrefix
	testCount
)

type compiledTest struct {
	kind    testKind
	negated bool
	inPath
	c   ast.Value // testEqual, testCount
	lit string    // testPrefix
}

// compileSet returns the compiled form of rs, or nil when some definition
// is not of the compiled shape.
func compileSet(rs *ruleSet) *compiledSet {
	if rs.kind == kindComplete && len(rs.rules) == 0 {
		return nil
	}
	cs := &compiledSet{defs: make([]compiledDef, len(rs.rules))}
	for i, r := range rs.rules {
		if !compileDef(r, &cs.defs[i]) {
			return nil
		}
	}
	if rs.def != nil {
		var d compiledDef
		if !compileDef(rs.def, &d) || len(d.tests) > 0 {
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

func compileDef(r *rule, d *compiledDef) bool {
	if len(r.elses) > 0 || r.memoSlot > 0 || r.head.kind != tConst {
		return false
	}
	c := defCompiler{bound: map[int32]inPath{}}
	for i := range r.args {
		a := &r.args[i]
		if a.kind != tVar {
			return false
		}
		if _, dup := c.bound[a.slot]; dup {
			return false
		}
		c.bound[a.slot] = inPath{arg: i}
	}
	for i := range r.body {
		e := &r.body[i]
		if len(e.defined) > 0 || e.out && !(e.kind == exBuiltin && e.bi.Name == ast.Count.Name) {
			return false
		}
		t := compiledTest{negated: e.negated}
		switch e.kind {
		case exTerm:
			x := &e.terms[0]
			if x.kind != tConst {
				return false
			}
			if _, ok := x.c.(ast.Boolean); !ok || isFalse(x.c) || e.negated {
				return false // (a body that never holds: the interpreter's)
			}
			continue // true
		case exEq:
			a, b := &e.terms[0], &e.terms[1]
			if a.kind != tConst {
				a, b = b, a
			}
			if a.kind == tConst {
				p, ok := c.resolve(b)
				if !ok {
					return false
				}
				t.kind, t.inPath, t.c = testEqual, p, a.c
				break
			}
			// v = path, v not bound yet: binds v (the body fails when
			// path is undefined).
			if b.kind == tVar {
				if _, bound := c.bound[b.slot]; !bound {
					a, b = b, a
				}
			}
			if e.negated || a.kind != tVar {
				return false
			}
			if _, bound := c.bound[a.slot]; bound {
				return false
			}
			p, ok := c.resolve(b)
			if !ok {
				return false
			}
			c.bound[a.slot] = p
			t.kind, t.inPath = testDefined, p
		case exBuiltin:
			switch {
			case e.bi.Name == ast.IsString.Name && len(e.terms) == 1:
				t.kind = testIsString
			case e.bi.Name == ast.Count.Name && len(e.terms) == 2 && e.terms[1].kind == tConst:
				// count(x, c): the expression the compiler makes of count(x) == c
				t.kind, t.c = testCount, e.terms[1].c
			case e.bi.Name == ast.StartsWith.Name && len(e.terms) == 2 && e.terms[1].kind == tConst:
				lit, ok := e.terms[1].c.(ast.String)
				if !ok {
					return false
				}
				t.kind, t.lit = testPrefix, string(lit)
			default:
				return false
			}
			p, ok := c.resolve(&e.terms[0])
			if !ok {
				return false
			}
			t.inPath = p
		default:
			return false
		}
		d.tests = append(d.tests, t)
	}
	d.val = r.head.c
	return true
}

// inPath is a path in the input (arg -1), in a function argument, or (set
// not nil) in the value of another rule set of the residual.
type inPath struct {
	arg  int
	set  *ruleSet
	path []ast.Value
}

// defCompiler: the variables of a definition bound so far (its arguments,
// and variables bound to paths), by slot.
type defCompiler struct {
	bound map[int32]inPath
}

// resolve is the path t stands for: a bound variable, or a reference with
// a constant path on the input or on a bound variable.
func (c *defCompiler) resolve(t *term) (inPath, bool) {
	switch t.kind {
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
		if !ok {
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
	return p, true
}

// evalCompiled is the value of a compiled rule set (nil: undefined), as
// setValue or callFunc would compute it with the interpreter.
func (m *machine) evalCompiled(rs *ruleSet, args []ast.Value) (ast.Value, error) {
	cs := rs.comp
	mark := len(m.ibuf)
	cands := m.candidates(rs, args)
	var val ast.Value
	var set ast.Set
	mask := 0
	for _, i := range cands {
		d := &cs.defs[i]
		ok, err := m.holds(d, args)
		if err != nil {
			m.ibuf = m.ibuf[:mark]
			return nil, err
		}
		if !ok {
			continue
		}
		switch {
		case rs.kind != kindSet:
			if val != nil && !ast.ValueEqual(val, d.val) {
				m.ibuf = m.ibuf[:mark]
				return nil, errFallback // conflict: OPA raises an error
			}
			val = d.val
		case cs.values != nil:
			mask |= 1 << d.elem
		default:
			if set == nil {
				set = ast.NewSet()
			}
			set.Add(ast.NewTerm(d.val))
		}
	}
	m.ibuf = m.ibuf[:mark]
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

// holds reports whether every test of d holds for this object, in order
// (a rule set a test reads may fail to evaluate: errFallback).
func (m *machine) holds(d *compiledDef, args []ast.Value) (bool, error) {
	for i := range d.tests {
		ok, err := m.test(&d.tests[i], args)
		if err != nil {
			return false, err
		}
		if ok == d.tests[i].negated {
			return false, nil
		}
	}
	return true, nil
}

func (m *machine) test(t *compiledTest, args []ast.Value) (bool, error) {
	var cur ast.Value
	switch {
	case t.set != nil:
		v, err := m.setValue(t.set)
		if err != nil || v == nil {
			return false, err
		}
		cur = v
	case t.arg < 0:
		cur = m.in.root()
	default:
		cur = args[t.arg]
	}
	for _, p := range t.path {
		var ok bool
		if cur, ok = m.lookup(cur, p); !ok {
			return false, nil // undefined
		}
	}
	return testValue(t, cur), nil
}

func testValue(t *compiledTest, cur ast.Value) bool {
	switch t.kind {
	case testEqual:
		if c, ok := t.c.(ast.String); ok {
			s, ok := stringOf(cur)
			return ok && s == string(c)
		}
		return equalValues(t.c, cur)
	case testDefined:
		return true
	case testIsString:
		_, ok := stringOf(cur)
		return ok
	case testCount:
		n := -1
		switch a := materialize(cur).(type) {
		case *ast.Array:
			n = a.Len()
		case ast.Object:
			n = a.Len()
		case ast.Set:
			n = a.Len()
		case ast.String:
			n = utf8.RuneCountInString(string(a))
		}
		// not a collection or a string: count errs, the expression is
		// undefined
		return n >= 0 && equalValues(ast.InternedTerm(n).Value, t.c)
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
