package fastpath

import (
	"fmt"
	"math/rand/v2"
	"strings"
)

// policyGen writes random Rego policies over the input schema, for the
// differential tests of the fast path (FuzzGeneratedPolicies,
// TestGeneratedPoliciesDifferential): the constructs the residual
// interpreter implements (startswith/endswith/contains, equality,
// numbers in every spelling Rego accepts, in, not, sets, arrays, local
// variables, functions with default and else, complete rules with default
// and else, partial sets, conflicts) and those it must hand to the full
// evaluation (every, comprehensions, data references, iteration), mixed.
// Every choice comes from src: the fuzzer's bytes, then a PRNG they seed.
type policyGen struct {
	src   *genSource
	rules []genRule // helper rules written so far
	vars  int       // fresh variable counter (per rule)
}

type genType uint8

const (
	gBool genType = iota
	gStr
	gNum
	gStrSet // a set of strings
	nGenTypes
)

type genRule struct {
	name  string
	typ   genType // complete rules: the value's type; sets: gStrSet
	fn    bool
	arg   genType // functions: the argument's type
	depth int     // the rule's nesting level: rules refer only to shallower ones (no recursion)
}

// genSource hands out choices: the fuzzer's bytes first, then a PRNG seeded
// by them, so that any input is a complete policy and small mutations of
// the input are small changes of the policy.
type genSource struct {
	data []byte
	r    *rand.Rand
}

func newGenSource(data []byte) *genSource {
	var h uint64 = 14695981039346656037
	for _, b := range data {
		h = (h ^ uint64(b)) * 1099511628211
	}
	return &genSource{data: data, r: rand.New(rand.NewPCG(h, h^0x9e3779b97f4a7c15))}
}

func (s *genSource) intn(n int) int {
	if n <= 1 {
		return 0
	}
	if len(s.data) > 0 {
		b := s.data[0]
		s.data = s.data[1:]
		return int(b) % n
	}
	return s.r.IntN(n)
}

func (s *genSource) chance(outOf int) bool { return s.intn(outOf) == 0 }

func pickOne[T any](s *genSource, xs []T) T { return xs[s.intn(len(xs))] }

// The literals match the random inputs (inputGen and numericKeys).
var (
	genStrings = []string{"wh/", "wh/db/", "wh/db/t/", "wh/sales/", "wh/db/t2", "n/", "lake", "warehouse",
		"read", "write", "list", "delete", "GetObject", "PutObject", "alice", "analysts", "etl", "g001",
		".parquet", ".json", "data", "metadata", "db", "t", "range", "x-amz-acl", "user-agent", "GET",
		"10.0.0.7", "", "/", "arn:aws:s3:::lake/", "1", "01", "1.0", "s3:GetObject", "prod"}
	// Rego number literals: equal values in different spellings.
	genNumbers = []string{"0", "1", "1.0", "1e0", "10e-1", "0.1e1", "2", "2.0", "2e0", "3", "3.00", "4",
		"0.5", "5e-1", "-1", "-1.0", "1e1", "10", "10.0", "100", "1.5", "1700000000", "1.7e9", "0.0", "-0"}
)

// dataDoc is data.fz of the generated policies, as JSON (numbers keep their
// spelling, as OPA reads data files).
const genDataDoc = `{"fz": {
	"prefixes": ["wh/db/", "wh/sales/", "wh/db/t/"],
	"nums": [1, 2.0, 3e0, 0.5, 10],
	"one": 1.0,
	"groups": {"analysts": ["wh/db/t/", "wh/sales/"], "etl": ["wh/"], "g001": ["n/"]},
	"flags": {"read": true, "list": true, "write": false},
	"levels": {"1": "one", "2": "two", "01": "oh-one"}
}}`

func (g *policyGen) fresh() string {
	g.vars++
	return fmt.Sprintf("v%d", g.vars)
}

// env is what a body can use so far: bound variables by type, and the
// function's argument.
type genEnv struct {
	vars  [nGenTypes][]string
	depth int // rules referenced must be shallower than this
}

func (e *genEnv) clone() *genEnv {
	c := &genEnv{depth: e.depth}
	for i := range e.vars {
		c.vars[i] = append([]string(nil), e.vars[i]...)
	}
	return c
}

func (g *policyGen) strLit() string { return fmt.Sprintf("%q", pickOne(g.src, genStrings)) }
func (g *policyGen) numLit() string { return pickOne(g.src, genNumbers) }

// str is a string-valued term (it may be undefined for some inputs).
func (g *policyGen) str(e *genEnv, depth int) string {
	if len(e.vars[gStr]) > 0 && g.src.chance(3) {
		return pickOne(g.src, e.vars[gStr])
	}
	n := 14
	if depth > 1 {
		n = 9 // no composition
	}
	switch g.src.intn(n) {
	case 0, 1, 2:
		return "input.resource.key"
	case 3:
		return "input.resource.arn"
	case 4:
		return pickOne(g.src, []string{"input.source.ip", "input.resource.prefix", `input.request.headers.range`,
			`object.get(input.request.headers, "user-agent", "")`, `input.request.headers["x-amz-acl"]`})
	case 5:
		return pickOne(g.src, []string{"input.resource.bucket", "input.access", "input.operation", "input.action",
			"input.principal.id", "input.table.name", "input.request.method", "input.principal.groups[0]",
			"input.table.namespace[0]", "input.principal.claims.location", "input.copy_source.key"})
	case 6:
		if r, ok := g.ruleOf(e, gStr, false); ok {
			return r.name
		}
		return g.strLit()
	case 7:
		if r, ok := g.ruleOf(e, gStr, true); ok {
			return fmt.Sprintf("%s(%s)", r.name, g.arg(e, r.arg, depth+1))
		}
		return g.strLit()
	case 8:
		return g.strLit()
	case 9:
		return fmt.Sprintf("split(%s, %q)[%d]", g.str(e, depth+1), pickOne(g.src, []string{"/", ".", "-"}), g.src.intn(4))
	case 10:
		return fmt.Sprintf("%s(%s)", pickOne(g.src, []string{"lower", "upper", "trim_space"}), g.str(e, depth+1))
	case 11:
		return fmt.Sprintf("concat(%q, [%s, %s])", pickOne(g.src, []string{"", "/", ":"}), g.str(e, depth+1), g.str(e, depth+1))
	case 12:
		return fmt.Sprintf("trim_suffix(%s, %s)", g.str(e, depth+1), g.strLit())
	default:
		return fmt.Sprintf("sprintf(\"%%v-%%v\", [%s, %s])", g.str(e, depth+1), g.num(e, depth+1))
	}
}

// num is a number-valued term.
func (g *policyGen) num(e *genEnv, depth int) string {
	if len(e.vars[gNum]) > 0 && g.src.chance(3) {
		return pickOne(g.src, e.vars[gNum])
	}
	n := 12
	if depth > 1 {
		n = 4
	}
	switch g.src.intn(n) {
	case 0, 1:
		return g.numLit()
	case 2:
		return pickOne(g.src, []string{"input.version", "data.fz.one", "data.fz.nums[1]", "input.principal.claims.exp",
			"count(input.principal.groups)"})
	case 3:
		if r, ok := g.ruleOf(e, gNum, false); ok {
			return r.name
		}
		return g.numLit()
	case 4, 5:
		return fmt.Sprintf("count(split(%s, \"/\"))", g.str(e, depth+1))
	case 6, 7:
		// to_number keeps the spelling: "01", "1e0", "+1", ".5", "1_0"
		return fmt.Sprintf("to_number(split(%s, \"/\")[%d])", g.str(e, depth+1), 1+g.src.intn(2))
	case 8:
		return fmt.Sprintf("count(%s)", g.str(e, depth+1))
	case 9:
		return fmt.Sprintf("(%s %s %s)", g.num(e, depth+1), pickOne(g.src, []string{"+", "-", "*"}), g.num(e, depth+1))
	case 10:
		if r, ok := g.ruleOf(e, gNum, true); ok {
			return fmt.Sprintf("%s(%s)", r.name, g.arg(e, r.arg, depth+1))
		}
		return g.numLit()
	default:
		return fmt.Sprintf("count(%s)", g.set(e, depth+1))
	}
}

// set is a term for a collection of strings.
func (g *policyGen) set(e *genEnv, depth int) string {
	switch g.src.intn(8) {
	case 0:
		return fmt.Sprintf("{%s, %s}", g.strLit(), g.strLit())
	case 1:
		return fmt.Sprintf("split(%s, \"/\")", g.str(e, depth+1))
	case 2:
		return pickOne(g.src, []string{"data.fz.prefixes", "input.principal.groups", "input.table.namespace",
			"object.keys(input.request.headers)", "{k | some k, _ in input.request.headers}"})
	case 3, 4:
		if r, ok := g.ruleOf(e, gStrSet, false); ok {
			return r.name
		}
		return fmt.Sprintf("[%s]", g.str(e, depth+1))
	case 5:
		v := g.fresh()
		return fmt.Sprintf("{%s | some %s in split(%s, \"/\"); %s}", v, v, g.str(e, depth+1), g.strTest(v))
	case 6:
		return fmt.Sprintf("(%s | {%s})", g.setOnly(e, depth+1), g.str(e, depth+1))
	default:
		return fmt.Sprintf("{%s, %s}", g.str(e, depth+1), g.strLit())
	}
}

// setOnly is a term for a set (not an array) of strings.
func (g *policyGen) setOnly(e *genEnv, depth int) string {
	switch g.src.intn(4) {
	case 0:
		if r, ok := g.ruleOf(e, gStrSet, false); ok {
			return r.name
		}
		return fmt.Sprintf("{%s}", g.str(e, depth+1))
	case 1:
		v := g.fresh()
		return fmt.Sprintf("{%s | some %s in split(%s, \"/\")}", v, v, g.str(e, depth+1))
	case 2:
		return "{k | some k, _ in input.request.headers}"
	default:
		return fmt.Sprintf("{%s, %s}", g.str(e, depth+1), g.strLit())
	}
}

// constValue is a constant of type t (a default's value).
func (g *policyGen) constValue(t genType) string {
	switch t {
	case gBool:
		return pickOne(g.src, []string{"true", "false"})
	case gNum:
		return g.numLit()
	}
	return g.strLit()
}

// strTest is a test on a string term s.
func (g *policyGen) strTest(s string) string {
	switch g.src.intn(5) {
	case 0:
		return fmt.Sprintf("startswith(%s, %s)", s, g.strLit())
	case 1:
		return fmt.Sprintf("endswith(%s, %s)", s, g.strLit())
	case 2:
		return fmt.Sprintf("contains(%s, %s)", s, g.strLit())
	case 3:
		return fmt.Sprintf("%s == %s", s, g.strLit())
	default:
		return fmt.Sprintf("%s != %s", s, g.strLit())
	}
}

func (g *policyGen) arg(e *genEnv, t genType, depth int) string {
	switch t {
	case gNum:
		return g.num(e, depth)
	case gStrSet:
		return g.set(e, depth)
	}
	return g.str(e, depth)
}

// ruleOf picks a helper rule of type t shallower than the environment.
func (g *policyGen) ruleOf(e *genEnv, t genType, fn bool) (genRule, bool) {
	var c []genRule
	for _, r := range g.rules {
		if r.typ == t && r.fn == fn && r.depth < e.depth {
			c = append(c, r)
		}
	}
	if len(c) == 0 {
		return genRule{}, false
	}
	return pickOne(g.src, c), true
}

// literal is one expression of a body; it may bind variables in e.
func (g *policyGen) literal(e *genEnv, depth int) string {
	switch g.src.intn(30) {
	case 0, 1, 2, 3, 22, 23, 24, 25:
		return g.strTest(g.str(e, depth))
	case 26, 27:
		return fmt.Sprintf("%s == %s", pickOne(g.src, []string{"input.access", "input.resource.bucket", "input.operation", "input.principal.id"}), g.strLit())
	case 28:
		return fmt.Sprintf("%s == %s", g.num(e, depth), g.numLit())
	case 4:
		return fmt.Sprintf("startswith(%s, %s)", g.str(e, depth), pickOne(g.src, []string{`"wh/db/"`, `"wh/db/t/"`, `"n/1/"`, `"wh/sales/"`}))
	case 5:
		return fmt.Sprintf("%s %s %s", g.num(e, depth), pickOne(g.src, []string{"==", "!=", ">", ">=", "<", "<=", "="}), g.num(e, depth))
	case 6:
		return fmt.Sprintf("%s == %s", g.num(e, depth), g.numLit())
	case 7:
		return fmt.Sprintf("%s in %s", g.str(e, depth), g.set(e, depth))
	case 8:
		return "not " + g.simple(e, depth)
	case 9:
		v := g.fresh()
		s := fmt.Sprintf("some %s in %s", v, g.set(e, depth))
		e.vars[gStr] = append(e.vars[gStr], v)
		return s
	case 10:
		v := g.fresh()
		s := fmt.Sprintf("%s := %s", v, g.str(e, depth))
		e.vars[gStr] = append(e.vars[gStr], v)
		return s
	case 11:
		v := g.fresh()
		s := fmt.Sprintf("%s := %s", v, g.num(e, depth))
		e.vars[gNum] = append(e.vars[gNum], v)
		return s
	case 12:
		v := g.fresh()
		return fmt.Sprintf("every %s in %s { %s }", v, g.set(e, depth), g.strTest(v))
	case 13:
		v := g.fresh()
		return fmt.Sprintf("count([%s | some %s in split(%s, \"/\"); %s]) %s %s", v, v, g.str(e, depth), g.strTest(v),
			pickOne(g.src, []string{">", "==", "<"}), g.numLit())
	case 14:
		if r, ok := g.ruleOf(e, gBool, false); ok {
			return r.name
		}
		return g.strTest(g.str(e, depth))
	case 15:
		if r, ok := g.ruleOf(e, gBool, true); ok {
			return fmt.Sprintf("%s(%s)", r.name, g.arg(e, r.arg, depth+1))
		}
		return g.strTest(g.str(e, depth))
	case 16:
		p, v := g.fresh(), g.fresh()
		s := fmt.Sprintf("some %s in data.fz.groups[%s]; startswith(%s, %s)", p, pickOne(g.src, []string{`"analysts"`, `"etl"`, `"g001"`, "input.principal.groups[_]", "input.principal.groups[0]"}), g.str(e, depth), p)
		_ = v
		return s
	case 17:
		return fmt.Sprintf("object.get(data.fz.flags, %s, false)", g.str(e, depth))
	case 18:
		return fmt.Sprintf("data.fz.levels[%s] == %s", g.str(e, depth), pickOne(g.src, []string{`"one"`, `"two"`, `"oh-one"`}))
	case 19:
		k, v := g.fresh(), g.fresh()
		return fmt.Sprintf("some %s, %s in input.request.headers; %s; %s", k, v, g.strTest(k), g.strTest(v))
	case 20:
		return fmt.Sprintf("is_%s(%s)", pickOne(g.src, []string{"string", "null", "number"}), g.str(e, depth))
	default:
		return fmt.Sprintf("%s == %s", g.str(e, depth), g.str(e, depth))
	}
}

// simple is a literal that binds nothing (for not).
func (g *policyGen) simple(e *genEnv, depth int) string {
	for range 4 {
		s := g.literal(e.clone(), depth+1)
		if !strings.Contains(s, ";") && !strings.Contains(s, ":=") && !strings.HasPrefix(s, "some ") &&
			!strings.HasPrefix(s, "not ") && !strings.HasPrefix(s, "every ") {
			return s
		}
	}
	return g.strTest("input.resource.key")
}

func (g *policyGen) body(e *genEnv) string {
	n := 1 + g.src.intn(3)
	lits := make([]string, 0, n)
	for range n {
		lits = append(lits, g.literal(e, 0))
	}
	return strings.Join(lits, "; ")
}

func (g *policyGen) value(e *genEnv, t genType) string {
	switch t {
	case gBool:
		return pickOne(g.src, []string{"true", "false"})
	case gNum:
		if g.src.chance(3) {
			return g.num(e, 1)
		}
		return g.numLit()
	case gStrSet:
		return g.set(e, 1)
	}
	if g.src.chance(3) {
		return g.str(e, 1)
	}
	return g.strLit()
}

// helper writes one helper rule (several definitions) at nesting level d.
func (g *policyGen) helper(b *strings.Builder, i, d int) {
	t := genType(g.src.intn(int(nGenTypes)))
	r := genRule{typ: t, depth: d, fn: g.src.chance(4)}
	if r.fn {
		r.name = fmt.Sprintf("f%d", i)
		r.arg = pickOne(g.src, []genType{gStr, gStr, gNum})
		if t == gStrSet {
			r.typ = gStr // functions return scalars here
		}
	} else {
		r.name = fmt.Sprintf("h%d", i)
	}
	defs := 1 + g.src.intn(4)
	if r.fn && r.arg == gNum && g.src.chance(2) {
		defs = 8 + g.src.intn(3) // enough to be indexed: one equality test each
	}
	if r.fn && g.src.chance(3) {
		fmt.Fprintf(b, "default %s(_) := %s\n", r.name, g.constValue(r.typ))
	} else if !r.fn && r.typ != gStrSet && g.src.chance(3) {
		fmt.Fprintf(b, "default %s := %s\n", r.name, g.constValue(r.typ))
	}
	for k := range defs {
		g.vars = 0
		e := &genEnv{depth: d}
		head := r.name
		if r.fn {
			e.vars[r.arg] = append(e.vars[r.arg], "x")
			head = r.name + "(x)"
		}
		var body string
		if r.fn && r.arg == gNum && defs >= 8 {
			body = fmt.Sprintf("x == %s", genNumbers[(k+g.src.intn(3))%len(genNumbers)])
			if g.src.chance(3) {
				body += "; " + g.literal(e, 0)
			}
		} else {
			body = g.body(e)
		}
		switch {
		case r.typ == gStrSet && !r.fn:
			v := g.fresh()
			fmt.Fprintf(b, "%s contains %s if { %s; %s := %s }\n", head, v, body, v, g.str(e, 1))
		case r.typ == gBool && g.src.chance(2):
			fmt.Fprintf(b, "%s if { %s }\n", head, body)
		default:
			fmt.Fprintf(b, "%s := %s if { %s }", head, g.value(e, r.typ), body)
			for range g.src.intn(3) * btoi(g.src.chance(2)) {
				e2 := &genEnv{depth: d}
				if r.fn {
					e2.vars[r.arg] = []string{"x"}
				}
				if g.src.chance(3) {
					fmt.Fprintf(b, " else := %s", g.value(e2, r.typ))
					break
				}
				fmt.Fprintf(b, " else := %s if { %s }", g.value(e2, r.typ), g.body(e2))
			}
			b.WriteByte('\n')
		}
	}
	g.rules = append(g.rules, r)
}

func btoi(b bool) int {
	if b {
		return 1
	}
	return 0
}

// policy writes a whole decision package.
func (g *policyGen) policy() string {
	var b strings.Builder
	b.WriteString("package countersign.authz\n\n")
	nh := g.src.intn(6)
	for i := range nh {
		g.helper(&b, i, 1+i/2)
	}
	top := 1 + nh/2 + 1
	if g.src.intn(4) > 0 {
		b.WriteString("default allow := false\n")
	}
	if g.src.chance(4) {
		// grants-like: enough definitions on one path to be indexed
		for range 8 + g.src.intn(5) {
			g.vars = 0
			e := &genEnv{depth: top}
			fmt.Fprintf(&b, "allow if { %s(%s, %s); %s }\n", pickOne(g.src, []string{"startswith", "startswith", "endswith"}),
				pickOne(g.src, []string{"input.resource.key", "input.resource.key", "input.resource.arn", "input.source.ip"}),
				g.strLit(), g.literal(e, 0))
		}
	}
	for range 1 + g.src.intn(4) {
		g.vars = 0
		e := &genEnv{depth: top}
		if g.src.chance(6) {
			fmt.Fprintf(&b, "allow := true if { %s } else := false\n", g.body(e))
			continue
		}
		fmt.Fprintf(&b, "allow if { %s }\n", g.body(e))
	}
	switch g.src.intn(4) {
	case 0:
		g.vars = 0
		e := &genEnv{depth: top}
		fmt.Fprintf(&b, "reason := sprintf(\"%%v\", [%s]) if not allow\n", g.str(e, 0))
	case 1:
		if r, ok := g.ruleOf(&genEnv{depth: top}, gStr, false); ok {
			fmt.Fprintf(&b, "reason := %s\n", r.name)
		}
	case 2:
		g.vars = 0
		e := &genEnv{depth: top}
		fmt.Fprintf(&b, "reason := %s if { %s }\n", g.strLit(), g.body(e))
	}
	return b.String()
}

// numericKeys are object keys whose segments to_number reads in odd
// spellings (it keeps them: "01" stays 01).
var numericKeys = []string{"n/1/x.parquet", "n/1.0/x", "n/01/x", "n/1e0/x", "n/10e-1/2", "n/2/1", "n/2.0/x",
	"n/0.5/x", "n/-1/x", "n/+1/x", "n/.5/x", "n/1_0/x", "n/10/x", "n/abc/x", "n/1/01", "wh/db/t/1/2.parquet",
	"n/0x10/x", "n/1e400/x", "n/-0/0.0", "n/3.00/3"}
