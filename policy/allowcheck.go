package policy

import (
	"context"
	"fmt"

	"github.com/open-policy-agent/opa/v1/ast"
	"github.com/open-policy-agent/opa/v1/rego"
)

// allowRef is the document countersign decides on.
var allowRef = ast.MustParseRef("data." + Package + ".allow")

// checkAllowRules refuses the shapes of allow that allow what no rule
// decided, or that are not a boolean: what a file cut short (`default
// allow`, which means true in Rego v1) or a slip of the pen leaves behind.
// The rules, for every rule whose path is allow or lies below it:
//
//   - default allow must be exactly false;
//   - allow is a single boolean: not a set (allow contains), an object
//     (allow.x, allow[k]), a function (allow(x)) or a constant other than
//     true or false;
//   - a rule (or else branch) whose value is true and whose body has no
//     condition (allow := true, allow if true, allow if { 1 }) allows every
//     request, and is refused.
//
// A computed value (allow := count(deny) == 0) is accepted: Authorize
// allows only when it is exactly true. What the syntax cannot show, the
// canary in checkCanary catches.
func checkAllowRules(mods []module) error {
	for _, m := range mods {
		for _, r := range m.parsed.Rules {
			ref := r.Ref()
			if !ref.HasPrefix(allowRef) {
				continue
			}
			where := ruleLocation(m, r)
			switch {
			case len(ref) > len(allowRef):
				return fmt.Errorf("policy: rule %s (%s) makes allow an object: allow must be a boolean", ref, where)
			case r.Head.RuleKind() == ast.MultiValue:
				return fmt.Errorf("policy: rule %s (%s) makes allow a set (allow contains ...): allow must be a boolean", ref, where)
			case len(r.Head.Args) > 0:
				return fmt.Errorf("policy: rule %s (%s) makes allow a function: allow must be a boolean", ref, where)
			case r.Default:
				if b, ok := r.Head.Value.Value.(ast.Boolean); !ok || bool(b) {
					return fmt.Errorf("policy: default allow (%s) is %v: it must be false, so that a request no rule allows is denied (a file cut after `default allow` means true)", where, r.Head.Value)
				}
				continue
			}
			for br := r; br != nil; br = br.Else {
				if err := checkAllowValue(br, ruleLocation(m, br)); err != nil {
					return err
				}
			}
		}
	}
	return nil
}

func checkAllowValue(r *ast.Rule, where string) error {
	v := r.Head.Value
	if v == nil || !ast.IsConstant(v.Value) {
		return nil // computed: only exactly true allows
	}
	b, ok := v.Value.(ast.Boolean)
	switch {
	case !ok:
		return fmt.Errorf("policy: rule allow (%s) has the value %v: allow must be a boolean", where, v)
	case bool(b) && unconditional(r.Body):
		return fmt.Errorf("policy: rule allow (%s) is true with no condition: it would allow every request", where)
	}
	return nil
}

// unconditional reports whether every expression of body is a constant
// that is not false (the implicit body `true` included).
func unconditional(body ast.Body) bool {
	for _, e := range body {
		t, ok := e.Terms.(*ast.Term)
		if !ok || e.Negated || len(e.With) > 0 || !ast.IsConstant(t.Value) {
			return false
		}
		if b, ok := t.Value.(ast.Boolean); ok && !bool(b) {
			return false
		}
	}
	return true
}

func ruleLocation(m module, r *ast.Rule) string {
	if r.Location == nil {
		return m.name
	}
	return fmt.Sprintf("%s:%d", r.Location.File, r.Location.Row)
}

// checkCanary refuses a compiled policy that allows a request about
// nothing: an empty input document, or one with every field present and
// empty. No policy that decides on who asks for what allows those; a
// truncated `allow if input.resource.bucket` (true for any string, even
// ""), an `allow if not deny` whose deny rules were cut off, or a data
// file that sets allow do.
func checkCanary(ctx context.Context, pq rego.PreparedEvalQuery) error {
	canaries := []struct {
		name  string
		input any
	}{
		{"an empty input {}", map[string]any{}},
		{"an input whose fields are all empty", &Input{Version: 1}},
	}
	for _, c := range canaries {
		rs, err := pq.Eval(ctx, rego.EvalInput(c.input))
		if err != nil {
			continue // an evaluation error denies; real inputs decide
		}
		if len(rs) == 0 || len(rs[0].Expressions) == 0 {
			continue
		}
		if doc, ok := rs[0].Expressions[0].Value.(map[string]any); ok && doc["allow"] == true {
			return fmt.Errorf("policy: allow is true for %s: the policy allows requests no rule is about (a truncated rule, or an allow that depends only on something being absent)", c.name)
		}
	}
	return nil
}
