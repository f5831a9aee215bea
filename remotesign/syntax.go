package remotesign

import "strconv"

// maxNesting bounds how deeply arrays and objects may nest. The protocol
// needs three levels (request, headers, values); the rest is headroom for
// unknown members. A fixed bound keeps checkSyntax's stack a single uint64.
const maxNesting = 64

// checkSyntax reports whether data is exactly one JSON value that conforms
// to RFC 8259, additionally refusing unpaired UTF-16 surrogate escapes (as
// I-JSON, RFC 7493, does), nesting deeper than maxNesting, and more than
// maxValues values in all. The last bounds what fastjson then builds: it
// makes a tree node for every value, ignored members included, so without
// it a body of "[0,0,0,...]" would cost some 40 times its size. It does not
// validate UTF-8: Decode checks that for the strings it keeps, and bytes in
// ignored members do not matter.
//
// It exists because fastjson accepts more than JSON (raw control
// characters, unknown escapes, lone surrogates, NaN) and because fastjson's
// error messages can quote the entire input. Errors here give a byte offset
// and, inside a top-level member, that member's name.
//
// It is iterative: containers are tracked as one bit per level (1 for an
// object, 0 for an array), so hostile nesting costs no stack.
func checkSyntax(data []byte, maxValues int) *DecodeError {
	s := scanner{data: data, keyStart: -1, maxValues: maxValues}
	return s.run()
}

type scanner struct {
	data  []byte
	depth int
	kinds uint64 // bit i: the container at depth i+1 is an object

	values, maxValues int

	// The raw name of the top-level member being scanned, for messages.
	keyStart, keyEnd int
}

func (s *scanner) run() *DecodeError {
	data := s.data
	i := skipWS(data, 0)
	if i == len(data) {
		return &DecodeError{Msg: "empty body"}
	}
value:
	for {
		// A value starts at i.
		if i >= len(data) {
			return s.fail(i, "unexpected end of input")
		}
		if s.values++; s.values > s.maxValues {
			return s.blame("more than " + strconv.Itoa(s.maxValues) + " JSON values")
		}
		switch c := data[i]; c {
		case '{', '[':
			if s.depth == maxNesting {
				return s.fail(i, "nesting deeper than "+strconv.Itoa(maxNesting)+" levels")
			}
			closer := byte(']')
			if c == '{' {
				closer = '}'
			}
			i = skipWS(data, i+1)
			if i < len(data) && data[i] == closer {
				i++
				break // an empty container is a complete value
			}
			if c == '{' {
				s.kinds |= 1 << s.depth
			} else {
				s.kinds &^= 1 << s.depth
			}
			s.depth++
			if c == '{' {
				var e *DecodeError
				if i, e = s.key(i); e != nil {
					return e
				}
			}
			continue value
		case '"':
			var msg string
			if i, msg = scanString(data, i+1); msg != "" {
				return s.fail(i, msg)
			}
		case 't', 'f', 'n':
			word := "null"
			if c == 't' {
				word = "true"
			} else if c == 'f' {
				word = "false"
			}
			var ok bool
			if i, ok = literal(data, i, word); !ok {
				return s.fail(i, "invalid literal")
			}
		default:
			if c != '-' && (c < '0' || c > '9') {
				return s.fail(i, "unexpected "+describeByte(c)+" where a value should start")
			}
			var msg string
			if i, msg = scanNumber(data, i); msg != "" {
				return s.fail(i, msg)
			}
		}

		// The value that ended at i is complete: close containers until a
		// ',' asks for the next element.
		for {
			i = skipWS(data, i)
			if s.depth == 0 {
				if i != len(data) {
					return s.fail(i, "unexpected data after the JSON value")
				}
				return nil
			}
			if i >= len(data) {
				return s.fail(i, "unexpected end of input")
			}
			inObject := s.kinds&(1<<(s.depth-1)) != 0
			switch c := data[i]; {
			case c == ',':
				i = skipWS(data, i+1)
				if inObject {
					var e *DecodeError
					if i, e = s.key(i); e != nil {
						return e
					}
				}
				continue value
			case c == '}' && inObject, c == ']' && !inObject:
				s.depth--
				i++
			case inObject:
				return s.fail(i, "expected ',' or '}' after object member")
			default:
				return s.fail(i, "expected ',' or ']' after array element")
			}
		}
	}
}

// key scans `"name" :` at i and returns the offset of the member's value.
func (s *scanner) key(i int) (int, *DecodeError) {
	data := s.data
	if s.depth == 1 {
		s.keyStart = -1 // a bad key must not be blamed on the previous member
	}
	if i >= len(data) {
		return i, s.fail(i, "unexpected end of input")
	}
	if data[i] != '"' {
		return i, s.fail(i, "expected '\"' to start an object member name")
	}
	end, msg := scanString(data, i+1)
	if msg != "" {
		return end, s.fail(end, msg)
	}
	if s.depth == 1 {
		s.keyStart, s.keyEnd = i+1, end-1
	}
	i = skipWS(data, end)
	if i >= len(data) || data[i] != ':' {
		return i, s.fail(i, "expected ':' after object member name")
	}
	return skipWS(data, i+1), nil
}

// fail reports a syntax error at byte offset at.
func (s *scanner) fail(at int, msg string) *DecodeError {
	return s.blame("malformed JSON at byte " + strconv.Itoa(at) + ": " + msg)
}

// blame attributes msg to the top-level member being scanned, if any.
func (s *scanner) blame(msg string) *DecodeError {
	e := &DecodeError{Msg: msg}
	if s.keyStart >= 0 && s.depth >= 1 {
		e.Field = clip(string(s.data[s.keyStart:s.keyEnd]))
	}
	return e
}

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
// pass; UTF-8 is validated where a string is kept.
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
