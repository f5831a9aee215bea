package policyinput

import (
	"encoding/binary"
	"encoding/json"
	"math"
	"slices"
)

// AppendPrincipalKey appends an exact encoding of p (nil included): two
// principals with the same encoding are the same policy input document. ok
// is false if a claim cannot be encoded. It ignores p.Key.
//
// The policy's fast path keys its cached residuals by this encoding (with
// the rest of the input's scope, docs/design.md "Fast path"); a principal
// shared by many requests carries it in Key, so that the claims are not
// encoded at every decision.
func AppendPrincipalKey(b []byte, p *Principal) ([]byte, bool) {
	if p == nil {
		return append(b, 0), true
	}
	b = append(b, 1)
	b = AppendKeyString(b, p.ID)
	b = AppendKeyString(b, p.Issuer)
	b = AppendKeyStrings(b, p.Groups)
	if p.Claims == nil {
		return append(b, 'n'), true
	}
	return appendAny(b, p.Claims, 0)
}

// SetKey sets p.Key to p's encoding (AppendPrincipalKey), or clears it when
// the claims cannot be encoded.
func (p *Principal) SetKey() {
	b, ok := AppendPrincipalKey(make([]byte, 0, 256), p)
	if !ok {
		p.Key = ""
		return
	}
	p.Key = string(b)
}

// appendAny encodes a claim value: type-tagged, length-prefixed, maps in key
// order. Equal encodings are equal values of the same Go types, hence the
// same JSON.
func appendAny(b []byte, v any, depth int) ([]byte, bool) {
	if depth > 32 {
		return b, false
	}
	switch x := v.(type) {
	case nil:
		return append(b, 'n'), true
	case bool:
		if x {
			return append(b, 't'), true
		}
		return append(b, 'f'), true
	case string:
		return AppendKeyString(append(b, 's'), x), true
	case float64:
		return binary.BigEndian.AppendUint64(append(b, 'd'), math.Float64bits(x)), true
	case json.Number:
		return AppendKeyString(append(b, 'N'), string(x)), true
	case int:
		return binary.AppendVarint(append(b, 'i'), int64(x)), true
	case int64:
		return binary.AppendVarint(append(b, 'I'), x), true
	case []string:
		return AppendKeyStrings(append(b, 'S'), x), true
	case []any:
		if x == nil {
			return append(b, 'N', 'A'), true
		}
		b = binary.AppendUvarint(append(b, 'A'), uint64(len(x)))
		for _, e := range x {
			var ok bool
			if b, ok = appendAny(b, e, depth+1); !ok {
				return b, false
			}
		}
		return b, true
	case map[string]any:
		if x == nil {
			return append(b, 'N', 'M'), true
		}
		var buf [16]string
		keys := sortedKeys(buf[:0], x)
		b = binary.AppendUvarint(append(b, 'M'), uint64(len(keys)))
		for _, k := range keys {
			b = AppendKeyString(b, k)
			var ok bool
			if b, ok = appendAny(b, x[k], depth+1); !ok {
				return b, false
			}
		}
		return b, true
	case map[string]string:
		if x == nil {
			return append(b, 'N', 'm'), true
		}
		var buf [16]string
		keys := sortedKeys(buf[:0], x)
		b = binary.AppendUvarint(append(b, 'm'), uint64(len(keys)))
		for _, k := range keys {
			b = AppendKeyString(AppendKeyString(b, k), x[k])
		}
		return b, true
	default:
		// Anything else: its JSON (what the full evaluation sees).
		j, err := json.Marshal(x)
		if err != nil {
			return b, false
		}
		return AppendKeyString(append(b, 'J'), string(j)), true
	}
}

// sortedKeys appends m's keys to buf, sorted.
func sortedKeys[V any](buf []string, m map[string]V) []string {
	for k := range m {
		buf = append(buf, k)
	}
	slices.Sort(buf)
	return buf
}
