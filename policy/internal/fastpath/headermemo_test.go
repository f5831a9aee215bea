package fastpath

import (
	"context"
	"path/filepath"
	"sync"
	"testing"

	"github.com/countersign/countersign/internal/policyinput"
)

// TestHeaderRuleMemo: on the combined example (whose guardrails screen
// every header name), a scan's header rules are evaluated once for its
// header names and remembered for the next objects; the decisions stay
// the full evaluation's when the names change, and a rule that reads a
// header value is never remembered.
func TestHeaderRuleMemo(t *testing.T) {
	e := testEngine(t, filepath.Join(examplesRoot, "combined"), genGrants(1000), Options{})
	forceBuild(e)
	ins := scanInputs(50)
	for _, in := range ins {
		checkSame(t, e, in)
	}
	st := &e.fast.stats
	if st.headerHits.Load() == 0 {
		t.Fatal("no header rule was remembered")
	}
	var prog *program
	for _, s := range e.fast.l2.Values() {
		if s.prog != nil {
			prog = s.prog
		}
	}
	if prog == nil || prog.nHeaderRules < 5 {
		t.Fatalf("want the guardrails' 5 header rules, got %+v", prog)
	}
	// Same names with a guarded header added, then as before: each set of
	// names decides as the full evaluation does, memo or not.
	acl := *ins[1]
	acl.Request.Headers = ins[1].Request.Headers.With("x-amz-acl", "private")
	for _, in := range []*policyinput.Input{&acl, ins[2], &acl, ins[3]} {
		if !checkSame(t, e, in) {
			t.Fatal("differs")
		}
	}
	if d, _ := e.Authorize(context.Background(), &acl); d.Allow {
		t.Fatal("x-amz-acl allowed")
	}
	if d, _ := e.Authorize(context.Background(), ins[4]); !d.Allow {
		t.Fatal("plain read denied after the x-amz-acl one")
	}
}

// TestHeaderRuleMemoValues: a header rule that reads a value is evaluated
// for every object: the same names with another value decide differently.
// In "read-before", another rule reads the values first: the header rule's
// own reads count even so.
func TestHeaderRuleMemoValues(t *testing.T) {
	for name, src := range map[string]string{
		"plain": `package countersign.authz
import rego.v1
deny contains n if { some n, v in input.request.headers; contains(v, "evil") }
deny contains n if { some n, _ in input.request.headers; startswith(n, "x-amz-grant-") }
allow if { count(deny) == 0; startswith(input.resource.key, "wh/") }`,
		"read-before": `package countersign.authz
import rego.v1
seen contains v if { some _, v in input.request.headers; startswith(input.resource.key, "wh/") }
deny contains n if { some n, v in input.request.headers; contains(v, "evil") }
deny contains n if { some n, _ in input.request.headers; startswith(n, "x-amz-grant-") }
allow if { count(seen) > 0; count(deny) == 0 }`,
	} {
		t.Run(name, func(t *testing.T) {
			e := moduleEngine(t, map[string]string{"p.rego": src}, nil)
			forceBuild(e)
			ctx := context.Background()
			ins := scanInputs(6)
			for i, in := range ins {
				want := true
				if i%2 == 1 {
					in.Request.Headers = in.Request.Headers.With("user-agent", "evil agent")
					want = false
				}
				d, err := e.Authorize(ctx, in)
				if err != nil || d.Allow != want {
					t.Fatalf("input %d: allow %v (%v), want %v", i, d.Allow, err, want)
				}
				checkSame(t, e, in)
			}
			if e.fast.stats.headerHits.Load() == 0 {
				t.Fatal("the rule reading names only was not remembered")
			}
		})
	}
}

// TestHeaderRuleMemoConcurrent: goroutines deciding objects of one scope
// with two sets of header names (one denied by the guardrails) replace the
// program's memo under each other; every decision stays right (run with
// -race).
func TestHeaderRuleMemoConcurrent(t *testing.T) {
	e := testEngine(t, filepath.Join(examplesRoot, "combined"), genGrants(1000), Options{})
	forceBuild(e)
	ins := scanInputs(400)
	for i, in := range ins {
		if i%3 == 0 {
			in.Request.Headers = in.Request.Headers.With("x-amz-grant-read", "id=1")
		}
	}
	ctx := context.Background()
	if _, err := e.Authorize(ctx, ins[1]); err != nil {
		t.Fatal(err)
	}
	var wg sync.WaitGroup
	for w := range 8 {
		wg.Go(func() {
			for j := range 200 {
				i := (w*37 + j) % len(ins)
				d, err := e.Authorize(ctx, ins[i])
				if err != nil || d.Allow != (i%3 != 0) {
					t.Errorf("input %d: allow %v (%v)", i, d.Allow, err)
					return
				}
			}
		})
	}
	wg.Wait()
	if e.fast.stats.headerHits.Load() == 0 {
		t.Fatal("nothing remembered")
	}
}
