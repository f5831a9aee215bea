package fastpath

import (
	"strings"

	"github.com/open-policy-agent/opa/v1/ast"
)

// The index picks, among a rule set's definitions, those that can apply to
// an object, before evaluating them: a definition whose body tests
// startswith(P, "lit") or P == c, for a path P of the input or of a
// function argument, cannot succeed for an object whose P fails the test
// (a test on a value that is not a string fails too: the built-in's error
// makes it undefined). The candidates are then evaluated in full, tests
// included, so the index only saves work. Definitions with else branches
// are always candidates (when the body fails, the else branches apply).

// guardPath is a path in the input (arg -1) or in a function argument.
type guardPath struct {
	arg  int
	path []ast.Value
	key  string
}

func newGuardPath(arg int, path []ast.Value) guardPath {
	var b strings.Builder
	if arg < 0 {
		b.WriteString("input")
	} else {
		b.WriteString("$arg")
		b.WriteByte(byte('0' + arg))
	}
	for _, p := range path {
		b.WriteByte('\x00')
		b.WriteString(p.String())
	}
	return guardPath{arg: arg, path: path, key: b.String()}
}

type guardKind uint8

const (
	guardPrefix guardKind = iota
	guardEqual
)

type guard struct {
	path guardPath
	kind guardKind
	lit  string    // guardPrefix
	val  ast.Value // guardEqual
}

// guardIndex indexes a rule set's definitions on a few paths: each
// definition is filed under the first path (in the index's order) it has a
// test on, or under always.
type guardIndex struct {
	levels []indexLevel
	always []int // definitions without a test on any of the paths
}

type indexLevel struct {
	path      guardPath
	dirs      map[string][]int // startswith a literal ending in "/"
	prefixes  []prefixRules    // startswith other literals
	strEquals map[string][]int // == a string constant (strings are equal byte for byte)
	valEquals []valueRules     // == any other constant, compared as OPA compares
	hasPrefix bool
}

type prefixRules struct {
	lit   string
	rules []int
}

// valueRules are the definitions testing == val for a constant that is not
// a string. Rego compares numbers by value (1, 1.0, 1e0 and 01 are equal,
// by ast.NumberCompare's rules), and composites element by element: no
// spelling of the constant can key a map exactly, so the candidates are
// found by OPA's own equality, one constant at a time.
type valueRules struct {
	val   ast.Value
	rules []int
}

const (
	minIndexed  = 8 // rule sets smaller than this are not indexed
	maxLevels   = 4
	minDistinct = 2 // a path must tell at least this many tests apart
)

func guardValue(g *guard) string {
	if g.kind == guardPrefix {
		return "p" + g.lit
	}
	return "e" + valueKey(g.val)
}

func buildIndex(rules []*rule) *guardIndex {
	if len(rules) < minIndexed {
		return nil
	}
	// Only definitions without else, each with its first test per path.
	assigned := make([]bool, len(rules))
	for i, r := range rules {
		assigned[i] = len(r.elses) > 0 || len(r.guards) == 0
	}
	ix := &guardIndex{}
	for len(ix.levels) < maxLevels {
		// The path that tells the most tests apart among the definitions
		// not yet filed.
		distinct := map[string]map[string]bool{}
		paths := map[string]guardPath{}
		var best string
		for i, r := range rules {
			if assigned[i] {
				continue
			}
			for j := range r.guards {
				g := &r.guards[j]
				k := g.path.key
				if distinct[k] == nil {
					distinct[k] = map[string]bool{}
					paths[k] = g.path
				}
				distinct[k][guardValue(g)] = true
				if len(distinct[k]) > len(distinct[best]) || len(distinct[k]) == len(distinct[best]) && k < best {
					best = k
				}
			}
		}
		if len(distinct[best]) < minDistinct {
			break
		}
		lv := indexLevel{path: paths[best], dirs: map[string][]int{}, strEquals: map[string][]int{}}
		for i, r := range rules {
			if assigned[i] {
				continue
			}
			for j := range r.guards {
				g := &r.guards[j]
				if g.path.key != best {
					continue
				}
				assigned[i] = true
				switch {
				case g.kind == guardEqual:
					lv.addEqual(g.val, i)
				case strings.HasSuffix(g.lit, "/"):
					lv.hasPrefix = true
					lv.dirs[g.lit] = append(lv.dirs[g.lit], i)
				default:
					lv.hasPrefix = true
					found := false
					for k := range lv.prefixes {
						if lv.prefixes[k].lit == g.lit {
							lv.prefixes[k].rules = append(lv.prefixes[k].rules, i)
							found = true
						}
					}
					if !found {
						lv.prefixes = append(lv.prefixes, prefixRules{lit: g.lit, rules: []int{i}})
					}
				}
				break
			}
		}
		ix.levels = append(ix.levels, lv)
	}
	if len(ix.levels) == 0 {
		return nil
	}
	for i, r := range rules {
		// Filed nowhere: else branches, no test, or tests on paths not
		// chosen.
		filed := false
		if len(r.elses) == 0 {
			for _, lv := range ix.levels {
				for j := range r.guards {
					if r.guards[j].path.key == lv.path.key {
						filed = true
					}
				}
				if filed {
					break
				}
			}
		}
		if !filed {
			ix.always = append(ix.always, i)
		}
	}
	return ix
}

// valueKey tells constants apart (a string and a number with the same
// text differ) for counting the tests a path tells apart: a heuristic
// only (1 and 1.0 count twice), never used to select candidates.
func valueKey(v ast.Value) string {
	switch x := v.(type) {
	case ast.String:
		return "s" + string(x)
	default:
		return "v" + v.String()
	}
}

func (lv *indexLevel) addEqual(c ast.Value, rule int) {
	if s, ok := c.(ast.String); ok {
		lv.strEquals[string(s)] = append(lv.strEquals[string(s)], rule)
		return
	}
	// One entry per test, never merged: value equality of numbers of
	// different spellings need not be transitive, so each constant is
	// compared itself.
	lv.valEquals = append(lv.valEquals, valueRules{val: c, rules: []int{rule}})
}

// candidatesOf is candidates of a value as a lookup returns it (a lazy
// string is read without boxing it).
func (lv *indexLevel) candidatesOf(v ast.Value, out []int) []int {
	if s, ok := stringOf(v); ok {
		return lv.strCandidates(s, out)
	}
	if v != nil {
		v = materialize(v)
	}
	return lv.candidates(v, out)
}

// candidates appends to out the definitions that can apply when the
// level's path has value v (nil: undefined).
func (lv *indexLevel) candidates(v ast.Value, out []int) []int {
	if v == nil {
		return out
	}
	if s, ok := v.(ast.String); ok {
		return lv.strCandidates(string(s), out)
	}
	for k := range lv.valEquals {
		if ast.ValueEqual(lv.valEquals[k].val, v) {
			out = append(out, lv.valEquals[k].rules...)
		}
	}
	return out
}

// strCandidates is candidates of a string: a string equals no constant
// of another type.
func (lv *indexLevel) strCandidates(str string, out []int) []int {
	if lv.hasPrefix {
		for i := 0; i < len(str); i++ {
			if str[i] == '/' {
				out = append(out, lv.dirs[str[:i+1]]...)
			}
		}
		for _, p := range lv.prefixes {
			if strings.HasPrefix(str, p.lit) {
				out = append(out, p.rules...)
			}
		}
	}
	if len(lv.strEquals) > 0 {
		out = append(out, lv.strEquals[str]...)
	}
	return out
}

func sortInts(xs []int) {
	for i := 1; i < len(xs); i++ {
		for j := i; j > 0 && xs[j] < xs[j-1]; j-- {
			xs[j], xs[j-1] = xs[j-1], xs[j]
		}
	}
}
