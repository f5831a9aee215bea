package strictjson

import "strconv"

// describeByte names c for a message without echoing non-ASCII bytes as
// if they were characters.
func describeByte(c byte) string {
	if c < 0x80 {
		return "character " + strconv.QuoteRune(rune(c))
	}
	return "byte 0x" + strconv.FormatUint(uint64(c), 16)
}

func skipWS(data []byte, i int) int {
	for i < len(data) {
		switch data[i] {
		case ' ', '\t', '\n', '\r':
			i++
		default:
			return i
		}
	}
	return i
}

// literal matches word at i and returns the offset after it, or the offset
// of the first mismatch.
func literal(data []byte, i int, word string) (int, bool) {
	for j := 0; j < len(word); j++ {
		if i+j >= len(data) || data[i+j] != word[j] {
			return i + j, false
		}
	}
	return i + len(word), true
}

// strPlain marks the bytes a string may contain unescaped and that need no
// further look: everything but '"', '\\' and C0 controls. Bytes >= 0x80
// pass; UTF-8 is validated up front when the options ask for it.
var strPlain = func() (t [256]bool) {
	for c := 0x20; c < 256; c++ {
		t[c] = c != '"' && c != '\\'
	}
	return t
}()

// scanString scans a string body starting after its opening quote and
// returns the offset after the closing quote, or the offset of the problem
// and a message.
func scanString(data []byte, i int) (int, string) {
	for {
		// Byte at a time: most strings here are short member names, for
		// which word-at-a-time skipping measured slower.
		for i < len(data) && strPlain[data[i]] {
			i++
		}
		if i >= len(data) {
			return i, "unterminated string"
		}
		switch c := data[i]; {
		case c == '"':
			return i + 1, ""
		case c != '\\':
			return i, "control character in string (must be escaped)"
		}
		if i+1 >= len(data) {
			return i, "unterminated string"
		}
		switch data[i+1] {
		case '"', '\\', '/', 'b', 'f', 'n', 'r', 't':
			i += 2
		case 'u':
			r, ok := hex4(data, i+2)
			if !ok {
				return i, `invalid \u escape`
			}
			switch {
			case 0xD800 <= r && r < 0xDC00:
				// A high surrogate must be followed by an escaped low one.
				lo, ok := -1, i+7 < len(data) && data[i+6] == '\\' && data[i+7] == 'u'
				if ok {
					lo, ok = hex4(data, i+8)
				}
				if !ok || lo < 0xDC00 || lo > 0xDFFF {
					return i, `unpaired UTF-16 surrogate in \u escape`
				}
				i += 12
			case 0xDC00 <= r && r < 0xE000:
				return i, `unpaired UTF-16 surrogate in \u escape`
			default:
				i += 6
			}
		default:
			return i, "invalid escape character"
		}
	}
}

// hex4 decodes the four hex digits at i.
func hex4(data []byte, i int) (int, bool) {
	if i+4 > len(data) {
		return 0, false
	}
	r := 0
	for _, c := range data[i : i+4] {
		switch {
		case '0' <= c && c <= '9':
			c -= '0'
		case 'a' <= c && c <= 'f':
			c -= 'a' - 10
		case 'A' <= c && c <= 'F':
			c -= 'A' - 10
		default:
			return 0, false
		}
		r = r<<4 | int(c)
	}
	return r, true
}

// scanNumber scans -?(0|[1-9][0-9]*)(\.[0-9]+)?([eE][+-]?[0-9]+)? at i.
func scanNumber(data []byte, i int) (int, string) {
	if data[i] == '-' {
		i++
	}
	switch {
	case i < len(data) && data[i] == '0':
		i++
	case i < len(data) && '1' <= data[i] && data[i] <= '9':
		i = digits(data, i)
	default:
		return i, "invalid number"
	}
	if i < len(data) && data[i] == '.' {
		j := digits(data, i+1)
		if j == i+1 {
			return j, "invalid number: digit expected after '.'"
		}
		i = j
	}
	if i < len(data) && (data[i] == 'e' || data[i] == 'E') {
		i++
		if i < len(data) && (data[i] == '+' || data[i] == '-') {
			i++
		}
		j := digits(data, i)
		if j == i {
			return j, "invalid number: digit expected in exponent"
		}
		i = j
	}
	return i, ""
}

func digits(data []byte, i int) int {
	for i < len(data) && '0' <= data[i] && data[i] <= '9' {
		i++
	}
	return i
}
