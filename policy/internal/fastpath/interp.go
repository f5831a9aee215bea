package fastpath

import (
	"context"
	"errors"
	"slices"
	"sync"

	"github.com/open-policy-agent/opa/v1/ast"
	"github.com/open-policy-agent/opa/v1/topdown"
)

// The interpreter evaluates a scope's residual program (residual.go) for
// one object, with Rego's semantics for the subset it accepts:
//
//   - a body is a conjunction evaluated left to right over every solution
//     (no early exit anywhere, so it evaluates at least what OPA would);
//   - a complete rule or function has one value: two different values are a
//     conflict, which OPA reports as an error — here errFallback, and the
//     object is decided by a full evaluation, which reports it;
//   - built-in errors make the expression undefined, as OPA does when
//     strict built-in errors are off; a Halt error falls back;
//   - an index (index.go) skips definitions whose startswith or equality
//     test on the object's fields cannot hold; the candidates are then
//     evaluated in full.
//
// Any situation it is not sure about returns errFallback. Decisions are
// therefore either the residual's exact value or a full evaluation.

// errFallback: this object must be decided by a full evaluation.
var errFallback = errors.New("policy: fast path falls back to full evaluation")

// errIter: a term's value is not determined by the bindings (it iterates, or
// is an unbound variable).
var errIter = errors.New("iterating term")

type colMode uint8

const (
	colValue colMode = iota
	colSet
	colFound
	colTuple // the decision query: the values of its head's elements
)

// collector receives the solutions of a rule body (or of a negated
// expression).
type collector struct {
	mode  colMode
	val   ast.Value // colValue: the value so far
	got   bool      // colValue: this definition produced a value
	set   ast.Set   // colSet
	found bool      // colFound
}

// cont is what follows an expression: the rest of a body, or (r nil) the
// sink of a negation. k indexes the machine's collectors.
type cont struct {
	r    *rule
	base int
	i    int
	k    int
}

type setMemo struct {
	state uint8 // 0 not computed, 1 in progress, 2 done
	val   ast.Value
	calls []funcMemo
}

type funcMemo struct {
	args []ast.Value
	val  ast.Value
}

type machine struct {
	ctx      context.Context
	p        *program
	in       *objInput
	slots    []ast.Value
	trail    []int
	memo     []setMemo
	outs     []ast.Value
	cols     []collector
	terms    []ast.Term // arena of terms for this evaluation
	nterm    int
	vals     []ast.Value // stack of call arguments
	keep     []ast.Value // arena of memoized arguments
	rbuf     []*rule     // stack of candidate definitions
	tuple    []ast.Value
	tupleBuf []ast.Value
	bctx     topdown.BuiltinContext
	ibuf     []int // stack of candidate indices
	inBuf    objInput
	// Header rules (headermemo.go): the object's header names, the
	// program's memo for them (nil: none), what this evaluation found to
	// remember, and how many were remembered ones.
	names   []byte
	nameBuf []byte
	hmemo   *headerMemo
	hnew    []headerEntry
	hhits   int
	// interpOnly: evaluate compiled rule sets (compiled.go) with the
	// interpreter too (Cache.noCompiled).
	interpOnly bool

	collect func(*ast.Term) error
}

var machinePool = sync.Pool{New: func() any {
	m := &machine{
		slots: make([]ast.Value, 0, 256),
		trail: make([]int, 0, 64),
		outs:  make([]ast.Value, 0, 8),
		cols:  make([]collector, 0, 32),
		terms: make([]ast.Term, 256),
		vals:  make([]ast.Value, 0, 32),
		keep:  make([]ast.Value, 0, 64),
		rbuf:  make([]*rule, 0, 256),
	}
	m.collect = m.collectOut
	return m
}}

func getMachine(ctx context.Context, p *program, in *objInput) *machine {
	m := machinePool.Get().(*machine)
	m.ctx, m.p, m.in = ctx, p, in
	m.bctx = topdown.BuiltinContext{Context: ctx}
	if cap(m.memo) < len(p.sets) {
		m.memo = make([]setMemo, len(p.sets))
	} else {
		m.memo = m.memo[:len(p.sets)]
		for i := range m.memo {
			m.memo[i] = setMemo{calls: m.memo[i].calls[:0]}
		}
	}
	return m
}

func putMachine(m *machine) {
	m.ctx, m.p, m.in = nil, nil, nil
	m.bctx = topdown.BuiltinContext{}
	clear(m.slots)
	m.slots = m.slots[:0]
	m.trail = m.trail[:0]
	clear(m.outs[:cap(m.outs)])
	m.outs = m.outs[:0]
	m.cols = m.cols[:0] // popped collectors are zeroed
	clear(m.terms[:m.nterm])
	m.nterm = 0
	clear(m.vals[:cap(m.vals)])
	m.vals = m.vals[:0]
	clear(m.keep)
	m.keep = m.keep[:0]
	m.rbuf = m.rbuf[:0] // cleared as candidates are done with
	clear(m.tupleBuf[:cap(m.tupleBuf)])
	m.tuple = nil
	m.names, m.hmemo, m.hhits, m.interpOnly = nil, nil, 0, false
	clear(m.hnew)
	m.hnew = m.hnew[:0]
	for i := range m.memo {
		m.memo[i].val = nil
		for j := range m.memo[i].calls {
			m.memo[i].calls[j] = funcMemo{}
		}
	}
	if cap(m.slots) > 1<<16 {
		return // an unusually large evaluation: let it go
	}
	machinePool.Put(m)
}

// term wraps v in a term of the evaluation's arena (the machine is reused
// only once nothing of this evaluation is referenced).
func (m *machine) term(v ast.Value) *ast.Term {
	if m.nterm == len(m.terms) {
		m.terms = make([]ast.Term, 2*len(m.terms))
		m.nterm = 0
	}
	t := &m.terms[m.nterm]
	m.nterm++
	t.Value = v
	return t
}

// collector pushes a collector and returns its index.
func (m *machine) collector(mode colMode) int {
	m.cols = append(m.cols, collector{mode: mode})
	return len(m.cols) - 1
}

func (m *machine) popCollector(k int) {
	m.cols[k] = collector{}
	m.cols = m.cols[:k]
}

func (m *machine) collectOut(t *ast.Term) error {
	m.outs = append(m.outs, t.Value)
	return nil
}

// run evaluates the decision query: the values of its one solution.
func (m *machine) run() ([]ast.Value, error) {
	if m.p.tuple != nil && !m.interpOnly {
		return m.runTuple(m.p.tuple)
	}
	k := m.collector(colTuple)
	err := m.evalDefs(m.p.query, nil, k)
	m.popCollector(k)
	if err != nil {
		return nil, err
	}
	if m.tuple == nil {
		return nil, errFallback // no solution: the query is undefined
	}
	return m.tuple, nil
}

func (m *machine) frame(n int) int {
	base := len(m.slots)
	m.slots = slices.Grow(m.slots, n)[:base+n]
	clear(m.slots[base:])
	return base
}

func (m *machine) bind(idx int, v ast.Value) {
	m.slots[idx] = v
	m.trail = append(m.trail, idx)
}

func (m *machine) undo(mark int) {
	for len(m.trail) > mark {
		n := len(m.trail) - 1
		m.slots[m.trail[n]] = nil
		m.trail = m.trail[:n]
	}
}

func (m *machine) next(c cont) error {
	if c.r == nil {
		m.cols[c.k].found = true
		return nil
	}
	return m.body(c.r, c.base, c.i, c.k)
}

func (m *machine) body(r *rule, base, i int, k int) error {
	if i == len(r.body) {
		return m.finish(r, base, k)
	}
	return m.expr(&r.body[i], base, cont{r: r, base: base, i: i + 1, k: k})
}

func (m *machine) finish(r *rule, base int, ki int) error {
	if m.cols[ki].mode == colTuple {
		return m.finishTuple(r, base)
	}
	v, ok, err := m.value(&r.head, base)
	if err != nil {
		return errFallback
	}
	if !ok {
		return nil
	}
	v = materialize(v)
	k := &m.cols[ki]
	switch k.mode {
	case colValue:
		k.got = true
		if k.val == nil {
			k.val = v
		} else if !ast.ValueEqual(k.val, v) {
			return errFallback // conflict: OPA raises an error
		}
	case colSet:
		if k.set == nil {
			k.set = ast.NewSet()
		}
		k.set.Add(m.term(v))
	case colFound:
		k.found = true
	}
	return nil
}

// finishTuple records a solution of the decision query: every solution
// must agree (OPA would return a set of several tuples otherwise).
func (m *machine) finishTuple(r *rule, base int) error {
	n := len(r.head.elems)
	var folded *ast.Array
	switch r.head.kind {
	case tArray:
	case tConst: // every element folded to a constant
		a, ok := r.head.c.(*ast.Array)
		if !ok {
			return errFallback
		}
		folded, n = a, a.Len()
	default:
		return errFallback
	}
	first := m.tuple == nil
	if first {
		m.tuple = m.tupleBuf[:0]
		defer func() { m.tupleBuf = m.tuple[:0] }()
	}
	for i := range n {
		var v ast.Value
		if folded != nil {
			v = folded.Elem(i).Value
		} else {
			var ok bool
			var err error
			v, ok, err = m.value(&r.head.elems[i], base)
			if err != nil || !ok {
				return errFallback
			}
		}
		v = materialize(v)
		if first {
			m.tuple = append(m.tuple, v)
		} else if i >= len(m.tuple) || !ast.ValueEqual(m.tuple[i], v) {
			return errFallback
		}
	}
	return nil
}

func (m *machine) expr(e *expr, base int, c cont) error {
	if !e.negated {
		return m.exprPos(e, base, c)
	}
	for _, r := range e.defined {
		if _, ok, err := m.refValue(r, base); err != nil || !ok {
			return errFallback // see expr.defined
		}
	}
	k := m.collector(colFound)
	mark := len(m.trail)
	err := m.exprPos(e, base, cont{k: k})
	m.undo(mark)
	found := m.cols[k].found
	m.popCollector(k)
	if err != nil {
		return err
	}
	if found {
		return nil
	}
	return m.next(c)
}

func (m *machine) exprPos(e *expr, base int, c cont) error {
	switch e.kind {
	case exTerm:
		v, ok, err := m.value(&e.terms[0], base)
		switch {
		case err == errIter:
			return m.each(&e.terms[0], base, &sink{kind: sinkTruthy, c: c})
		case err != nil:
			return err
		case !ok || isFalse(v):
			return nil
		}
		return m.next(c)
	case exEq:
		return m.unify(&e.terms[0], &e.terms[1], base, c)
	case exBuiltin:
		return m.builtin(e, base, c)
	case exFunc:
		return m.call(e, base, c)
	}
	return errFallback
}

func isFalse(v ast.Value) bool {
	b, ok := v.(ast.Boolean)
	return ok && !bool(b)
}

// unbound returns the slot index of t if it is an unbound variable, else -1.
func (m *machine) unbound(t *term, base int) int {
	if t.kind == tVar && m.slots[base+int(t.slot)] == nil {
		return base + int(t.slot)
	}
	return -1
}

func (m *machine) unify(a, b *term, base int, c cont) error {
	if ia := m.unbound(a, base); ia >= 0 {
		if m.unbound(b, base) >= 0 {
			return errFallback
		}
		return m.bindEach(ia, b, base, c)
	}
	if ib := m.unbound(b, base); ib >= 0 {
		return m.bindEach(ib, a, base, c)
	}
	va, oka, erra := m.value(a, base)
	vb, okb, errb := m.value(b, base)
	switch {
	case erra == nil && errb == nil:
		if !oka || !okb || !equalValues(va, vb) {
			return nil
		}
		return m.next(c)
	case erra == nil:
		if !oka {
			return nil
		}
		return m.unifyValue(b, va, base, c)
	case errb == nil:
		if !okb {
			return nil
		}
		return m.unifyValue(a, vb, base, c)
	}
	// Both sides iterate: each value of a against b.
	return m.each(a, base, &sink{kind: sinkUnify, pat: b, c: c})
}

// bindEach binds slot to each value of t in turn and continues.
func (m *machine) bindEach(slot int, t *term, base int, c cont) error {
	v, ok, err := m.value(t, base)
	switch {
	case err == errIter:
		return m.each(t, base, &sink{kind: sinkBind, slot: slot, c: c})
	case err != nil:
		return err
	case !ok:
		return nil
	}
	mark := len(m.trail)
	m.bind(slot, v)
	err = m.next(c)
	m.undo(mark)
	return err
}

// unifyValue unifies the term t (a pattern, or a term that iterates) with
// the value v, and continues for each solution.
func (m *machine) unifyValue(t *term, v ast.Value, base int, c cont) error {
	if t.kind == tRef {
		return m.each(t, base, &sink{kind: sinkEqual, val: v, c: c})
	}
	mark := len(m.trail)
	ok, err := m.match(t, v, base)
	if err == nil && ok {
		err = m.next(c)
	}
	m.undo(mark)
	return err
}

// match unifies a pattern without iteration with a value, binding the
// pattern's unbound variables (recorded on the trail).
func (m *machine) match(t *term, v ast.Value, base int) (bool, error) {
	switch t.kind {
	case tConst:
		return equalValues(t.c, v), nil
	case tVar:
		idx := base + int(t.slot)
		if cur := m.slots[idx]; cur != nil {
			return equalValues(cur, v), nil
		}
		m.bind(idx, v)
		return true, nil
	case tArray:
		arr, ok := materialize(v).(*ast.Array)
		if !ok || arr.Len() != len(t.elems) {
			return false, nil
		}
		for i := range t.elems {
			ok, err := m.match(&t.elems[i], arr.Elem(i).Value, base)
			if err != nil || !ok {
				return false, err
			}
		}
		return true, nil
	case tObject:
		obj, ok := materialize(v).(ast.Object)
		if !ok || obj.Len() != len(t.elems)/2 {
			return false, nil
		}
		for i := 0; i < len(t.elems); i += 2 {
			k, kok, err := m.value(&t.elems[i], base)
			if err != nil {
				return false, errFallback
			}
			if !kok {
				return false, nil
			}
			x := obj.Get(m.term(materialize(k)))
			if x == nil {
				return false, nil
			}
			ok, err := m.match(&t.elems[i+1], x.Value, base)
			if err != nil || !ok {
				return false, err
			}
		}
		return true, nil
	default:
		x, ok, err := m.value(t, base)
		if err != nil {
			return false, errFallback
		}
		return ok && equalValues(x, v), nil
	}
}

// value evaluates a term that does not iterate. It returns errIter if it
// does.
func (m *machine) value(t *term, base int) (ast.Value, bool, error) {
	switch t.kind {
	case tConst:
		return t.c, true, nil
	case tVar:
		v := m.slots[base+int(t.slot)]
		if v == nil {
			return nil, false, errIter
		}
		return v, true, nil
	case tRef:
		return m.refValue(t.ref, base)
	case tArray:
		terms := make([]*ast.Term, len(t.elems))
		for i := range t.elems {
			v, ok, err := m.value(&t.elems[i], base)
			if err != nil || !ok {
				return nil, false, err
			}
			terms[i] = m.term(materialize(v))
		}
		return ast.NewArray(terms...), true, nil
	case tSet:
		s := ast.NewSet()
		for i := range t.elems {
			v, ok, err := m.value(&t.elems[i], base)
			if err != nil || !ok {
				return nil, false, err
			}
			s.Add(m.term(materialize(v)))
		}
		return s, true, nil
	case tObject:
		kvs := make([][2]*ast.Term, 0, len(t.elems)/2)
		for i := 0; i < len(t.elems); i += 2 {
			k, ok, err := m.value(&t.elems[i], base)
			if err != nil || !ok {
				return nil, false, err
			}
			v, ok, err := m.value(&t.elems[i+1], base)
			if err != nil || !ok {
				return nil, false, err
			}
			kvs = append(kvs, [2]*ast.Term{m.term(materialize(k)), m.term(materialize(v))})
		}
		obj := ast.NewObject()
		for _, kv := range kvs {
			// Duplicate keys with different values make the object
			// undefined in OPA (a conflict): fall back.
			if x := obj.Get(kv[0]); x != nil {
				if !x.Equal(kv[1]) {
					return nil, false, errFallback
				}
				continue
			}
			obj.Insert(kv[0], kv[1])
		}
		return obj, true, nil
	}
	return nil, false, errFallback
}

func (m *machine) refHead(r *refTerm, base int) (ast.Value, bool, error) {
	switch r.head {
	case headInput:
		return m.in.root(), true, nil
	case headVar:
		v := m.slots[base+r.slot]
		if v == nil {
			return nil, false, errFallback // a reference on an unbound variable
		}
		return v, true, nil
	case headConst:
		return r.c, true, nil
	default:
		v, err := m.setValue(r.set)
		if err != nil {
			return nil, false, err
		}
		return v, v != nil, nil
	}
}

// refValue evaluates a reference whose path is determined.
func (m *machine) refValue(r *refTerm, base int) (ast.Value, bool, error) {
	// Check the path first, so that nothing is evaluated for a
	// reference that iterates.
	for i := range r.path {
		if p := &r.path[i]; p.kind != tConst {
			if p.kind == tVar && m.slots[base+int(p.slot)] == nil {
				return nil, false, errIter
			}
		}
	}
	cur, ok, err := m.refHead(r, base)
	if err != nil || !ok {
		return nil, false, err
	}
	for i := range r.path {
		k, ok, err := m.value(&r.path[i], base)
		if err != nil {
			if err == errIter {
				return nil, false, errFallback
			}
			return nil, false, err
		}
		if !ok {
			return nil, false, nil
		}
		if cur, ok = m.lookup(cur, k); !ok {
			return nil, false, nil
		}
	}
	return cur, true, nil
}

// sink is what to do with each value of an iterating term.
type sink struct {
	kind sinkKind
	slot int       // sinkBind
	val  ast.Value // sinkEqual
	pat  *term     // sinkUnify
	c    cont
}

type sinkKind uint8

const (
	sinkTruthy sinkKind = iota // an expression: continue unless false
	sinkBind                   // bind slot and continue
	sinkEqual                  // continue if equal to val
	sinkUnify                  // unify with pat and continue
)

func (m *machine) deliver(s *sink, v ast.Value, base int) error {
	switch s.kind {
	case sinkTruthy:
		if isFalse(v) {
			return nil
		}
		return m.next(s.c)
	case sinkBind:
		mark := len(m.trail)
		m.bind(s.slot, v)
		err := m.next(s.c)
		m.undo(mark)
		return err
	case sinkEqual:
		if !equalValues(v, s.val) {
			return nil
		}
		return m.next(s.c)
	default:
		return m.unifyValue(s.pat, v, base, s.c)
	}
}

// each delivers every value of t to s, binding the variables it iterates
// over meanwhile.
func (m *machine) each(t *term, base int, s *sink) error {
	if t.kind != tRef {
		v, ok, err := m.value(t, base)
		if err != nil {
			return errFallback
		}
		if !ok {
			return nil
		}
		return m.deliver(s, v, base)
	}
	cur, ok, err := m.refHead(t.ref, base)
	if err != nil || !ok {
		return err
	}
	return m.walk(cur, t.ref.path, 0, base, s)
}

func (m *machine) walk(cur ast.Value, path []term, i, base int, s *sink) error {
	for ; i < len(path); i++ {
		seg := &path[i]
		k, ok, err := m.value(seg, base)
		if err == errIter {
			if seg.kind != tVar {
				return errFallback
			}
			slot := base + int(seg.slot)
			it := m.iterStart(cur)
			for {
				k, v, ok := it.next()
				if !ok {
					return nil
				}
				mark := len(m.trail)
				m.bind(slot, k)
				err := m.walk(v, path, i+1, base, s)
				m.undo(mark)
				if err != nil {
					return err
				}
			}
		}
		if err != nil {
			return err
		}
		if !ok {
			return nil
		}
		if cur, ok = m.lookup(cur, k); !ok {
			return nil
		}
	}
	return m.deliver(s, cur, base)
}

// iter walks the keys and values of a collection (a set's elements are
// both).
type iter struct {
	keys, vals []ast.Value
	terms      []*ast.Term // set elements
	arr        *ast.Array
	i          int
}

func (m *machine) iterStart(cur ast.Value) iter {
	if l, ok := cur.(*lazyVal); ok {
		if l.kind == lzHeaders {
			ks, vs := l.in.headerValues()
			return iter{keys: ks, vals: vs}
		}
		cur = l.value()
	}
	switch c := cur.(type) {
	case ast.Set:
		return iter{terms: c.Slice()}
	case *ast.Array:
		return iter{arr: c}
	case ast.Object:
		it := iter{keys: make([]ast.Value, 0, c.Len()), vals: make([]ast.Value, 0, c.Len())}
		c.Foreach(func(k, v *ast.Term) {
			it.keys = append(it.keys, k.Value)
			it.vals = append(it.vals, v.Value)
		})
		return it
	}
	return iter{}
}

func (it *iter) next() (k, v ast.Value, ok bool) {
	i := it.i
	it.i++
	switch {
	case it.terms != nil:
		if i < len(it.terms) {
			return it.terms[i].Value, it.terms[i].Value, true
		}
	case it.arr != nil:
		if i < it.arr.Len() {
			return ast.InternedTerm(i).Value, it.arr.Elem(i).Value, true
		}
	default:
		if i < len(it.keys) {
			return it.keys[i], it.vals[i], true
		}
	}
	return nil, nil, false
}

// lookup is cur[k], as a reference sees it.
func (m *machine) lookup(cur, k ast.Value) (ast.Value, bool) {
	switch c := cur.(type) {
	case *lazyVal:
		return c.lookup(k)
	case ast.Object:
		x := c.Get(m.term(materialize(k)))
		if x == nil {
			return nil, false
		}
		return x.Value, true
	case *ast.Array:
		n, ok := k.(ast.Number)
		if !ok {
			return nil, false
		}
		i, ok := n.Int()
		if !ok || i < 0 || i >= c.Len() {
			return nil, false
		}
		return c.Elem(i).Value, true
	case ast.Set:
		k = materialize(k)
		if c.Contains(m.term(k)) {
			return k, true
		}
	}
	return nil, false
}

func equalValues(a, b ast.Value) bool {
	if la, ok := a.(*lazyVal); ok {
		if lb, ok := b.(*lazyVal); ok && la == lb {
			return true
		}
	}
	return ast.ValueEqual(materialize(a), materialize(b))
}

// builtin calls a built-in function with OPA's own implementation (or an
// equivalent native one).
func (m *machine) builtin(e *expr, base int, c cont) error {
	n := len(e.terms)
	if e.out {
		n--
	}
	mark := len(m.vals)
	if ok, err := m.pushArgs(e.terms[:n], base); !ok {
		return err
	}
	args := m.vals[mark:]
	for i, a := range args {
		if l, ok := a.(*lazyStr); ok {
			args[i] = l.value()
		}
	}
	if e.native != nil {
		out, ok, done := e.native(m, args)
		if done {
			m.vals = m.vals[:mark]
			if !ok {
				return nil
			}
			return m.output(e, n, out, base, c)
		}
	}
	// OPA's implementation gets terms of its own: a built-in may put an
	// operand term into its result.
	ops := make([]*ast.Term, n)
	for i, v := range args {
		ops[i] = ast.NewTerm(materialize(v))
	}
	m.vals = m.vals[:mark]
	start := len(m.outs)
	err := e.fn(m.bctx, ops, m.collect)
	if err != nil {
		if isHalt(err) {
			m.outs = m.outs[:start]
			return errFallback
		}
		// Other built-in errors make the expression undefined (OPA with
		// strict built-in errors off); outputs already produced stand.
	}
	end := len(m.outs)
	for i := start; i < end; i++ {
		if err := m.output(e, n, m.outs[i], base, c); err != nil {
			m.outs = m.outs[:start]
			return err
		}
	}
	m.outs = m.outs[:start]
	return nil
}

// output handles one result of a call: unified with the output term, or
// tested for false.
func isHalt(err error) bool {
	var h topdown.Halt
	return errors.As(err, &h)
}

func (m *machine) output(e *expr, n int, out ast.Value, base int, c cont) error {
	if e.out {
		return m.unifyOut(&e.terms[n], out, base, c)
	}
	if isFalse(out) {
		return nil
	}
	return m.next(c)
}

func (m *machine) unifyOut(t *term, v ast.Value, base int, c cont) error {
	if t.kind == tVar {
		idx := base + int(t.slot)
		if cur := m.slots[idx]; cur != nil {
			if !equalValues(cur, v) {
				return nil
			}
			return m.next(c)
		}
		mark := len(m.trail)
		m.bind(idx, v)
		err := m.next(c)
		m.undo(mark)
		return err
	}
	return m.unifyValue(t, v, base, c)
}

// pushArgs evaluates a call's arguments onto m.vals. When one is
// undefined (the call fails: nil error) or cannot be evaluated exactly
// (errFallback), it leaves m.vals as it found it and returns false.
func (m *machine) pushArgs(terms []term, base int) (bool, error) {
	mark := len(m.vals)
	for i := range terms {
		v, ok, err := m.value(&terms[i], base)
		if err != nil || !ok {
			m.vals = m.vals[:mark]
			if err != nil {
				return false, errFallback
			}
			return false, nil
		}
		m.vals = append(m.vals, v)
	}
	return true, nil
}

// call evaluates a call of one of the residual's functions.
func (m *machine) call(e *expr, base int, c cont) error {
	rs := e.set
	mark := len(m.vals)
	if ok, err := m.pushArgs(e.terms[:rs.arity], base); !ok {
		return err
	}
	v, err := m.callFunc(rs, m.vals[mark:])
	m.vals = m.vals[:mark]
	if err != nil || v == nil {
		return err
	}
	return m.output(e, rs.arity, v, base, c)
}

func (m *machine) callFunc(rs *ruleSet, args []ast.Value) (ast.Value, error) {
	mm := &m.memo[rs.id]
	for i := range mm.calls {
		if sameArgs(mm.calls[i].args, args) {
			return mm.calls[i].val, nil
		}
	}
	if mm.state == 1 {
		return nil, errFallback // recursion: not Rego
	}
	if rs.comp != nil && !m.interpOnly {
		val, err := m.evalCompiled(rs, args)
		if err != nil {
			return nil, err
		}
		start := len(m.keep)
		m.keep = append(m.keep, args...)
		mm.calls = append(mm.calls, funcMemo{args: m.keep[start:len(m.keep):len(m.keep)], val: val})
		return val, nil
	}
	mm.state = 1
	// args live on the argument stack: keep a copy for the memo, and
	// evaluate with it (the stack moves on).
	start := len(m.keep)
	m.keep = append(m.keep, args...)
	args = m.keep[start:len(m.keep):len(m.keep)]
	k := m.collector(colValue)
	err := m.evalDefs(rs, args, k)
	val := m.cols[k].val
	m.popCollector(k)
	mm = &m.memo[rs.id]
	mm.state = 0
	if err != nil {
		return nil, err
	}
	mm.calls = append(mm.calls, funcMemo{args: args, val: val})
	return val, nil
}

func sameArgs(a, b []ast.Value) bool {
	for i := range a {
		if !equalValues(a[i], b[i]) {
			return false
		}
	}
	return true
}

// setValue is the value of a complete rule or a partial set (nil when
// undefined), computed once per evaluation.
func (m *machine) setValue(rs *ruleSet) (ast.Value, error) {
	mm := &m.memo[rs.id]
	switch mm.state {
	case 2:
		return mm.val, nil
	case 1:
		return nil, errFallback
	}
	if rs.comp != nil && !m.interpOnly {
		v, err := m.evalCompiled(rs, nil)
		if err != nil {
			return nil, err
		}
		mm.state, mm.val = 2, v
		return v, nil
	}
	mm.state = 1
	var k int
	if rs.kind == kindSet {
		k = m.collector(colSet)
	} else {
		k = m.collector(colValue)
	}
	err := m.evalDefs(rs, nil, k)
	col := m.cols[k]
	m.popCollector(k)
	mm = &m.memo[rs.id]
	if err != nil {
		mm.state = 0
		return nil, err
	}
	mm.state = 2
	if rs.kind == kindSet {
		if col.set == nil {
			mm.val = ast.InternedEmptySetValue // shared: never added to
		} else {
			mm.val = col.set
		}
	} else {
		mm.val = col.val
	}
	return mm.val, nil
}

// evalDefs evaluates the definitions of a rule set (those OPA's index
// selects), their else branches and the default, as topdown does.
func (m *machine) evalDefs(rs *ruleSet, args []ast.Value, k int) error {
	if rs.index == nil {
		return m.evalRules(rs.rules, rs.def, args, k)
	}
	mark := len(m.ibuf)
	m.candidates(rs, args)
	rmark := len(m.rbuf)
	for _, i := range m.ibuf[mark:] {
		m.rbuf = append(m.rbuf, rs.rules[i])
	}
	m.ibuf = m.ibuf[:mark]
	err := m.evalRules(m.rbuf[rmark:len(m.rbuf):len(m.rbuf)], rs.def, args, k)
	clear(m.rbuf[rmark:])
	m.rbuf = m.rbuf[:rmark]
	return err
}

// evalRules evaluates definitions, their else branches and the default, as
// topdown does.
func (m *machine) evalRules(rules []*rule, def *rule, args []ast.Value, k int) error {
	for _, r := range rules {
		if r.memoSlot > 0 && m.names != nil && m.cols[k].mode == colSet {
			if err := m.headerRule(r, k); err != nil {
				return err
			}
			continue
		}
		m.cols[k].got = false
		run := true
		if r.pre != nil && !m.interpOnly {
			ok, err := m.holds(r.pre, args)
			if err != nil {
				return err
			}
			run = ok // the body would fail where its prefix does
		}
		if run {
			if err := m.evalRule(r, args, k); err != nil {
				return err
			}
		}
		if m.cols[k].got || m.cols[k].mode == colSet {
			continue
		}
		for _, er := range r.elses {
			if err := m.evalRule(er, args, k); err != nil {
				return err
			}
			if m.cols[k].got {
				break
			}
		}
	}
	if def != nil && m.cols[k].mode == colValue && m.cols[k].val == nil {
		return m.evalRule(def, args, k)
	}
	return nil
}

// evalRule evaluates one definition with its arguments bound.
func (m *machine) evalRule(r *rule, args []ast.Value, col int) error {
	base := m.frame(r.nslots)
	mark := len(m.trail)
	defer func() {
		m.undo(mark)
		m.slots = m.slots[:base]
	}()
	for i := range r.args {
		ok, err := m.match(&r.args[i], args[i], base)
		if err != nil {
			return err
		}
		if !ok {
			return nil
		}
	}
	return m.body(r, base, 0, col)
}
