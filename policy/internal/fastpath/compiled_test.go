package fastpath

import (
	"context"
	"fmt"
	"hash/maphash"
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/countersign/countersign/internal/policyinput"
	"github.com/open-policy-agent/opa/v1/ast"
)

// guardPolicy is a random policy whose residuals are mostly of the
// compiled shape (compiled.go): sets, complete rules and functions of
// tests on the object's fields, with constant values, some conflicting,
// some reading a header's value or another set's count, next to rules the
// interpreter keeps.
func guardPolicy(r *rand.Rand) string {
	lits := []string{`"wh/"`, `"wh/db/"`, `"wh/db/t/"`, `"wh/db1/"`, `"wh/sales/"`, `"n/"`, `"wh/db/t/data/"`, `"arn:aws:s3:::lake/wh/"`, `""`, `"wh/db/t"`, `"x"`}
	lit := func() string { return lits[r.IntN(len(lits))] }
	test := func(res string) string {
		switch r.IntN(21) {
		case 16:
			return fmt.Sprintf("not object.get(input, \"access\", null) in {%q, \"write\"}", []string{"read", "list", "admin"}[r.IntN(3)])
		case 17:
			return fmt.Sprintf("object.get(%s, \"key\", \"\") in [%s, %s]", res, lit(), lit())
		case 18:
			return fmt.Sprintf("object.get(%s, \"nokey\", 1) == %d", res, r.IntN(2))
		case 19:
			return fmt.Sprintf("object.get(%s.key, \"x\", 1) == 1", res) // not an object: undefined
		case 20:
			return fmt.Sprintf("not object.get(%s, \"prefix\", 0) in {null}", res)
		case 0:
			return fmt.Sprintf("startswith(%s.key, %s)", res, lit())
		case 1:
			return fmt.Sprintf("not startswith(%s.key, %s)", res, lit())
		case 2:
			return fmt.Sprintf("is_string(%s.prefix)", res)
		case 3:
			return fmt.Sprintf("not is_string(%s.prefix)", res)
		case 4:
			return fmt.Sprintf("startswith(%s.prefix, %s)", res, lit()) // null: an error, undefined
		case 5:
			return fmt.Sprintf("not startswith(%s.prefix, %s)", res, lit())
		case 6:
			return fmt.Sprintf("%s.key == %s", res, lit())
		case 7:
			return fmt.Sprintf("%s.version_id == \"\"", res)
		case 8:
			return fmt.Sprintf("startswith(%s.arn, %s)", res, lit())
		case 9:
			return fmt.Sprintf("%s.missing == 1", res) // undefined
		case 10:
			return fmt.Sprintf("not %s.missing == 1", res)
		case 11:
			return `input.request.headers.range == "bytes=0-99"`
		case 12:
			return `startswith(input.request.headers.range, "bytes=1")`
		case 13:
			return `input.source.ip == "10.0.0.7"`
		case 14:
			return fmt.Sprintf("%s.bucket == %q", res, []string{"lake", "raw"}[r.IntN(2)])
		default:
			return fmt.Sprintf("startswith(%s.key, %s)", res, lit())
		}
	}
	body := func(res string, n int) string {
		ts := make([]string, 0, n)
		for range n {
			ts = append(ts, test(res))
		}
		return strings.Join(ts, "; ")
	}
	var b strings.Builder
	b.WriteString("package countersign.authz\n\ndefault allow := false\n")
	b.WriteString("allow if { count(deny) == 0; count(permit) > 0 }\n")
	elems := []string{`"a"`, `"b"`, `"c"`, `"d"`, `"e"`, `"f"`}
	ne := 1 + r.IntN(len(elems)) // more than maxPrebuilt sometimes
	// enough definitions for the index, sometimes
	for range 2 + r.IntN(12) {
		fmt.Fprintf(&b, "permit contains %s if { %s }\n", elems[r.IntN(ne)], body("input.resource", 1+r.IntN(3)))
	}
	if r.IntN(2) == 0 {
		fmt.Fprintf(&b, "permit contains \"t\" if { count(scoped) == %d; %s }\n", r.IntN(2), body("input.resource", 1))
	}
	for range 1 + r.IntN(4) {
		fmt.Fprintf(&b, "inside(res) if { %s }\n", body("res", 1+r.IntN(3)))
	}
	fmt.Fprintf(&b, "scoped contains \"out\" if { not inside(input.resource) }\n")
	fmt.Fprintf(&b, "deny contains \"outside\" if { not inside(input.resource); %s }\n", body("input.resource", 1))
	if r.IntN(2) == 0 {
		fmt.Fprintf(&b, "deny contains msg if { not inside(input.resource); msg := sprintf(\"%%v outside\", [input.resource.arn]) }\n")
	}
	if r.IntN(2) == 0 { // counts compared, a rule's value as another's
		fmt.Fprintf(&b, "permit contains \"n\" if { count(scoped) %s %d }\n", []string{">", ">=", "<", "<=", "==", "!="}[r.IntN(6)], r.IntN(3))
	}
	if r.IntN(2) == 0 {
		fmt.Fprintf(&b, "key := k if { k := input.resource.key; %s }\n", body("input.resource", 1))
		fmt.Fprintf(&b, "key := k if { k := input.resource.arn; %s }\n", body("input.resource", 1))
		fmt.Fprintf(&b, "deny contains \"key\" if { key %s %s }\n", []string{">", "<", "==", "!="}[r.IntN(4)], lit())
		fmt.Fprintf(&b, "deny contains \"long\" if { count(key) > %d; %s }\n", 5+r.IntN(30), body("input.resource", 1))
	}
	if r.IntN(5) == 0 { // a function whose value may be false
		// (two definitions that may conflict: kept a function of the
		// residual)
		fmt.Fprintf(&b, "flag(res) := true if { %s }\n", body("res", 1))
		fmt.Fprintf(&b, "flag(res) := false if { %s }\n", body("res", 1))
		fmt.Fprintf(&b, "deny contains \"flag\" if { %sflag(input.resource) }\n", []string{"", "not "}[r.IntN(2)])
	}
	if r.IntN(2) == 0 { // a prefix of tests, then what only the interpreter does
		fmt.Fprintf(&b, "deny contains concat(\"/\", [\"pre\", input.resource.key]) if { %s; some x in [1, 2]; x > 1 }\n", body("input.resource", 1+r.IntN(2)))
	}
	vals := []string{"1", "2", `"x"`, "1.0"}
	nv := 1 + r.IntN(len(vals))
	for range 1 + r.IntN(4) {
		fmt.Fprintf(&b, "level := %s if { %s }\n", vals[r.IntN(nv)], body("input.resource", 1+r.IntN(2)))
	}
	if r.IntN(2) == 0 {
		fmt.Fprintf(&b, "default level := 0\n")
	}
	b.WriteString("reason := sprintf(\"%v %v %v\", [level, sort(permit), sort(deny)]) if not allow\n")
	return b.String()
}

// TestCompiledDifferential decides random inputs on random guard policies
// twice from the same residual, with its compiled rule sets and with the
// interpreter only: allow, reason and whether the fast path decided must
// agree, and both must agree with OPA. It fails when the compiled form is
// wrong (a test inverted, an undefined path taken as a value, a conflict
// missed).
func TestCompiledDifferential(t *testing.T) {
	seed := runSeed(t)
	policies := 300
	if testing.Short() || raceEnabled {
		policies = 60
	}
	ctx := context.Background()
	compiledScopes, decisions := 0, 0
	for i := range policies {
		r := rand.New(rand.NewPCG(seed, uint64(i)))
		src := guardPolicy(r)
		m, err := ast.ParseModuleWithOpts("guard.rego", src, ast.ParserOptions{RegoVersion: ast.RegoV1})
		if err != nil {
			t.Fatalf("policy %d does not parse: %v\n%s", i, err, src)
		}
		e, err := newEngine(ctx, "guard", []module{{name: "guard.rego", raw: []byte(src), parsed: m}}, genData(), "", Options{})
		if err != nil {
			t.Fatalf("policy %d: %v\n%s", i, err, src)
		}
		if e.fast == nil {
			t.Fatalf("policy %d has no fast path: %s\n%s", i, e.noFast, src)
		}
		forceBuild(e)
		e.fast.noMemo = true
		compiled := false
		for _, in := range genInputs(seed^uint64(i), 20) {
			e.fast.noCompiled = false
			ca, cr, cok := e.fast.Decide(ctx, in)
			e.fast.noCompiled = true
			ia, ir, iok := e.fast.Decide(ctx, in)
			if ca != ia || cr != ir || cok != iok {
				t.Fatalf("policy %d of seed %d (COUNTERSIGN_TEST_SEED=%d): compiled %v %q %v, interpreter %v %q %v\npolicy:\n%s\ninput: %s",
					i, seed, seed, ca, cr, cok, ia, ir, iok, src, describeInput(in))
			}
			if !compiled && cok {
				if s := e.fast.scopeOf(in); s != nil && s.prog != nil && s.prog.compiledSets() > 0 {
					compiled = true
				}
			}
			decisions++
			if !checkSame(t, e, in) {
				t.Fatalf("policy %d of seed %d: the fast path differs from OPA\n%s", i, seed, src)
			}
		}
		if compiled {
			compiledScopes++
		}
	}
	t.Logf("%d policies, %d with compiled rule sets, %d decisions", policies, compiledScopes, decisions)
	if compiledScopes < policies/2 {
		t.Errorf("only %d of %d policies had compiled rule sets", compiledScopes, policies)
	}
}

// TestCompiledShapes: the example policies' grant rules and table-scope
// functions are compiled; a rule set with a shape the compiler does not
// know is not.
func TestCompiledShapes(t *testing.T) {
	big := genGrants(1000)
	in := scanInputs(1)[0]
	for _, c := range []struct {
		policy string
		want   []string
	}{
		{"grants", []string{"countersign.authz.permit", "countersign.authz.allow", "countersign_fastpath.t0", "countersign_fastpath.t3"}},
		{"combined", []string{"countersign.authz.permit", "countersign.authz.allow", "__not", "countersign_fastpath.t1"}},
	} {
		e := testEngine(t, examplesRoot+"/"+c.policy, big, Options{})
		known, err := newKnownInput(in)
		if err != nil {
			t.Fatal(err)
		}
		p, err := e.fast.compileScope(known)
		if err != nil {
			t.Fatal(err)
		}
		for _, w := range c.want {
			found := false
			for _, rs := range p.sets {
				if strings.Contains(rs.path, w) && rs.comp != nil {
					found = true
				}
				if strings.HasSuffix(rs.path, ".reason") && rs.comp != nil {
					t.Errorf("%s: reason (sprintf, concat) compiled", c.policy)
				}
			}
			if !found {
				t.Errorf("%s: no compiled rule set %s", c.policy, w)
			}
		}
		if p.tuple == nil {
			t.Errorf("%s: the decision query is not compiled", c.policy)
		}
		// reason's definitions start with tests on deny and permit: a
		// prefilter each
		for _, rs := range p.sets {
			if strings.HasSuffix(rs.path, "authz.reason") {
				for i, r := range rs.rules {
					if len(r.pre) == 0 {
						t.Errorf("%s: reason's definition %d has no prefilter", c.policy, i)
					}
				}
			}
		}
	}
}

// scopeOf is in's scope in the cache, or nil.
func (f *Cache) scopeOf(in *policyinput.Input) *scope {
	key, ok := appendScopeKey(nil, in)
	if !ok {
		return nil
	}
	return f.lookup(maphash.Bytes(f.seed, key), key)
}

// compiledSets is how many of p's rule sets are compiled.
func (p *program) compiledSets() int {
	n := 0
	for _, rs := range p.sets {
		if rs.comp != nil {
			n++
		}
	}
	return n
}

// TestCompiledCallValues: a compiled call of a residual function holds
// when the function's value is defined and not false: true, false (a
// kept function with two values) and undefined, against OPA.
func TestCompiledCallValues(t *testing.T) {
	src := `package countersign.authz

default allow := false

f(res) := true if { startswith(res.key, "wh/db/t/") }
f(res) := false if { startswith(res.key, "wh/other/") }

allow if { not f(input.resource) }
reason := "f" if { f(input.resource) }
`
	e := moduleEngine(t, map[string]string{"authz.rego": src}, genData())
	forceBuild(e)
	e.fast.noMemo = true
	ctx := context.Background()
	calls := 0
	for _, key := range []string{"wh/db/t/data/1.parquet", "wh/other/x", "wh/x", "wh/db/t/y", "wh/other/"} {
		in := scanInputs(1)[0]
		in.Resource.Key, in.Resource.ARN = key, "arn:aws:s3:::lake/"+key
		for range 2 { // the second: from the residual
			if !checkSame(t, e, in) {
				t.Fatalf("key %s: the fast path differs from OPA", key)
			}
		}
		s := e.fast.scopeOf(in)
		if s == nil || s.prog == nil {
			t.Fatalf("key %s: no residual", key)
		}
		for _, rs := range s.prog.sets {
			if rs.comp != nil {
				for _, d := range rs.comp.defs {
					for _, x := range d.tests {
						if x.kind == testCall {
							calls++
						}
					}
				}
			}
			for _, r := range rs.rules {
				for _, x := range r.pre {
					if x.kind == testCall {
						calls++
					}
				}
			}
		}
		want := key == "wh/other/x" || key == "wh/x" || key == "wh/other/"
		if got, _, ok := e.fast.Decide(ctx, in); !ok || got != want {
			t.Errorf("key %s: allow %v (decided %v), want %v", key, got, ok, want)
		}
	}
	if calls == 0 {
		t.Error("no compiled call of f")
	}
}

// TestFieldOf: a compiled test's direct read of a per-object field is
// what walking its path through the lazy input returns.
func TestFieldOf(t *testing.T) {
	in := scanInputs(1)[0]
	p := "wh/db/"
	in.Resource.Prefix, in.Resource.VersionID = &p, "v1"
	known, err := newKnownInput(in)
	if err != nil {
		t.Fatal(err)
	}
	var o objInput
	o.reset(known, in)
	m := &machine{in: &o}
	n := 0
	for _, path := range [][]string{{"resource", "key"}, {"resource", "arn"}, {"resource", "prefix"}, {"resource", "version_id"}, {"source", "ip"},
		{"resource", "bucket"}, {"resource"}, {"request", "method"}, {"resource", "key", "x"}} {
		vals := make([]ast.Value, len(path))
		for i, s := range path {
			vals[i] = ast.String(s)
		}
		var want ast.Value = o.root()
		for _, k := range vals {
			want, _ = m.lookup(want, k)
		}
		f := fieldOf(vals)
		if f == fieldNone {
			continue
		}
		n++
		if got := o.field(f); got != want || materialize(got).Compare(materialize(want)) != 0 {
			t.Errorf("%v: field %d reads %v, the walk %v", path, f, got, want)
		}
	}
	if n != 5 {
		t.Errorf("%d fields read directly, want 5", n)
	}
}

// TestDecideInvalidUTF8: an object whose fields, header names or header
// values are not valid UTF-8 goes to the full evaluation (whose JSON
// round trip would alter them), the memo notwithstanding.
func TestDecideInvalidUTF8(t *testing.T) {
	e := testEngine(t, examplesRoot+"/grants", genGrants(100), Options{})
	forceBuild(e)
	ctx := context.Background()
	base := scanInputs(1)[0]
	if _, _, ok := e.fast.Decide(ctx, base); !ok {
		t.Fatal("the fast path did not decide a valid input")
	}
	for name, bad := range map[string]func(in *policyinput.Input){
		"key":          func(in *policyinput.Input) { in.Resource.Key = "wh/db/t/\xff" },
		"header value": func(in *policyinput.Input) { in.Request.Headers = in.Request.Headers.With("range", "bytes=\xff") },
		"header name":  func(in *policyinput.Input) { in.Request.Headers = in.Request.Headers.With("x-\xff", "v") },
	} {
		in := *base
		bad(&in)
		if _, _, ok := e.fast.Decide(ctx, &in); ok {
			t.Errorf("%s: invalid UTF-8 decided by the fast path", name)
		}
		if _, _, ok := e.fast.Decide(ctx, base); !ok {
			t.Errorf("%s: the valid input is no longer decided", name)
		}
	}
}

// TestCompiledObjectGet: object.get in a compiled rule: a present key, an
// absent one (the default) and a base that is not an object (OPA errs:
// undefined), against OPA and the interpreter.
func TestCompiledObjectGet(t *testing.T) {
	src := `package countersign.authz

default allow := false

permit contains "k" if { object.get(input.resource, "key", "") == "wh/db/t/a" }
permit contains "d" if { object.get(input.resource, "nokey", 7) == 7 }
permit contains "s" if { object.get(input.resource.key, "x", 1) == 1 }
permit contains "n" if { not object.get(input.resource.key, "x", 1) == 1 }
permit contains "r" if { not object.get(input, "access", null) in {"write", "list"} }
permit contains "p" if { object.get(input.resource, "prefix", 0) == null }

allow if { count(permit) == 4 }
reason := concat(",", sort(permit))
`
	allow, reason, ok, permit := decideKeyA(t, src)
	// n: the compiler takes object.get out of the negation, and its error
	// fails the body
	if !ok || !allow || reason != "d,k,p,r" {
		t.Errorf("allow %v reason %q (decided %v), want true \"d,k,p,r\"", allow, reason, ok)
	}
	if permit == nil {
		t.Error("permit is not compiled")
	}
}

// decideKeyA is the fast path's decision under policy src for a scan
// read of key wh/db/t/a, after checking it against OPA twice (the
// residual built, then used), and the residual's permit set compiled, or
// nil.
func decideKeyA(t *testing.T, src string) (allow bool, reason string, ok bool, permit *compiledSet) {
	t.Helper()
	e := moduleEngine(t, map[string]string{"authz.rego": src}, genData())
	forceBuild(e)
	e.fast.noMemo = true
	in := scanInputs(1)[0]
	in.Resource.Key, in.Resource.ARN = "wh/db/t/a", "arn:aws:s3:::lake/wh/db/t/a"
	for range 2 {
		if !checkSame(t, e, in) {
			t.Fatal("the fast path differs from OPA")
		}
	}
	allow, reason, ok = e.fast.Decide(context.Background(), in)
	if s := e.fast.scopeOf(in); s != nil && s.prog != nil {
		permit = s.prog.byPath["data.countersign_residual.countersign.authz.permit"].comp
	}
	return allow, reason, ok, permit
}

// TestCompiledCountComparisons: a count compared with an integer constant
// on either side, by every operator (compared as ints, countInt), with a
// constant that is not an integer's spelling (the generic comparison),
// and a count that errs (of a number: undefined), against OPA and the
// interpreter.
func TestCompiledCountComparisons(t *testing.T) {
	src := `package countersign.authz

default allow := false

permit contains "gt" if { count(input.resource.key) > 8 }
permit contains "lt-rev" if { 8 < count(input.resource.key) }
permit contains "gte-rev" if { 9 >= count(input.resource.key) }
permit contains "lte" if { count(input.resource.key) <= 9 }
permit contains "eq" if { count(input.resource.key) == 9 }
permit contains "neq" if { count(input.resource.key) != 9 }
permit contains "eq-float" if { count(input.resource.key) == 9.0 }
permit contains "gt-rev-false" if { 9 > count(input.resource.key) }
permit contains "num" if { count(input.version) == 1 }
permit contains "not-num" if { not count(input.version) == 1 }

allow if { count(permit) > 0 }
reason := concat(",", sort(permit))
`
	allow, reason, ok, permit := decideKeyA(t, src) // the key has 9 runes
	if want := "eq,eq-float,gt,gte-rev,lt-rev,lte"; !ok || !allow || reason != want {
		t.Errorf("allow %v reason %q (decided %v), want true %q", allow, reason, ok, want)
	}
	if permit == nil {
		t.Fatal("permit is not compiled")
	}
	var ints int
	for _, d := range permit.defs {
		for _, x := range d.tests {
			if x.countInt {
				ints++
			}
		}
	}
	if ints < 7 {
		t.Errorf("%d of the integer comparisons compiled as countInt, want at least 7", ints)
	}
}
