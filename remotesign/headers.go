package remotesign

import "strings"

// Header is one request header exactly as the client sent it: the name in the
// client's spelling and every value in order. Names are compared without
// regard to case, values byte for byte.
type Header struct {
	Name   string
	Values []string
}

// Headers keeps the client's order so a response can echo them unchanged.
// The decoder guarantees that no two entries have names equal under case
// folding, so a lookup has exactly one answer.
type Headers []Header

// Values returns the values of the header named name (any case), or nil.
func (h Headers) Values(name string) []string {
	for i := range h {
		if strings.EqualFold(h[i].Name, name) {
			return h[i].Values
		}
	}
	return nil
}

// Has reports whether the client sent the header, with any values.
func (h Headers) Has(name string) bool {
	for i := range h {
		if strings.EqualFold(h[i].Name, name) {
			return true
		}
	}
	return false
}

// Get returns the single value of a header. ok is false when the header is
// absent or was sent with more than one value: security-relevant headers must
// be unambiguous, so callers treat a multi-valued one as malformed.
func (h Headers) Get(name string) (value string, ok bool) {
	v := h.Values(name)
	if len(v) != 1 {
		return "", false
	}
	return v[0], true
}
