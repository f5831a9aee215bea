package policyinput

import (
	"bytes"
	"encoding/json"
	"slices"
	"strings"
)

// Header is one header of the request being signed as the policy sees it:
// the name in lower case, its values joined with ", " as HTTP does.
type Header struct {
	Name  string
	Value string
}

// Headers are the request's headers in ascending order of name, each name
// once: the input's request.headers, a JSON object (null when nil).
//
// A sorted slice rather than a map: the server builds one for every
// request, and the policy's fast path reads the names in order (its scope
// and memo keys encode them); a map cost two allocations and a sort per
// request. HeadersOf and UnmarshalJSON give that order; Normalized gives it
// to any other slice, and the consumers (the fast path, the full
// evaluation's input) read a Headers through it, so an unsorted literal
// means what the map it spells would.
type Headers []Header

// HeadersOf returns m's headers in order; nil for a nil map.
func HeadersOf(m map[string]string) Headers {
	if m == nil {
		return nil
	}
	h := make(Headers, 0, len(m))
	for k, v := range m {
		h = append(h, Header{Name: k, Value: v})
	}
	slices.SortFunc(h, byName)
	return h
}

func byName(a, b Header) int { return strings.Compare(a.Name, b.Name) }

// Get returns the value of the header named name (lower case), as a map
// lookup would: of the last entry with that name.
func (h Headers) Get(name string) (string, bool) {
	for i := len(h) - 1; i >= 0; i-- {
		if h[i].Name == name {
			return h[i].Value, true
		}
	}
	return "", false
}

// InOrder reports whether the names are strictly ascending (so distinct).
func (h Headers) InOrder() bool {
	for i := 1; i < len(h); i++ {
		if h[i-1].Name >= h[i].Name {
			return false
		}
	}
	return true
}

// Normalized is h when it is in order, else a sorted copy that keeps, of
// each name, the last entry (what assigning them to a map in turn keeps).
// nil stays nil (JSON null), empty stays empty (an empty object).
func (h Headers) Normalized() Headers {
	if h.InOrder() {
		return h
	}
	c := slices.Clone(h)
	slices.SortStableFunc(c, byName)
	out := c[:0]
	for i := range c {
		if i+1 < len(c) && c[i+1].Name == c[i].Name {
			continue // a later entry of the same name wins
		}
		out = append(out, c[i])
	}
	return out
}

// MarshalJSON encodes the headers as a JSON object in order, or null.
func (h Headers) MarshalJSON() ([]byte, error) {
	if h == nil {
		return []byte("null"), nil
	}
	h = h.Normalized()
	b := append(make([]byte, 0, 64), '{')
	for i, x := range h {
		if i > 0 {
			b = append(b, ',')
		}
		k, err := json.Marshal(x.Name)
		if err != nil {
			return nil, err
		}
		v, err := json.Marshal(x.Value)
		if err != nil {
			return nil, err
		}
		b = append(append(append(b, k...), ':'), v...)
	}
	return append(b, '}'), nil
}

// UnmarshalJSON decodes a JSON object of string values, or null.
func (h *Headers) UnmarshalJSON(b []byte) error {
	if bytes.Equal(bytes.TrimSpace(b), []byte("null")) {
		*h = nil
		return nil
	}
	var m map[string]string
	if err := json.Unmarshal(b, &m); err != nil {
		return err
	}
	*h = HeadersOf(m)
	return nil
}

// With returns a copy of h (in order) with the header name set to value.
func (h Headers) With(name, value string) Headers {
	// Normalized keeps the last entry of a name: the one appended.
	return append(slices.Clone(h), Header{Name: name, Value: value}).Normalized()
}
