package fastpath

import (
	"context"
	"fmt"
	"testing"

	"github.com/countersign/countersign/internal/policyinput"
)

// numberTierPolicy keeps tier as a function of the residual (its last
// definition can overlap the others, so it may conflict) with one equality
// test per definition on its argument: the index files the definitions by
// those constants, spelled 1.0, 2e0, 3.00, 04... (Rego reads 04 as 4). Its
// argument is a number computed from the object's key: its depth, or its
// first segment through to_number (which keeps the spelling: "01" is 01).
const numberTierPolicy = `package countersign.authz

tier(n) := "one" if n == 1.0
tier(n) := "two" if n == 2e0
tier(n) := "three" if n == 3.00
tier(n) := "four" if n == 4
tier(n) := "five" if n == 0.5e1
tier(n) := "six" if n == 6.0
tier(n) := "seven" if n == 70e-1
tier(n) := "eight" if n == 8
tier(n) := "many" if n > 8

default allow := false

allow if tier(count(split(input.resource.key, "/"))) == "four"
allow if tier(to_number(split(input.resource.key, "/")[0])) == "one"

reason := concat(",", [tier(count(split(input.resource.key, "/"))), object.get(input, "none", "-")])
`

// TestIndexNumbersByValue: an equality guard on a number matches the
// values OPA's == matches, whatever their spelling. The index used to key
// numbers by their text, so 4 never found the definition testing 4.00.
func TestIndexNumbersByValue(t *testing.T) {
	e := moduleEngine(t, map[string]string{"authz.rego": numberTierPolicy}, nil)
	if e.fast == nil {
		t.Fatalf("no fast path: %s", e.noFast)
	}
	forceBuild(e)
	ctx := context.Background()
	scope := scanInputs(1)[0]
	cases := []struct {
		key   string
		allow bool
	}{
		{"a/b/c/d", true},    // depth 4
		{"a/b/c", false},     // three
		{"1/x/y", true},      // to_number("1") == 1.0
		{"1.0/x/y", true},    // spelled as the literal
		{"01/x/y", true},     // to_number("01") is 01
		{"1e0/x/y", true},    // and 1e0
		{"10e-1/x/y", true},  // and 10e-1
		{"2/x/y", false},     // two
		{"0.999/x/y", false}, // not one
		{"x/y", false},       // to_number fails: undefined
		{"a/b/c/d/e/f/g/h/i", false},
	}
	for i, c := range cases {
		in := *scope
		in.Resource.Key = c.key
		in.Resource.ARN = "arn:aws:s3:::lake/" + c.key
		if i == 0 {
			checkSame(t, e, &in) // builds the scope
		}
		want, err := e.authorizeRego(ctx, &in)
		if err != nil {
			t.Fatalf("%s: %v", c.key, err)
		}
		if want.Allow != c.allow {
			t.Fatalf("%s: OPA says %v, the test expects %v", c.key, want.Allow, c.allow)
		}
		got, ok := decideFast(ctx, e, &in)
		if !ok {
			t.Errorf("%s: the fast path did not decide", c.key)
			continue
		}
		if got != want {
			t.Errorf("%s: fast path %+v, OPA %+v", c.key, got, want)
		}
	}
	// The residual kept tier, indexed: the test exercises the index.
	indexed := false
	for _, s := range e.fast.l2.Values() {
		if s.prog == nil {
			t.Fatalf("unsupported residual: %v", s.err)
		}
		for _, rs := range s.prog.sets {
			if rs.kind == kindFunc && rs.index != nil {
				indexed = true
			}
		}
	}
	if !indexed {
		t.Fatal("no indexed function in the residual: the test tests nothing")
	}
}

// decideFast is the fast path's decision alone (ok false: it would fall
// back to the full evaluation).
func decideFast(ctx context.Context, e *Engine, in *policyinput.Input) (policyinput.Decision, bool) {
	allow, reason, ok := e.fast.Decide(ctx, in)
	return policyinput.Decision{Allow: allow, Reason: reason, Revision: e.revision}, ok
}

var _ = fmt.Sprintf
