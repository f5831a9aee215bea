package s3req

import (
	"strings"
	"unicode/utf8"
)

// unreserved reports the RFC 3986 unreserved bytes, the only ones AWS's URI
// encoding leaves alone (besides '/' in paths).
func unreserved(c byte) bool {
	return c >= 'A' && c <= 'Z' || c >= 'a' && c <= 'z' || c >= '0' && c <= '9' ||
		c == '-' || c == '_' || c == '.' || c == '~'
}

const upperHex = "0123456789ABCDEF"

// appendAWSEscapedPath appends s URI-encoded the way every AWS SDK encodes an
// S3 object key in a path: unreserved bytes and '/' stay, every other byte
// becomes %XX with upper-case hex.
func appendAWSEscapedPath(dst []byte, s string) []byte {
	for i := 0; i < len(s); i++ {
		c := s[i]
		if unreserved(c) || c == '/' {
			dst = append(dst, c)
			continue
		}
		dst = append(dst, '%', upperHex[c>>4], upperHex[c&15])
	}
	return dst
}

// isAWSEscapedPath reports whether raw is exactly appendAWSEscapedPath(nil, s):
// the check every accepted key passes, without building the encoding.
func isAWSEscapedPath(raw, s string) bool {
	j := 0
	for i := 0; i < len(s); i++ {
		c := s[i]
		if unreserved(c) || c == '/' {
			if j >= len(raw) || raw[j] != c {
				return false
			}
			j++
			continue
		}
		if j+3 > len(raw) || raw[j] != '%' || raw[j+1] != upperHex[c>>4] || raw[j+2] != upperHex[c&15] {
			return false
		}
		j += 3
	}
	return j == len(raw)
}

func unhex(c byte) (byte, bool) {
	switch {
	case c >= '0' && c <= '9':
		return c - '0', true
	case c >= 'a' && c <= 'f':
		return c - 'a' + 10, true
	case c >= 'A' && c <= 'F':
		return c - 'A' + 10, true
	}
	return 0, false
}

// percentDecode decodes %XX escapes exactly once. '+' is rejected rather
// than guessed at: in a query it means space to some parsers and '+' to
// others, and that difference would let the policy see one key while the
// server serves another. SDKs always send '+' as %2B.
func percentDecode(s, what string) (string, error) {
	if strings.IndexByte(s, '%') < 0 {
		if strings.IndexByte(s, '+') >= 0 {
			return "", malformed("%s contains a raw '+'; encode it as %%2B or %%20", what)
		}
		return s, nil
	}
	var b strings.Builder // one allocation: String does not copy
	b.Grow(len(s))
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch c {
		case '%':
			if i+2 >= len(s) {
				return "", malformed("%s has a truncated percent escape", what)
			}
			hi, ok1 := unhex(s[i+1])
			lo, ok2 := unhex(s[i+2])
			if !ok1 || !ok2 {
				return "", malformed("%s has an invalid percent escape %q", what, s[i:i+3])
			}
			b.WriteByte(hi<<4 | lo)
			i += 2
		case '+':
			return "", malformed("%s contains a raw '+'; encode it as %%2B or %%20", what)
		default:
			b.WriteByte(c)
		}
	}
	return b.String(), nil
}

// checkText rejects invalid UTF-8 and control characters in a decoded key,
// prefix or parameter: S3 would accept some of them, but no table format
// writes them and they are a classic way to make logs and policies disagree.
// The control characters are Unicode's (category Cc): C0, DEL and C1
// (U+0080 to U+009F, NEL among them, which some log readers and terminals
// take for a line break).
func checkText(s, what string) error {
	if !utf8.ValidString(s) {
		return malformed("%s is not valid UTF-8", what)
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		if c < 0x20 || c == 0x7f {
			return malformed("%s contains a control character (0x%02x)", what, c)
		}
		// Valid UTF-8: 0xC2 is followed by a continuation byte, and
		// 0xC2 0x80 to 0xC2 0x9F encode U+0080 to U+009F.
		if c == 0xc2 && s[i+1] < 0xa0 {
			return malformed("%s contains a control character (U+%04X)", what, rune(s[i+1]))
		}
	}
	return nil
}
