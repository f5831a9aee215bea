package fastpath

import (
	"context"
	"strings"
	"testing"
)

// TestPartialEvalCaveats: the two ways FuzzGeneratedPolicies found for a
// residual to differ from the full evaluation (pecaveats.go). Each policy
// is decided for a key where they differed; the fast path must give OPA's
// answer (it does so by leaving these policies to full evaluations).
func TestPartialEvalCaveats(t *testing.T) {
	cases := []struct {
		name, src, key string
		allow, err     bool   // what OPA says for key
		scopeErr       string // why the scope is given up, if not the caveat
	}{{
		// copy propagation turned this into `not x[3] = "1"`, true when
		// the key has fewer than four dots: the fast path allowed.
		name: "negated copy",
		src: `package countersign.authz
default allow := false
allow if { v1 := split(input.resource.key, ".")[3]; not data.fz.levels[v1] == "one" }`,
		key: "wh/db/t/a.parquet", allow: false,
	}, {
		// f conflicts for this key; OPA evaluates f(3) before failing on
		// the constant test, so the decision is an error. Partial
		// evaluation dropped h's branch, conflict and all: the fast path
		// allowed.
		name: "dropped conflict",
		src: `package countersign.authz
f(x) := "a" if { input.resource.key != "" }
f(x) := "b" if { startswith(input.resource.key, "wh/") }
h := "y" if { f(3) == "z"; startswith("read", "wh/") }
allow if startswith(input.resource.key, "wh/")`,
		key: "wh/db/t/a.parquet", err: true,
	}, {
		// The later expression reads r, which depends on the key, but
		// partial evaluation inlines r and knows its value (1): r == 2
		// fails on the scope and drops f's call, conflict and all.
		name: "conflict dropped by an inlined rule",
		src: `package countersign.authz
f(x) := "a" if { x == 1; input.resource.key != "" }
f(x) := "b" if { x == 1; startswith(input.resource.key, "wh/") }
r := 1 if { input.resource.key != "" }
allow if { f(1) == "a"; r == 2 }`,
		key: "wh/db/t/a.parquet", err: true,
	}, {
		// g reaches f; inlined into allow, its saved call is dropped by
		// the later expression (found by FuzzGeneratedPolicies with a
		// constant test after the call).
		name: "conflict dropped in the caller",
		src: `package countersign.authz
f(x) := "a" if { x == 1; input.resource.key != "" }
f(x) := "b" if { x == 1; startswith(input.resource.key, "wh/") }
g if f(1) == "a"
allow if { g; input.principal.id == "bob" }`,
		key: "wh/db/t/a.parquet", err: true,
	}, {
		// The fuzzer's finding: an operator (eq) counted as a dependent
		// variable made "1.0 == 0.5" look saved.
		name: "conflict dropped by a constant test",
		src: `package countersign.authz
f(x) := "a" if { x == 1; input.resource.key != "" }
f(x) := "b" if { x == 1; startswith(input.resource.key, "wh/") }
allow if { f(1) == "c"; 1.0 == 0.5 }`,
		key: "wh/db/t/a.parquet", err: true,
	}, {
		// OPA's copy propagation drops A == A as a no-op, though it is
		// false when A is undefined (found by FuzzGeneratedPolicies): the
		// fast path allowed requests without the header.
		name: "self-equality",
		src: `package countersign.authz
allow if { input.request.headers["x-amz-acl"] == input.request.headers["x-amz-acl"]; startswith(input.resource.key, "wh/") }`,
		key: "wh/db/t/a.parquet", allow: false, scopeErr: "an equality of a reference with itself",
	}, {
		// f does not depend on the object, so partial evaluation
		// evaluates f("alice") itself and takes both values as branches
		// (it reports no conflicts): the fast path allowed. OPA's full
		// evaluation fails with a conflict. The tracer gives the scope up.
		name: "evaluated function conflict",
		src: `package countersign.authz
f(x) := "a" if { x == "alice" }
f(x) := "b" if { startswith(x, "al") }
allow if { f(input.principal.id) == "a"; startswith(input.resource.key, "wh/") }`,
		key: "wh/db/t/a.parquet", err: true, scopeErr: "function data.countersign.authz.f",
	}}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			e := moduleEngine(t, map[string]string{"authz.rego": c.src}, genData())
			if e.fast == nil {
				t.Fatalf("no fast path: %s", e.noFast)
			}
			forceBuild(e)
			ctx := context.Background()
			in := scanInputs(1)[0]
			in.Resource.Key = c.key
			want, werr := e.authorizeRego(ctx, in)
			if want.Allow != c.allow || (werr != nil) != c.err {
				t.Fatalf("OPA: %+v %v; the test expects allow %v, error %v", want, werr, c.allow, c.err)
			}
			for range 3 { // the first builds the scope
				got, gerr := e.Authorize(ctx, in)
				if got != want || (gerr != nil) != (werr != nil) {
					t.Fatalf("fast path %+v %v, OPA %+v %v", got, gerr, want, werr)
				}
			}
			if c.err || c.scopeErr != "" {
				why := "partial evaluation can drop"
				if c.scopeErr != "" {
					why = c.scopeErr
				}
				for _, s := range e.fast.l2.Values() {
					if s.err == nil || !strings.Contains(s.err.Error(), why) {
						t.Errorf("scope: %v, want unsupported (%s)", s.err, why)
					}
				}
			} else if !e.fast.strictNeg || e.fast.stats.fallbacks.Load() == 0 {
				t.Errorf("strictNeg %v, %d fallbacks: the undefined reference was not caught", e.fast.strictNeg, e.fast.stats.fallbacks.Load())
			}
		})
	}
}
