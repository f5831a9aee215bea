package cover

import (
	"slices"
	"strings"
)

// Set is a set of strings: every string (All), or the strings that start
// with one of Prefixes. The zero Set is empty.
type Set struct {
	All bool
	// Prefixes is sorted, and no prefix in it starts with another (the
	// shorter one covers the longer).
	Prefixes []string
}

// All is every string.
func All() Set { return Set{All: true} }

// Prefixes is the set of strings starting with one of ps.
func Prefixes(ps ...string) Set { return Set{Prefixes: normalize(slices.Clone(ps))} }

// Empty reports whether s holds no string.
func (s Set) Empty() bool { return !s.All && len(s.Prefixes) == 0 }

// Contains reports whether v is in s.
func (s Set) Contains(v string) bool {
	if s.All {
		return true
	}
	for _, p := range s.Prefixes {
		if strings.HasPrefix(v, p) {
			return true
		}
	}
	return false
}

// Union is s ∪ t.
func (s Set) Union(t Set) Set {
	if s.All || t.All {
		return All()
	}
	if len(t.Prefixes) == 0 {
		return s
	}
	if len(s.Prefixes) == 0 {
		return t
	}
	return Set{Prefixes: normalize(append(slices.Clone(s.Prefixes), t.Prefixes...))}
}

// Intersect is s ∩ t: of two prefixes where one starts with the other,
// the longer.
func (s Set) Intersect(t Set) Set {
	switch {
	case s.All:
		return t
	case t.All:
		return s
	}
	var out []string
	for _, a := range s.Prefixes {
		for _, b := range t.Prefixes {
			switch {
			case strings.HasPrefix(a, b):
				out = append(out, a)
			case strings.HasPrefix(b, a):
				out = append(out, b)
			}
		}
	}
	return Set{Prefixes: normalize(out)}
}

// normalize sorts ps and drops every prefix another one covers.
func normalize(ps []string) []string {
	if len(ps) == 0 {
		return nil
	}
	slices.Sort(ps)
	out := ps[:0]
	for _, p := range ps {
		// Sorted: a covering prefix sorts right before what it covers.
		if len(out) > 0 && strings.HasPrefix(p, out[len(out)-1]) {
			continue
		}
		out = append(out, p)
	}
	return slices.Clip(out)
}
