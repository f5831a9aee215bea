package remotesign

import (
	"strconv"
	"unicode/utf8"

	"github.com/countersign/countersign/internal/swar"
)

// AppendResult appends a RemoteSignResult, {"uri":...,"headers":{...}}, to
// dst and returns the extended buffer. Headers are written in the order
// given, each with its values in order (a header with no values is written
// as []); the caller must not pass two headers with the same name.
func AppendResult(dst []byte, uri string, headers Headers) []byte {
	dst = append(dst, `{"uri":`...)
	dst = appendJSONString(dst, uri)
	dst = append(dst, `,"headers":{`...)
	for i := range headers {
		h := &headers[i]
		if i > 0 {
			dst = append(dst, ',')
		}
		dst = appendJSONString(dst, h.Name)
		dst = append(dst, ':', '[')
		for j, v := range h.Values {
			if j > 0 {
				dst = append(dst, ',')
			}
			dst = appendJSONString(dst, v)
		}
		dst = append(dst, ']')
	}
	return append(dst, '}', '}')
}

// AppendError appends an error in Iceberg's REST error model,
// {"error":{"message":...,"type":...,"code":N}}, to dst and returns the
// extended buffer. typ is the exception type name, for example
// "BadRequestException"; code is the HTTP status.
func AppendError(dst []byte, code int, typ, message string) []byte {
	dst = append(dst, `{"error":{"message":`...)
	dst = appendJSONString(dst, message)
	dst = append(dst, `,"type":`...)
	dst = appendJSONString(dst, typ)
	dst = append(dst, `,"code":`...)
	dst = strconv.AppendInt(dst, int64(code), 10)
	return append(dst, '}', '}')
}

// jsonSafe marks the ASCII bytes that go into a JSON string unescaped.
var jsonSafe = func() (t [utf8.RuneSelf]bool) {
	for c := 0x20; c < utf8.RuneSelf; c++ {
		t[c] = c != '"' && c != '\\'
	}
	return t
}()

const hexDigits = "0123456789abcdef"

// appendJSONString appends s as a JSON string literal. It escapes '"', '\\'
// and control characters, replaces each byte of invalid UTF-8 with U+FFFD
// (as encoding/json does: output is always valid UTF-8, so every client's
// parser reads the same text), and escapes U+2028 and U+2029, which end a
// line in JavaScript source. Everything else, including non-ASCII text, is
// copied in runs without escaping.
func appendJSONString(dst []byte, s string) []byte {
	dst = append(dst, '"')
	start := 0 // s[start:i] is pending, to be copied as one run
	for i := 0; i < len(s); {
		if i+8 <= len(s) {
			if x := swar.Load64(s, i); swar.Less(x, 0x20)|swar.Equal(x, '"')|swar.Equal(x, '\\')|x&swar.MSB == 0 {
				i += 8
				continue
			}
		}
		c := s[i]
		if c < utf8.RuneSelf {
			if jsonSafe[c] {
				i++
				continue
			}
			dst = append(dst, s[start:i]...)
			switch c {
			case '"', '\\':
				dst = append(dst, '\\', c)
			case '\n':
				dst = append(dst, '\\', 'n')
			case '\r':
				dst = append(dst, '\\', 'r')
			case '\t':
				dst = append(dst, '\\', 't')
			default:
				dst = append(dst, '\\', 'u', '0', '0', hexDigits[c>>4], hexDigits[c&0xf])
			}
			i++
			start = i
			continue
		}
		r, size := utf8.DecodeRuneInString(s[i:])
		switch {
		case r == utf8.RuneError && size == 1:
			dst = append(dst, s[start:i]...)
			dst = append(dst, `\ufffd`...)
		case r == '\u2028' || r == '\u2029':
			dst = append(dst, s[start:i]...)
			dst = append(dst, '\\', 'u', '2', '0', '2', hexDigits[r&0xf])
		default:
			i += size
			continue
		}
		i += size
		start = i
	}
	dst = append(dst, s[start:]...)
	return append(dst, '"')
}
