package strictjson

import (
	"bytes"
	"encoding/json"
)

// builder makes Decode's value from input Check accepted, so it handles no
// errors: every token is where the grammar puts it. It recurses, at most
// MaxDepthLimit deep.
type builder struct {
	buf []byte // scratch for unescaping
}

// value builds the value that starts at or after i and returns the offset
// after it.
func (b *builder) value(data []byte, i int) (any, int) {
	i = skipWS(data, i)
	switch data[i] {
	case '{':
		m := map[string]any{}
		if i = skipWS(data, i+1); data[i] == '}' {
			return m, i + 1
		}
		for {
			end, _ := scanString(data, i+1)
			k := b.text(data[i+1 : end-1])
			var v any
			v, i = b.value(data, skipWS(data, end)+1) // after ':'
			// Check refused a repeated name if asked to; else the last wins.
			m[k] = v
			if i = skipWS(data, i); data[i] == '}' {
				return m, i + 1
			}
			i = skipWS(data, i+1) // after ','
		}
	case '[':
		a := []any{} // encoding/json gives [] as empty, not nil
		if i = skipWS(data, i+1); data[i] == ']' {
			return a, i + 1
		}
		for {
			var v any
			v, i = b.value(data, i)
			a = append(a, v)
			if i = skipWS(data, i); data[i] == ']' {
				return a, i + 1
			}
			i++ // after ','
		}
	case '"':
		end, _ := scanString(data, i+1)
		return b.text(data[i+1 : end-1]), end
	case 't':
		return true, i + len("true")
	case 'f':
		return false, i + len("false")
	case 'n':
		return nil, i + len("null")
	}
	// A number keeps its literal: float64 would round large integer ids.
	end, _ := scanNumber(data, i)
	return json.Number(data[i:end]), end
}

func (b *builder) text(raw []byte) string {
	if bytes.IndexByte(raw, '\\') < 0 {
		return string(raw)
	}
	b.buf = appendUnquoted(b.buf[:0], raw)
	return string(b.buf)
}
