package strictjson

import "strconv"

// depthWords is the size of the container stack, in 64-bit words.
const depthWords = 8

// scanner is one pass over one input. It is iterative: open containers are
// one bit per level (1 for an object, 0 for an array), so hostile nesting
// costs no stack.
type scanner struct {
	data     []byte
	opts     Options
	maxDepth int
	depth    int
	kinds    [depthWords]uint64 // bit i: the container at depth i+1 is an object

	values int

	// The raw name of the top-level member being scanned, for messages.
	keyStart, keyEnd int

	names *names   // Check with UniqueNames only
	b     *builder // Decode only: its maps find repeated names
}

func newScanner(data []byte, o Options) scanner {
	return scanner{data: data, opts: o, maxDepth: o.maxDepth(), keyStart: -1}
}

func (s *scanner) isObject(depth int) bool {
	return s.kinds[(depth-1)>>6]&(1<<((depth-1)&63)) != 0
}

func (s *scanner) push(object bool) {
	w, bit := s.depth>>6, uint64(1)<<(s.depth&63)
	if object {
		s.kinds[w] |= bit
	} else {
		s.kinds[w] &^= bit
	}
	s.depth++
}

func (s *scanner) run() *Error {
	data := s.data
	if e := precheck(data, s.opts); e != nil {
		return e
	}
	i := skipWS(data, 0)
	if i == len(data) {
		return &Error{Kind: Empty, Offset: i, Msg: "empty input"}
	}
value:
	for {
		// A value starts at i.
		if i >= len(data) {
			return s.fail(i, "unexpected end of input")
		}
		if s.values++; s.opts.MaxValues > 0 && s.values > s.opts.MaxValues {
			e := s.fail(i, "more than "+strconv.Itoa(s.opts.MaxValues)+" JSON values")
			e.Kind = TooManyValues
			return e
		}
		switch c := data[i]; c {
		case '{', '[':
			if s.depth == s.maxDepth {
				e := s.fail(i, "nesting deeper than "+strconv.Itoa(s.maxDepth)+" levels")
				e.Kind = TooDeep
				return e
			}
			closer := byte(']')
			if c == '{' {
				closer = '}'
			}
			if s.b != nil {
				s.b.open(c == '{')
			}
			i = skipWS(data, i+1)
			if i < len(data) && data[i] == closer {
				i++
				if s.b != nil {
					s.b.close()
				}
				break // an empty container is a complete value
			}
			s.push(c == '{')
			if c == '{' {
				if s.names != nil {
					s.names.open()
				}
				var e *Error
				if i, e = s.key(i); e != nil {
					return e
				}
			}
			continue value
		case '"':
			start := i + 1
			var msg string
			if i, msg = scanString(data, start); msg != "" {
				return s.fail(i, msg)
			}
			if s.b != nil {
				s.b.str(data[start : i-1])
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
			if s.b != nil {
				s.b.literal(c)
			}
		default:
			if c != '-' && (c < '0' || c > '9') {
				return s.fail(i, "unexpected "+describeByte(c)+" where a value should start")
			}
			start := i
			var msg string
			if i, msg = scanNumber(data, i); msg != "" {
				return s.fail(i, msg)
			}
			if s.b != nil {
				s.b.number(data[start:i])
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
			inObject := s.isObject(s.depth)
			switch c := data[i]; {
			case c == ',':
				i = skipWS(data, i+1)
				if inObject {
					var e *Error
					if i, e = s.key(i); e != nil {
						return e
					}
				}
				continue value
			case c == '}' && inObject, c == ']' && !inObject:
				s.depth--
				i++
				if inObject && s.names != nil {
					s.names.close()
				}
				if s.b != nil {
					s.b.close()
				}
			case inObject:
				return s.fail(i, "expected ',' or '}' after object member")
			default:
				return s.fail(i, "expected ',' or ']' after array element")
			}
		}
	}
}

// key scans `"name" :` at i and returns the offset of the member's value.
func (s *scanner) key(i int) (int, *Error) {
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
	name := data[i+1 : end-1]
	var dup string
	repeated := false
	switch {
	case s.b != nil:
		dup, repeated = s.b.key(name, s.opts.UniqueNames)
	case s.names != nil:
		var unq []byte
		if unq, repeated = s.names.add(name); repeated {
			dup = string(unq)
		}
	}
	if repeated {
		e := s.fail(i, "duplicate member name")
		e.Kind, e.Name = DuplicateName, dup
		return i, e
	}
	i = skipWS(data, end)
	if i >= len(data) || data[i] != ':' {
		return i, s.fail(i, "expected ':' after object member name")
	}
	return skipWS(data, i+1), nil
}

// fail reports a syntax error at byte offset at, attributed to the
// top-level member being scanned, if any.
func (s *scanner) fail(at int, msg string) *Error {
	e := &Error{Kind: Syntax, Offset: at, Msg: msg}
	if s.keyStart >= 0 && s.depth >= 1 {
		e.Member = string(s.data[s.keyStart:s.keyEnd])
	}
	return e
}
