package strictjson

import (
	"unicode/utf16"
	"unicode/utf8"
)

// appendUnquoted appends the text of a string body that scanString
// accepted (quotes excluded) to dst. It trusts that check: every escape is
// complete and every surrogate escape paired.
func appendUnquoted(dst, body []byte) []byte {
	for i := 0; i < len(body); {
		c := body[i]
		if c != '\\' {
			dst = append(dst, c)
			i++
			continue
		}
		switch body[i+1] {
		case 'b':
			dst = append(dst, '\b')
		case 'f':
			dst = append(dst, '\f')
		case 'n':
			dst = append(dst, '\n')
		case 'r':
			dst = append(dst, '\r')
		case 't':
			dst = append(dst, '\t')
		case 'u':
			r, _ := hex4(body, i+2)
			if 0xD800 <= r && r < 0xDC00 {
				lo, _ := hex4(body, i+8)
				dst = utf8.AppendRune(dst, utf16.DecodeRune(rune(r), rune(lo)))
				i += 12
				continue
			}
			dst = utf8.AppendRune(dst, rune(r))
			i += 6
			continue
		default: // '"', '\\', '/'
			dst = append(dst, body[i+1])
		}
		i += 2
	}
	return dst
}
