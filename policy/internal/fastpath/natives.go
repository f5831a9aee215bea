package fastpath

import (
	"strings"
	"unicode/utf8"

	"github.com/open-policy-agent/opa/v1/ast"
)

// nativeBuiltin is a Go implementation of a built-in, for the operands it
// handles exactly as OPA's implementation does (TestNativeBuiltins compares
// them); done false hands the call to OPA's implementation, which then also
// produces OPA's error for wrong operand types.
type nativeBuiltin func(m *machine, args []ast.Value) (out ast.Value, ok, done bool)

var natives = map[string]nativeBuiltin{
	"object.get": nativeObjectGet,
	"startswith": func(_ *machine, args []ast.Value) (ast.Value, bool, bool) {
		s, ok1 := args[0].(ast.String)
		p, ok2 := args[1].(ast.String)
		if !ok1 || !ok2 {
			return nil, false, false
		}
		return ast.Boolean(strings.HasPrefix(string(s), string(p))), true, true
	},
	"endswith": func(_ *machine, args []ast.Value) (ast.Value, bool, bool) {
		s, ok1 := args[0].(ast.String)
		p, ok2 := args[1].(ast.String)
		if !ok1 || !ok2 {
			return nil, false, false
		}
		return ast.Boolean(strings.HasSuffix(string(s), string(p))), true, true
	},
	"lower": func(_ *machine, args []ast.Value) (ast.Value, bool, bool) {
		s, ok := args[0].(ast.String)
		if !ok {
			return nil, false, false
		}
		if low := strings.ToLower(string(s)); low != string(s) {
			return ast.String(low), true, true
		}
		return args[0], true, true
	},
	"is_string": func(_ *machine, args []ast.Value) (ast.Value, bool, bool) {
		_, ok := materialize(args[0]).(ast.String)
		return ast.Boolean(ok), true, true
	},
	"is_null": func(_ *machine, args []ast.Value) (ast.Value, bool, bool) {
		_, ok := materialize(args[0]).(ast.Null)
		return ast.Boolean(ok), true, true
	},
	"equal": func(_ *machine, args []ast.Value) (ast.Value, bool, bool) {
		return ast.Boolean(equalValues(args[0], args[1])), true, true
	},
	"neq": func(_ *machine, args []ast.Value) (ast.Value, bool, bool) {
		return ast.Boolean(!equalValues(args[0], args[1])), true, true
	},
	"gt":  compareNative(func(c int) bool { return c > 0 }),
	"gte": compareNative(func(c int) bool { return c >= 0 }),
	"lt":  compareNative(func(c int) bool { return c < 0 }),
	"lte": compareNative(func(c int) bool { return c <= 0 }),
	"count": func(_ *machine, args []ast.Value) (ast.Value, bool, bool) {
		switch a := materialize(args[0]).(type) {
		case *ast.Array:
			return ast.InternedTerm(a.Len()).Value, true, true
		case ast.Object:
			return ast.InternedTerm(a.Len()).Value, true, true
		case ast.Set:
			return ast.InternedTerm(a.Len()).Value, true, true
		case ast.String:
			return ast.InternedTerm(utf8.RuneCountInString(string(a))).Value, true, true
		}
		return nil, false, false
	},
	"internal.member_2": func(m *machine, args []ast.Value) (ast.Value, bool, bool) {
		x := materialize(args[0])
		switch c := materialize(args[1]).(type) {
		case ast.Set:
			return ast.Boolean(c.Contains(m.term(x))), true, true
		case *ast.Array:
			for i := range c.Len() {
				if ast.ValueEqual(x, c.Elem(i).Value) {
					return ast.Boolean(true), true, true
				}
			}
			return ast.Boolean(false), true, true
		case ast.Object:
			found := c.Until(func(_, v *ast.Term) bool { return ast.ValueEqual(x, v.Value) })
			return ast.Boolean(found), true, true
		}
		return ast.Boolean(false), true, true
	},
}

func compareNative(ok func(int) bool) nativeBuiltin {
	return func(_ *machine, args []ast.Value) (ast.Value, bool, bool) {
		return ast.Boolean(ok(materialize(args[0]).Compare(materialize(args[1])))), true, true
	}
}

// nativeObjectGet reads a lazy input object without building it: a single
// key, as OPA's object.get (an array key is a path: OPA's implementation).
func nativeObjectGet(_ *machine, args []ast.Value) (ast.Value, bool, bool) {
	l, ok := args[0].(*lazyVal)
	if !ok {
		return nil, false, false
	}
	if _, isPath := args[1].(*ast.Array); isPath {
		return nil, false, false
	}
	if v, ok := l.lookup(materialize(args[1])); ok {
		return v, true, true
	}
	return args[2], true, true
}
