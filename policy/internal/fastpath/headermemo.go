package fastpath

import (
	"github.com/open-policy-agent/opa/v1/ast"
)

// Header rules, remembered by header names.
//
// Policies screen the request's headers with partial-set rules such as
//
//	deny contains msg if { some name, _ in input.request.headers; startswith(lower(name), "x-amz-grant-"); msg := ... }
//
// whose residual definitions iterate over every header, several built-in
// calls each: about half of a residual's evaluation for the example
// policies. Such a definition reads nothing of the object but the header
// names (and values, when it uses one), and a scan's requests all carry
// the same names. A definition is a header rule when, statically, every
// input reference of its body and head is under input.request.headers,
// and it calls no rule or function of the residual (only built-ins, which
// are pure: builtins.go). Its elements then depend on the scope (fixed for
// the program), the header names, and the header values it reads. When an
// evaluation of it read no header value and produced only scalar elements
// (immutable, so they can be shared between goroutines), the elements are
// remembered with the header names' exact encoding (appendHeaderNames);
// the next object with the same names gets them without evaluating the
// body. Errors (fallbacks) are never remembered: the body is evaluated.
//
// Each program keeps one memo, for the last header names seen: a scan has
// one set of names, and a different one just replaces it.

// headerMemo is a program's remembered header rules for one set of header
// names. It is immutable once published.
type headerMemo struct {
	names string
	elems [][]ast.Value // by memoSlot-1; nil: not remembered
	done  []bool
}

// headerEntry is a header rule's result in the current evaluation, to
// publish when it ends.
type headerEntry struct {
	slot  int
	elems []ast.Value
}

// isHeaderRule reports whether r qualifies (see above).
func isHeaderRule(r *rule) bool {
	if r.set.kind != kindSet || len(r.args) > 0 || len(r.elses) > 0 {
		return false
	}
	for i := range r.body {
		e := &r.body[i]
		if e.kind == exFunc {
			return false
		}
		for j := range e.terms {
			if !headerTerm(&e.terms[j]) {
				return false
			}
		}
		for _, d := range e.defined {
			if !headerRef(d) {
				return false
			}
		}
	}
	return headerTerm(&r.head)
}

func headerTerm(t *term) bool {
	switch t.kind {
	case tRef:
		return headerRef(t.ref)
	case tArray, tObject, tSet:
		for i := range t.elems {
			if !headerTerm(&t.elems[i]) {
				return false
			}
		}
	}
	return true
}

func headerRef(r *refTerm) bool {
	switch r.head {
	case headRule:
		return false
	case headInput:
		if len(r.path) < 2 || !constString(&r.path[0], "request") || !constString(&r.path[1], "headers") {
			return false
		}
	}
	for i := range r.path {
		if !headerTerm(&r.path[i]) {
			return false
		}
	}
	return true
}

func constString(t *term, s string) bool {
	c, ok := t.c.(ast.String)
	return t.kind == tConst && ok && string(c) == s
}

// numberHeaderRules gives the program's header rules their memo slots.
func (p *program) numberHeaderRules() {
	for _, rs := range p.sets {
		if rs == p.query {
			continue // its tuples are the decision, not a set
		}
		for _, r := range rs.rules {
			if isHeaderRule(r) {
				p.nHeaderRules++
				r.memoSlot = p.nHeaderRules
			}
		}
	}
}

// headerRule evaluates header rule r into the set collector k, or adds the
// elements remembered for this object's header names.
func (m *machine) headerRule(r *rule, k int) error {
	if hm := m.hmemo; hm != nil && hm.done[r.memoSlot-1] {
		m.hhits++
		return m.addElems(k, hm.elems[r.memoSlot-1])
	}
	read := m.in.valuesRead
	m.in.valuesRead = false
	tk := m.collector(colSet)
	err := m.evalRule(r, nil, tk)
	set := m.cols[tk].set
	m.popCollector(tk)
	readHere := m.in.valuesRead
	m.in.valuesRead = read || readHere
	if err != nil {
		return err
	}
	var elems []ast.Value
	remember := !readHere
	if set != nil {
		elems = make([]ast.Value, 0, set.Len())
		set.Foreach(func(t *ast.Term) {
			switch t.Value.(type) {
			case ast.String, ast.Number, ast.Boolean, ast.Null:
			default:
				remember = false
			}
			elems = append(elems, t.Value)
		})
	}
	if remember {
		m.hnew = append(m.hnew, headerEntry{slot: r.memoSlot - 1, elems: elems})
	}
	return m.addElems(k, elems)
}

func (m *machine) addElems(k int, elems []ast.Value) error {
	if len(elems) == 0 {
		return nil
	}
	c := &m.cols[k]
	if c.set == nil {
		c.set = ast.NewSet()
	}
	for _, v := range elems {
		c.set.Add(m.term(v))
	}
	return nil
}

// startHeaderMemo gives the evaluation the program's memo when it is for
// names (the object's appendHeaderNames).
func (m *machine) startHeaderMemo(names []byte) {
	if m.p.nHeaderRules == 0 {
		return
	}
	// A copy in the machine's own buffer: names is the caller's stack.
	m.nameBuf = append(m.nameBuf[:0], names...)
	m.names = m.nameBuf
	if hm := m.p.headerMemo.Load(); hm != nil && hm.names == string(names) {
		m.hmemo = hm
	}
}

// publishHeaderMemo adds what this evaluation remembered to the program's
// memo (a new one: published memos are never changed).
func (m *machine) publishHeaderMemo() {
	if len(m.hnew) == 0 {
		return
	}
	n := m.p.nHeaderRules
	hm := &headerMemo{names: string(m.names), elems: make([][]ast.Value, n), done: make([]bool, n)}
	if old := m.hmemo; old != nil {
		copy(hm.elems, old.elems)
		copy(hm.done, old.done)
	}
	for _, e := range m.hnew {
		hm.elems[e.slot], hm.done[e.slot] = e.elems, true
	}
	m.p.headerMemo.Store(hm)
}
