// Package jsonstr appends Go strings as JSON string literals, without
// allocating, for the hand-written encoders of audit records and of sign
// responses.
//
// The output is fixed byte for byte: the audit log's Merkle tree hashes
// the exact record bytes, so a change here would change every record
// written afterwards (audit's golden test pins them). Rules:
//
//   - '"' and '\\' are written as \" and \\.
//   - '\n', '\r' and '\t' are written as \n, \r and \t; every other C0
//     control character (U+0000 to U+001F, '\b' and '\f' included) as
//     \u00XX with lower-case hex digits. (encoding/json writes \b and \f
//     since Go 1.22; this package keeps \u0008 and \u000c, which it wrote
//     before that and which the log's existing records hold.)
//   - Invalid UTF-8 is replaced by \ufffd, one per byte that does not start
//     a valid sequence, as utf8.DecodeRuneInString reads it: an overlong
//     form, an encoded surrogate or a value above U+10FFFF gives one
//     \ufffd per byte, and so does a sequence cut short ("\xe2\x80" gives
//     two). A U+FFFD that is really in the input is copied unchanged. So
//     the output is always valid UTF-8, and every client's parser reads
//     the same text.
//   - U+2028 and U+2029 are written as \u2028 and \u2029: they end a line
//     in JavaScript source, so a line pasted into a script stays one line.
//   - Everything else is copied unescaped: DEL (0x7f), '/', and all valid
//     non-ASCII text. There is no HTML escaping of '<', '>' and '&'.
//
// That is encoding/json's output (with SetEscapeHTML(false)) except for
// \u0008 and \u000c; for valid UTF-8 input, decoding the output gives back
// the input exactly.
package jsonstr

import (
	"unicode/utf8"

	"github.com/countersign/countersign/internal/swar"
)

// Append appends s to dst as a JSON string literal, quotes included, and
// returns the extended buffer.
func Append(dst []byte, s string) []byte {
	dst = append(dst, '"')
	dst = AppendBody(dst, s)
	return append(dst, '"')
}

// safe marks the ASCII bytes that go into a JSON string unescaped.
var safe = func() (t [utf8.RuneSelf]bool) {
	for c := 0x20; c < utf8.RuneSelf; c++ {
		t[c] = c != '"' && c != '\\'
	}
	return t
}()

const hexDigits = "0123456789abcdef"

// AppendBody appends s escaped as in Append but without the quotes, for a
// caller that writes the quotes around something else as well (audit's
// token_hmac is either an escaped string or a computed hex digest).
func AppendBody(dst []byte, s string) []byte {
	start := 0 // s[start:i] is pending, to be copied as one run
	for i := 0; i < len(s); {
		// Skip eight bytes at a time while they are plain ASCII: the long
		// unescaped runs of keys, URIs and signatures.
		if i+8 <= len(s) {
			if x := swar.Load64(s, i); swar.Less(x, 0x20)|swar.Equal(x, '"')|swar.Equal(x, '\\')|x&swar.MSB == 0 {
				i += 8
				continue
			}
		}
		c := s[i]
		if c < utf8.RuneSelf {
			if safe[c] {
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
	return append(dst, s[start:]...)
}
